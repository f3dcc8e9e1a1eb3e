//! The crate's one error type.
//!
//! Everything that can go wrong while serving an interceptor is an
//! [`Error`]; it becomes a [`tonic::Status`] only at the gRPC edge, in
//! [`Error::to_status`], so that the mapping the host relies on (§6.3:
//! every error status is a fail-closed deny) lives in one place.

use std::io;
use std::net::SocketAddr;

use hookwire::InvalidContext;
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
    #[error("{}", hookwire::listen::BindFailure::new(.addr, .source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        source: io::Error,
    },
    /// The Unix socket was refused or could not be bound (a loose
    /// directory, a live socket at the path, a path too long).
    #[error(transparent)]
    UnixSocket(#[from] hookwire_edge::Error),
    /// The bound listener could not report its address.
    #[error("cannot read the listener's local address: {0}")]
    LocalAddr(#[source] io::Error),
    /// The gRPC transport failed while serving.
    #[error("gRPC transport failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The task running a spawned server panicked or was cancelled.
    #[error("server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// [`Server::client_ca`](crate::Server::client_ca) was called before
    /// [`Server::tls`](crate::Server::tls): client certificates need TLS.
    #[error("client certificates need TLS: call tls(cert, key) before client_ca(ca)")]
    ClientCaWithoutTls,
}

impl Error {
    /// The gRPC status a client sees for this error. An invalid context is
    /// the caller's fault (`INVALID_ARGUMENT`); everything else is
    /// `INTERNAL`, which the host turns into `host_error:interceptor_failed`.
    pub fn to_status(&self) -> Status {
        match self {
            Self::InvalidContext(_) => Status::invalid_argument(self.to_string()),
            Self::Panicked => Status::internal("interceptor panicked"),
            Self::HookFailed => Status::internal("interceptor failed"),
            Self::Bind { .. }
            | Self::UnixSocket(_)
            | Self::LocalAddr(_)
            | Self::Transport(_)
            | Self::Task(_)
            | Self::ClientCaWithoutTls => Status::internal("interceptor server error"),
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        e.to_status()
    }
}
