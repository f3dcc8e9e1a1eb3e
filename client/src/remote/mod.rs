//! Remote interceptors: an interceptor service reached over gRPC.
//!
//! The channel connects lazily, so a host builds even when a service is not
//! up yet; an unreachable service is a failed call, i.e.
//! `host_error:interceptor_failed`, never a build error. Each call carries
//! the binding's timeout both as a local deadline (the call future is
//! dropped, which cancels the HTTP/2 stream) and as the `grpc-timeout`
//! header, so a well-behaved service stops working on it too.
//!
//! A response is decoded and validated once, by the wire conversion
//! (`InterceptorResponse::try_from`, which applies
//! [`InterceptorResponse::validate`](hookwire::InterceptorResponse::validate));
//! [`TlsConfig`] says how an `https://` endpoint is verified and, with a
//! [`ClientIdentity`], how the host proves who it is to a service requiring
//! mutual TLS.
//!
//! | module | role |
//! | --- | --- |
//! | `endpoint` | one replica: its lazily connecting channel, the point call, `Describe` and health |
//! | `tls` | how an `https://` endpoint is verified and the client certificate presented |
//! | `metadata` | the static gRPC metadata a binding sends, checked once |

mod endpoint;
mod metadata;
mod tls;

use hookwire::{HostError, InvalidVerdict};

pub(crate) use endpoint::RemoteInterceptor;
pub(crate) use metadata::metadata_entry;
pub use tls::{ClientIdentity, TlsConfig};
/// The approval stream reaches its service with the same TLS settings.
pub(crate) use tls::client_tls;

/// What [`Host::health_remotes`](crate::Host::health_remotes) reports for
/// a reachable service that does not serve `grpc.health.v1` (it answered
/// `UNIMPLEMENTED`): health is recommended, `Describe` is the contract.
pub const HEALTH_UNIMPLEMENTED: &str = "UNIMPLEMENTED";

/// How a call to an interceptor failed, remote or in-process; each maps to
/// one reserved reason (§6.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// Transport error or error status; or an in-process interceptor that
    /// panicked or returned an error.
    Failed(String),
    /// The deadline passed.
    TimedOut,
    /// The response failed §5 / §5.5 validation.
    Invalid(InvalidVerdict),
}

impl CallFailure {
    pub(crate) fn host_error(&self) -> HostError {
        match self {
            Self::Failed(_) => HostError::InterceptorFailed,
            Self::TimedOut => HostError::InterceptorTimeout,
            Self::Invalid(_) => HostError::VerdictInvalid,
        }
    }
}
