//! The crate's one error type.
//!
//! Everything that can go wrong in the approval service is an [`Error`]:
//! a refused decision, a duplicate request, a failed store, an unusable
//! access list or certificate, a server that cannot run. It becomes a
//! [`tonic::Status`] only at the gRPC edge, in [`Error::to_status`].
//! Binding, the gRPC transport and the serving tasks fail as the
//! interceptor SDK's servers do; those failures are the SDK's
//! [`hookwire_server::Error`], wrapped in [`Error::Server`].
//!
//! [`Refusal`], why the queue turned a decision away, lives here too: it
//! is part of [`Error::Refused`], and keeping it here lets every module
//! depend on `error` without `error` depending back on the queue.

use std::io;

use hookwire::wire::InvalidApprovalRequest;
use tonic::Status;

/// Why an approval request, a decision or the service failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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
    /// The approval web page could not be served.
    #[error("approval web server failed: {0}")]
    Web(#[source] io::Error),
    /// An approval service's access configuration is invalid. The message
    /// names the principal and the rule, never a token or hash.
    #[error("approval access configuration: {0}")]
    AccessConfig(String),
    /// An approval service's certificate, key or client authority is
    /// unusable. The message never quotes the key.
    #[error("approval service TLS: {0}")]
    Tls(String),
    /// The notification channels of an approval service are misconfigured
    /// (a missing secret file, a bad URL, an unknown approver). The message
    /// names the channel and the setting, never a URL, secret or token.
    #[error("approval notifications: {0}")]
    NotifyConfig(String),
    /// The operating system's random generator failed.
    #[error("random generator failed: {0}")]
    Random(String),
    /// The gRPC server failed as an interceptor service's would: a port
    /// that cannot be bound, the transport, the serving task.
    #[error(transparent)]
    Server(#[from] hookwire_server::Error),
    /// The service's settings were refused before anything started
    /// (tokens in plaintext beyond loopback, notifications with no page to
    /// link to). Never quotes a token, hash or key.
    #[error("approvals: {0}")]
    InvalidSettings(String),
}

impl Error {
    /// The gRPC status a client sees for this error: a request that does
    /// not decode is the caller's fault (`INVALID_ARGUMENT`), a refused
    /// decision `FAILED_PRECONDITION`, a duplicate id `ALREADY_EXISTS`, a
    /// failed store `UNAVAILABLE`; everything else is `INTERNAL`.
    pub fn to_status(&self) -> Status {
        match self {
            Self::InvalidApprovalRequest(_) => Status::invalid_argument(self.to_string()),
            Self::Refused { .. } => Status::failed_precondition(self.to_string()),
            Self::DuplicateRequest(_) => Status::already_exists(self.to_string()),
            Self::Store(_) => Status::unavailable("approval store unavailable"),
            Self::Server(e) => e.to_status(),
            Self::Web(_)
            | Self::AccessConfig(_)
            | Self::NotifyConfig(_)
            | Self::Tls(_)
            | Self::Random(_)
            | Self::InvalidSettings(_) => Status::internal("interceptor server error"),
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        e.to_status()
    }
}

impl From<tonic::transport::Error> for Error {
    fn from(e: tonic::transport::Error) -> Self {
        Self::Server(e.into())
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Self {
        Self::Server(e.into())
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
