//! The crate's one error type.
//!
//! Everything that can go wrong while serving an interceptor is an
//! [`Error`]; it becomes a [`tonic::Status`] only at the gRPC edge, in
//! [`Error::to_status`], so that the mapping the host relies on (§6.3:
//! every error status is a fail-closed deny) lives in one place.

use std::io;
use std::net::SocketAddr;

use hookwire::InvalidContext;
use hookwire::wire::InvalidApprovalRequest;
use tonic::Status;

use crate::approval::Refusal;

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
    /// A host sent an approval request that does not decode.
    #[error(transparent)]
    InvalidApprovalRequest(#[from] InvalidApprovalRequest),
    /// The approval web page could not be served.
    #[error("approval web server failed: {0}")]
    Web(#[source] io::Error),
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
            Self::Refused { .. } => Status::failed_precondition(self.to_string()),
            Self::DuplicateRequest(_) => Status::already_exists(self.to_string()),
            Self::Bind { .. }
            | Self::LocalAddr(_)
            | Self::Transport(_)
            | Self::Task(_)
            | Self::Web(_) => Status::internal("interceptor server error"),
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        e.to_status()
    }
}
