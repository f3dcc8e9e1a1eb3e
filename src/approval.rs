//! The approval seam's messages (AGENT-HOOKS-0.1 §9): what a host asks a
//! resolver when a profile offers it a liftable deny, what comes back, and
//! the normative order in which a host validates the answer; and both
//! messages as they travel on an approval stream, with their ids.

use std::time::Duration;

use crate::context::AgentContext;
use crate::point::InterceptionPoint;
use crate::reason::HostError;
use crate::verdict::{Decision, Verdict};

/// What the host hands the approval resolver (§9).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// Identity of `context` as presented (after redaction); `None` under the
    /// `null` identity provider.
    pub context_identity: Option<String>,
    /// Where the emission is.
    pub interception_point: InterceptionPoint,
    /// The liftable deny being offered (possibly host-synthesized).
    pub verdict: Verdict,
    /// The context, after any folded transforms and after the redactor.
    pub context: AgentContext,
}

/// The resolver's answer kind (§9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalOutcome {
    /// Lift the deny with the carried permit verdict.
    Approve,
    /// Keep a deny (the carried one stands).
    Reject,
    /// The resolver could not decide: `host_error:approval_unresolved`.
    Unresolved,
}

impl ApprovalOutcome {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
            Self::Unresolved => "unresolved",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Self::Approve),
            "reject" => Some(Self::Reject),
            "unresolved" => Some(Self::Unresolved),
            _ => None,
        }
    }
}

/// The resolver's answer (§9). The outcome is optional so that a malformed
/// answer received from elsewhere can still be represented and refused in
/// the normative order.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalResolution {
    /// `approve`, `reject` or `unresolved`; `None` when the answer named none.
    pub outcome: Option<ApprovalOutcome>,
    /// Must echo the request's identity byte for byte.
    pub context_identity: Option<String>,
    /// Present iff the outcome is not `unresolved`.
    pub verdict: Option<Verdict>,
}

impl ApprovalResolution {
    /// Approve with a permit verdict, echoing `request`'s identity.
    pub fn approve(request: &ApprovalRequest, verdict: Verdict) -> Self {
        Self {
            outcome: Some(ApprovalOutcome::Approve),
            context_identity: request.context_identity.clone(),
            verdict: Some(verdict),
        }
    }

    /// Reject with a deny verdict, echoing `request`'s identity.
    pub fn reject(request: &ApprovalRequest, verdict: Verdict) -> Self {
        Self {
            outcome: Some(ApprovalOutcome::Reject),
            context_identity: request.context_identity.clone(),
            verdict: Some(verdict),
        }
    }

    /// Could not decide, echoing `request`'s identity.
    pub fn unresolved(request: &ApprovalRequest) -> Self {
        Self {
            outcome: Some(ApprovalOutcome::Unresolved),
            context_identity: request.context_identity.clone(),
            verdict: None,
        }
    }
}

/// An [`ApprovalRequest`] as it travels on a stream: with the id that its
/// resolution will carry back, and the time left to answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRequest {
    /// The sender's id for the request.
    pub request_id: String,
    /// The §9 request.
    pub request: ApprovalRequest,
    /// Time left when the message was sent (`deadline_ms`).
    pub deadline: Duration,
}

/// An [`ApprovalResolution`] as it travels on a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResolution {
    /// The id of the request it answers.
    pub request_id: String,
    /// Who decided (empty when unknown). Never affects enforcement.
    pub approver: String,
    /// The §9 resolution, exactly as sent.
    pub resolution: ApprovalResolution,
}

/// A validated resolution: either a permit that lifts the deny, or the deny
/// that stands (the resolver's own, or a reserved one).
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The permit verdict substitutes for the consulted deny (§7.6).
    Lifted(Verdict),
    /// The deny that stands.
    Stands(Verdict),
}

/// Validates a resolution against its request in the §9 normative order:
/// echo rule, outcome/verdict presence, §5 validity, outcome/decision
/// consistency; then maps `unresolved` to `host_error:approval_unresolved`.
pub fn validate_resolution(
    request_identity: Option<&str>,
    resolution: &ApprovalResolution,
) -> Resolved {
    let stands = |e: HostError| Resolved::Stands(Verdict::host_error(e));
    if resolution.context_identity.as_deref() != request_identity {
        return stands(HostError::ApprovalIdentityMismatch);
    }
    let (outcome, verdict) = match (resolution.outcome, &resolution.verdict) {
        (Some(ApprovalOutcome::Unresolved), None) => {
            return stands(HostError::ApprovalUnresolved);
        }
        (Some(o @ (ApprovalOutcome::Approve | ApprovalOutcome::Reject)), Some(v)) => (o, v),
        _ => return stands(HostError::ApprovalResolverFailed),
    };
    if verdict.validate().is_err() {
        return stands(HostError::VerdictInvalid);
    }
    match (outcome, verdict.decision) {
        (ApprovalOutcome::Approve, Decision::Allow | Decision::Transform) => {
            Resolved::Lifted(verdict.clone())
        }
        (ApprovalOutcome::Reject, Decision::Deny) => Resolved::Stands(verdict.clone()),
        _ => stands(HostError::VerdictInvalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        outcome: Option<ApprovalOutcome>,
        id: Option<&str>,
        verdict: Option<Verdict>,
    ) -> ApprovalResolution {
        ApprovalResolution {
            outcome,
            context_identity: id.map(str::to_owned),
            verdict,
        }
    }

    fn reason(r: Resolved) -> String {
        match r {
            Resolved::Lifted(v) | Resolved::Stands(v) => v.reason.unwrap_or_default(),
        }
    }

    #[test]
    fn validation_follows_the_normative_order() {
        use ApprovalOutcome::*;
        let id = Some("sha256:x");
        // Echo first, even when everything else is wrong too.
        let r = res(None, Some("sha256:y"), None);
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:approval_identity_mismatch"
        );
        // null echoes as null only.
        assert_eq!(
            reason(validate_resolution(
                None,
                &res(Some(Unresolved), Some(""), None)
            )),
            "host_error:approval_identity_mismatch"
        );
        // Presence second.
        let r = res(Some(Approve), id, None);
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:approval_resolver_failed"
        );
        let r = res(Some(Unresolved), id, Some(Verdict::allow()));
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:approval_resolver_failed"
        );
        // §5 validity third, consistency fourth.
        let mut broken = Verdict::allow();
        broken.decision = Decision::Transform;
        let r = res(Some(Reject), id, Some(broken));
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:verdict_invalid"
        );
        let r = res(Some(Approve), id, Some(Verdict::deny("x")));
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:verdict_invalid"
        );
        // The happy paths.
        let r = res(Some(Unresolved), id, None);
        assert_eq!(
            reason(validate_resolution(id, &r)),
            "host_error:approval_unresolved"
        );
        let r = res(Some(Approve), id, Some(Verdict::allow()));
        assert_eq!(
            validate_resolution(id, &r),
            Resolved::Lifted(Verdict::allow())
        );
        let r = res(Some(Reject), id, Some(Verdict::deny("no")));
        assert_eq!(
            validate_resolution(id, &r),
            Resolved::Stands(Verdict::deny("no"))
        );
    }
}
