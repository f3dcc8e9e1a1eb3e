//! The crate's one error type.
//!
//! Everything that can go wrong while serving an interceptor is an
//! [`Error`]; it becomes a [`tonic::Status`] only at the gRPC edge, in
//! [`Error::to_status`], so that the mapping the host relies on (§6.3:
//! every error status is a fail-closed deny) lives in one place.
//!
//! [`Refusal`], why an approval queue turned a decision away, lives here
//! too: it is part of [`Error::Refused`], and keeping it here lets every
//! module depend on `error` without `error` depending back on `approval`.

use std::io;
use std::net::SocketAddr;

use hookwire::InvalidContext;
use hookwire::wire::InvalidApprovalRequest;
use tonic::Status;

/// Why a request could not be answered or a server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request did not decode into a valid agent context. The message
    /// names the member and the rule, never the value.
    #[error("invalid agent context: {0}")]
    InvalidContext(#[from] InvalidContext),
    /// A hook (or the manifest) panicked while answering.
    #[error("interceptor panicked")]
    Panicked,
    /// A hook returned an error instead of a response. What the error says
    /// is logged on the server, never sent to the host.
    #[error("interceptor failed")]
    HookFailed,
    /// The listening socket could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        source: io::Error,
    },
    /// The bound listener could not report its address.
    #[error("cannot read the listener's local address: {0}")]
    LocalAddr(#[source] io::Error),
    /// The gRPC transport failed while serving.
    #[error("gRPC transport failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The task running a spawned server panicked or was cancelled.
    #[error("server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// A decision or notice named an approval request that is not pending.
    #[error("approval {request_id:?}: {refusal}")]
    Refused {
        /// The queue's id of the request.
        request_id: String,
        /// Why it was refused.
        refusal: Refusal,
    },
    /// A host sent a request under an id it already has pending.
    #[error("approval request id {0:?} is already pending on this stream")]
    DuplicateRequest(String),
    /// The shared store behind an approval queue (PostgreSQL) failed or
    /// could not be reached. The message never carries credentials.
    #[error("approval store failed: {0}")]
    Store(#[source] hookwire::BoxError),
    /// A host sent an approval request that does not decode.
    #[error(transparent)]
    InvalidApprovalRequest(#[from] InvalidApprovalRequest),
    /// [`Server::client_ca`](crate::Server::client_ca) was called before
    /// [`Server::tls`](crate::Server::tls): client certificates need TLS.
    #[error("client certificates need TLS: call tls(cert, key) before client_ca(ca)")]
    ClientCaWithoutTls,
    /// The approval web page could not be served.
    #[error("approval web server failed: {0}")]
    Web(#[source] io::Error),
    /// The `/metrics` endpoint could not be served.
    #[error("metrics endpoint failed: {0}")]
    Metrics(#[source] io::Error),
    /// An approval service's access configuration is invalid. The message
    /// names the principal and the rule, never a token or hash.
    #[error("approval access configuration: {0}")]
    AccessConfig(String),
    /// An approval service's certificate, key or client authority is
    /// unusable. The message never quotes the key.
    #[error("approval service TLS: {0}")]
    Tls(String),
    /// The operating system's random generator failed.
    #[error("random generator failed: {0}")]
    Random(String),
}

impl Error {
    /// The gRPC status a client sees for this error. An invalid context is
    /// the caller's fault (`INVALID_ARGUMENT`); everything else is
    /// `INTERNAL`, which the host turns into `host_error:interceptor_failed`.
    pub fn to_status(&self) -> Status {
        match self {
            Self::InvalidContext(_) | Self::InvalidApprovalRequest(_) => {
                Status::invalid_argument(self.to_string())
            }
            Self::Panicked => Status::internal("interceptor panicked"),
            Self::HookFailed => Status::internal("interceptor failed"),
            Self::Refused { .. } => Status::failed_precondition(self.to_string()),
            Self::DuplicateRequest(_) => Status::already_exists(self.to_string()),
            Self::Store(_) => Status::unavailable("approval store unavailable"),
            Self::Bind { .. }
            | Self::LocalAddr(_)
            | Self::Transport(_)
            | Self::Task(_)
            | Self::ClientCaWithoutTls
            | Self::Web(_)
            | Self::Metrics(_)
            | Self::AccessConfig(_)
            | Self::Tls(_)
            | Self::Random(_) => Status::internal("interceptor server error"),
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        e.to_status()
    }
}

/// Why an approval queue refused a decision or a notice
/// ([`Error::Refused`]); the gRPC and web front ends report it by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// No such request was ever pending here (or it was forgotten).
    UnknownRequest,
    /// Someone decided first.
    AlreadyResolved,
    /// Its deadline had passed.
    Expired,
    /// It was withdrawn: cancelled, host gone, or failed.
    Withdrawn,
}

impl Refusal {
    /// A short lowercase name, for logs and the web page.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnknownRequest => "unknown_request",
            Self::AlreadyResolved => "already_resolved",
            Self::Expired => "expired",
            Self::Withdrawn => "withdrawn",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
