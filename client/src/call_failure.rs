//! How one call to a binding's interceptor failed, in-process or remote:
//! the one vocabulary the dispatch, the remote transports and the metrics
//! share, each failure naming its reserved reason (§6.3).

use hookwire::{HostError, InvalidVerdict};

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
    /// The reserved reason the binding's slot is denied with.
    pub(crate) fn host_error(&self) -> HostError {
        match self {
            Self::Failed(_) => HostError::InterceptorFailed,
            Self::TimedOut => HostError::InterceptorTimeout,
            Self::Invalid(_) => HostError::VerdictInvalid,
        }
    }
}
