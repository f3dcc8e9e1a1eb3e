//! The reserved `host_error:*` reasons (AGENT-HOOKS-0.1 §11): the only
//! reasons a host uses when it synthesizes a deny, and the only reasons an
//! interceptor may never use.

use std::fmt;

/// Prefix of every reserved reason; an interceptor verdict whose reason starts
/// with it is invalid (§5).
pub const HOST_ERROR_PREFIX: &str = "host_error:";

/// Why the host itself denied an emission (§11). Each variant is one reserved
/// reason string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostError {
    /// The context could not be built, failed the §4 envelope, exceeded a
    /// resource bound, or its values are outside the JSON domain (§4.4, §12.3).
    ContextInvalid,
    /// An interceptor failed: transport error, error status, crash (§6.3).
    InterceptorFailed,
    /// An interceptor exceeded its timeout (§6.3).
    InterceptorTimeout,
    /// An interceptor's verdict failed §5 validation.
    VerdictInvalid,
    /// A transform path did not resolve or could not be applied (§5.2).
    TransformInvalid,
    /// A transform not rooted at `$target`, or at a point that forbids it (§4.3).
    TransformTargetForbidden,
    /// Two or more transforms against one snapshot in `parallel/strictest` (§7.5).
    TransformConflict,
    /// A non-unanimous outcome under `parallel/unanimous` (§7.5).
    CompositionDisagreement,
    /// The approval resolver failed, timed out, or its stream dropped (§9).
    ApprovalResolverFailed,
    /// The approval resolver could not decide (§9).
    ApprovalUnresolved,
    /// The resolution did not echo the request's identity (§9).
    ApprovalIdentityMismatch,
    /// The host adapter cannot emit this point (§11).
    AdapterUnsupported,
    /// An enforce-mode emission with no interceptor bound (§7).
    NoInterceptor,
    /// The host cannot satisfy §12 for a streaming response.
    StreamingUnsupported,
}

impl HostError {
    /// Every reserved reason, in the order of the §11 table.
    pub const ALL: [HostError; 14] = [
        Self::ContextInvalid,
        Self::InterceptorFailed,
        Self::InterceptorTimeout,
        Self::VerdictInvalid,
        Self::TransformInvalid,
        Self::TransformTargetForbidden,
        Self::TransformConflict,
        Self::CompositionDisagreement,
        Self::ApprovalResolverFailed,
        Self::ApprovalUnresolved,
        Self::ApprovalIdentityMismatch,
        Self::AdapterUnsupported,
        Self::NoInterceptor,
        Self::StreamingUnsupported,
    ];

    /// The reserved reason string, e.g. `host_error:interceptor_timeout`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ContextInvalid => "host_error:context_invalid",
            Self::InterceptorFailed => "host_error:interceptor_failed",
            Self::InterceptorTimeout => "host_error:interceptor_timeout",
            Self::VerdictInvalid => "host_error:verdict_invalid",
            Self::TransformInvalid => "host_error:transform_invalid",
            Self::TransformTargetForbidden => "host_error:transform_target_forbidden",
            Self::TransformConflict => "host_error:transform_conflict",
            Self::CompositionDisagreement => "host_error:composition_disagreement",
            Self::ApprovalResolverFailed => "host_error:approval_resolver_failed",
            Self::ApprovalUnresolved => "host_error:approval_unresolved",
            Self::ApprovalIdentityMismatch => "host_error:approval_identity_mismatch",
            Self::AdapterUnsupported => "host_error:adapter_unsupported",
            Self::NoInterceptor => "host_error:no_interceptor",
            Self::StreamingUnsupported => "host_error:streaming_unsupported",
        }
    }

    /// Parses a reserved reason string back into its variant.
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == reason)
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_prefixed_and_parses_back() {
        for e in HostError::ALL {
            assert!(e.as_str().starts_with(HOST_ERROR_PREFIX));
            assert_eq!(HostError::from_reason(e.as_str()), Some(e));
        }
        assert_eq!(HostError::from_reason("host_error:other"), None);
    }
}
