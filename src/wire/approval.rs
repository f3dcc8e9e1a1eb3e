//! The approval seam's messages (§9) ⇄ `proto/hookwire/v1/approval.proto`.
//!
//! Both directions are carriers, not judges:
//!
//! - a request is checked only for what a service needs to show it to an
//!   approver (a known point, a liftable deny, a context that passes the §4
//!   envelope for that point); the offered verdict is decoded without §5
//!   validation, because a host may offer a deny it synthesized itself,
//!   whose reason is a reserved `host_error:*`;
//! - a resolution is never refused: whatever an approver sent reaches the
//!   host's §9 validation ([`crate::approval::validate_resolution`]) as it
//!   was sent, so that the host reports the reason the normative order
//!   names. An unspecified outcome is `outcome: None`; an absent identity
//!   is `None` (JSON `null`), distinct from the empty string.
//!
//! The one thing the domain cannot hold is a verdict the wire cannot
//! represent at all (no decision, or JSON text that does not parse
//! exactly). Decoding a resolution carries such a verdict as a deny
//! with the reserved reason `host_error:verdict_invalid`, which §5 refuses, so §9 step 3 reports
//! `host_error:verdict_invalid` — after the echo rule and the presence
//! check have seen the real identity and outcome.

use std::time::Duration;

use crate::approval::{
    ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamRequest, StreamResolution,
};
use crate::context::{AgentContext, InvalidContext};
use crate::json;
use crate::pb;
use crate::point::InterceptionPoint;
use crate::reason::HostError;
use crate::verdict::{InvalidVerdict, Verdict};
use crate::wire::verdict::verdict_from_pb_unchecked;

/// Why an approval request from the wire was refused. Messages name the
/// member and the rule, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidApprovalRequest {
    /// `request_id` is empty.
    #[error("approval request: request_id is empty")]
    EmptyRequestId,
    /// `interception_point` is unspecified or unknown.
    #[error("approval request: interception_point is unspecified or unknown")]
    Point,
    /// `verdict` is absent.
    #[error("approval request: verdict is missing")]
    MissingVerdict,
    /// `verdict` cannot be represented (no decision, malformed JSON).
    #[error("approval request: {0}")]
    Verdict(InvalidVerdict),
    /// The offered verdict is not a liftable deny (§5.1, §9).
    #[error("approval request: the offered verdict is not a deny with an approval block")]
    NotLiftable,
    /// `context` is absent.
    #[error("approval request: context is missing")]
    MissingContext,
    /// `context` does not pass the §4 envelope.
    #[error("approval request: {0}")]
    Context(InvalidContext),
    /// `context.interception_point` differs from the request's.
    #[error("approval request: context is for another interception point")]
    PointMismatch,
}

/// Encodes a request. The context travels as its full spec JSON (with
/// `target`); `deadline` is rounded down to whole milliseconds.
impl From<&StreamRequest> for pb::ApprovalRequest {
    fn from(r: &StreamRequest) -> Self {
        let request = &r.request;
        Self {
            request_id: r.request_id.clone(),
            context_identity: request.context_identity.clone(),
            interception_point: pb::InterceptionPoint::from(request.interception_point) as i32,
            verdict: Some(pb::Verdict::from(&request.verdict)),
            context: Some(pb::JsonValue {
                json: json::encode(&request.context.to_json()),
            }),
            deadline_ms: u64::try_from(r.deadline.as_millis()).unwrap_or(u64::MAX),
            // Set by the host's stream client, not part of the §9 request.
            trace_context: Default::default(),
        }
    }
}

/// Decodes a request: see the module docs for what is checked.
impl TryFrom<pb::ApprovalRequest> for StreamRequest {
    type Error = InvalidApprovalRequest;
    fn try_from(m: pb::ApprovalRequest) -> Result<Self, Self::Error> {
        request_from_pb(m)
    }
}

fn request_from_pb(m: pb::ApprovalRequest) -> Result<StreamRequest, InvalidApprovalRequest> {
    if m.request_id.is_empty() {
        return Err(InvalidApprovalRequest::EmptyRequestId);
    }
    let point = pb::InterceptionPoint::try_from(m.interception_point)
        .ok()
        .and_then(|p| InterceptionPoint::try_from(p).ok())
        .ok_or(InvalidApprovalRequest::Point)?;
    let verdict =
        verdict_from_pb_unchecked(m.verdict.ok_or(InvalidApprovalRequest::MissingVerdict)?)
            .map_err(InvalidApprovalRequest::Verdict)?;
    if !verdict.is_liftable() {
        return Err(InvalidApprovalRequest::NotLiftable);
    }
    let text = m.context.ok_or(InvalidApprovalRequest::MissingContext)?;
    let value = json::decode(&text.json).map_err(|e| {
        InvalidApprovalRequest::Context(InvalidContext::Json {
            member: "context".into(),
            problem: e.to_string(),
        })
    })?;
    let context = AgentContext::from_json(value).map_err(InvalidApprovalRequest::Context)?;
    if context.point() != point {
        return Err(InvalidApprovalRequest::PointMismatch);
    }
    Ok(StreamRequest {
        request_id: m.request_id,
        request: ApprovalRequest {
            context_identity: m.context_identity,
            interception_point: point,
            verdict,
            context,
        },
        deadline: Duration::from_millis(m.deadline_ms),
    })
}

/// Encodes a resolution exactly as given: no outcome is
/// `APPROVAL_OUTCOME_UNSPECIFIED`, no identity is an absent field.
impl From<&StreamResolution> for pb::ApprovalResolution {
    fn from(r: &StreamResolution) -> Self {
        Self {
            request_id: r.request_id.clone(),
            outcome: pb::ApprovalOutcome::from(r.resolution.outcome) as i32,
            context_identity: r.resolution.context_identity.clone(),
            verdict: r.resolution.verdict.as_ref().map(pb::Verdict::from),
            approver: r.approver.clone(),
        }
    }
}

/// Decodes a resolution without refusing anything (see the module docs).
impl From<pb::ApprovalResolution> for StreamResolution {
    fn from(m: pb::ApprovalResolution) -> Self {
        Self {
            request_id: m.request_id,
            approver: m.approver,
            resolution: ApprovalResolution {
                outcome: outcome_from_pb(m.outcome),
                context_identity: m.context_identity,
                verdict: m.verdict.map(|v| {
                    verdict_from_pb_unchecked(v).unwrap_or_else(|_| unrepresentable_verdict())
                }),
            },
        }
    }
}

/// The stand-in for a resolution's verdict that the wire could not
/// represent: a deny whose reason, `host_error:verdict_invalid`, is
/// reserved, so §5 validation refuses it and the host reports exactly
/// that reason at §9 step 3.
fn unrepresentable_verdict() -> Verdict {
    Verdict::host_error(HostError::VerdictInvalid)
}

/// The wire outcome of an optional domain outcome: no outcome is
/// `APPROVAL_OUTCOME_UNSPECIFIED`.
impl From<Option<ApprovalOutcome>> for pb::ApprovalOutcome {
    fn from(outcome: Option<ApprovalOutcome>) -> Self {
        match outcome {
            None => Self::Unspecified,
            Some(ApprovalOutcome::Approve) => Self::Approve,
            Some(ApprovalOutcome::Reject) => Self::Reject,
            Some(ApprovalOutcome::Unresolved) => Self::Unresolved,
        }
    }
}

/// The domain outcome of a wire outcome: `None` for `UNSPECIFIED`.
impl From<pb::ApprovalOutcome> for Option<ApprovalOutcome> {
    fn from(outcome: pb::ApprovalOutcome) -> Self {
        match outcome {
            pb::ApprovalOutcome::Approve => Some(ApprovalOutcome::Approve),
            pb::ApprovalOutcome::Reject => Some(ApprovalOutcome::Reject),
            pb::ApprovalOutcome::Unresolved => Some(ApprovalOutcome::Unresolved),
            pb::ApprovalOutcome::Unspecified => None,
        }
    }
}

/// The domain outcome of a raw wire outcome: `None` also for values this
/// version does not know.
fn outcome_from_pb(outcome: i32) -> Option<ApprovalOutcome> {
    pb::ApprovalOutcome::try_from(outcome)
        .ok()
        .and_then(Option::from)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::approval::{Resolved, validate_resolution};
    use crate::verdict::Decision;

    fn encode_request(
        id: &str,
        request: &ApprovalRequest,
        deadline: Duration,
    ) -> pb::ApprovalRequest {
        pb::ApprovalRequest::from(&StreamRequest {
            request_id: id.into(),
            request: request.clone(),
            deadline,
        })
    }

    fn encode_resolution(
        id: &str,
        r: &ApprovalResolution,
        approver: &str,
    ) -> pb::ApprovalResolution {
        pb::ApprovalResolution::from(&StreamResolution {
            request_id: id.into(),
            approver: approver.into(),
            resolution: r.clone(),
        })
    }

    fn context() -> AgentContext {
        AgentContext::from_json(json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "pre_tool_call",
            "timestamp": "2026-01-01T00:00:00Z",
            "sequence": 3,
            "agent": {"id": "a", "framework": "hookwire"},
            "session": {"id": "s-1"},
            "tool_call": {"id": "tc-1", "name": "wire_transfer", "args": {"amount": 100, "big": 18446744073709551615u64, "f": 1.0}},
            "target": {"amount": 100, "big": 18446744073709551615u64, "f": 1.0}
        }))
        .unwrap()
    }

    fn request(identity: Option<&str>, verdict: Verdict) -> ApprovalRequest {
        ApprovalRequest {
            context_identity: identity.map(str::to_owned),
            interception_point: InterceptionPoint::PreToolCall,
            verdict,
            context: context(),
        }
    }

    #[test]
    fn requests_round_trip_exactly() {
        for identity in [Some("sha256:ab"), Some(""), None] {
            let r = request(
                identity,
                Verdict::escalate("needs_review").with_message("big"),
            );
            let m = encode_request("req-1", &r, Duration::from_millis(1500));
            assert_eq!(m.deadline_ms, 1500);
            let back = StreamRequest::try_from(m).unwrap();
            assert_eq!(back.request_id, "req-1");
            assert_eq!(back.request, r);
            assert_eq!(back.deadline, Duration::from_millis(1500));
        }
    }

    #[test]
    fn host_synthesized_liftable_denies_are_carried() {
        let synthesized =
            Verdict::host_error(HostError::CompositionDisagreement).with_approval(Map::new());
        let r = request(None, synthesized);
        let back = StreamRequest::try_from(encode_request("x", &r, Duration::ZERO)).unwrap();
        assert_eq!(back.request.verdict, r.verdict);
    }

    #[test]
    fn malformed_requests_are_refused() {
        let good = encode_request("x", &request(None, Verdict::escalate("r")), Duration::ZERO);
        let with = |f: &dyn Fn(&mut pb::ApprovalRequest)| {
            let mut m = good.clone();
            f(&mut m);
            StreamRequest::try_from(m).err()
        };
        assert_eq!(
            with(&|m| m.request_id.clear()),
            Some(InvalidApprovalRequest::EmptyRequestId)
        );
        assert_eq!(
            with(&|m| m.interception_point = 0),
            Some(InvalidApprovalRequest::Point)
        );
        assert_eq!(
            with(&|m| m.interception_point = 99),
            Some(InvalidApprovalRequest::Point)
        );
        assert_eq!(
            with(&|m| m.interception_point = pb::InterceptionPoint::Input as i32),
            Some(InvalidApprovalRequest::PointMismatch)
        );
        assert_eq!(
            with(&|m| m.verdict = None),
            Some(InvalidApprovalRequest::MissingVerdict)
        );
        assert_eq!(
            with(&|m| m.verdict = Some(pb::Verdict::from(&Verdict::deny("plain")))),
            Some(InvalidApprovalRequest::NotLiftable)
        );
        assert_eq!(
            with(&|m| m.context = None),
            Some(InvalidApprovalRequest::MissingContext)
        );
        assert!(matches!(
            with(&|m| m.context = Some(pb::JsonValue { json: "{".into() })),
            Some(InvalidApprovalRequest::Context(_))
        ));
        assert!(matches!(
            with(&|m| m.context = Some(pb::JsonValue {
                json: "{\"a\":1}".into()
            })),
            Some(InvalidApprovalRequest::Context(_))
        ));
    }

    #[test]
    fn resolutions_are_carried_faithfully() {
        let cases = [
            ApprovalResolution {
                outcome: Some(ApprovalOutcome::Approve),
                context_identity: Some("sha256:x".into()),
                verdict: Some(Verdict::transform("$target", json!({"amount": 5}))),
            },
            ApprovalResolution {
                outcome: Some(ApprovalOutcome::Reject),
                context_identity: None,
                verdict: Some(Verdict::deny("no")),
            },
            ApprovalResolution {
                outcome: Some(ApprovalOutcome::Unresolved),
                context_identity: Some(String::new()),
                verdict: None,
            },
            // Malformed on purpose: the host, not the wire, refuses these.
            ApprovalResolution {
                outcome: None,
                context_identity: Some("lie".into()),
                verdict: Some(Verdict::deny("host_error:approval_unresolved")),
            },
            ApprovalResolution {
                outcome: Some(ApprovalOutcome::Approve),
                context_identity: None,
                verdict: Some(Verdict::deny("not-a-permit")),
            },
        ];
        for r in cases {
            let back = StreamResolution::from(encode_resolution("q-1", &r, "ann"));
            assert_eq!(back.request_id, "q-1");
            assert_eq!(back.approver, "ann");
            assert_eq!(back.resolution, r);
        }
        let mut m = encode_resolution(
            "q",
            &ApprovalResolution {
                outcome: Some(ApprovalOutcome::Approve),
                context_identity: None,
                verdict: None,
            },
            "",
        );
        m.outcome = 42;
        assert_eq!(StreamResolution::from(m).resolution.outcome, None);
    }

    #[test]
    fn unrepresentable_verdicts_fail_at_step_three() {
        let id = Some("sha256:x");
        let mut m = encode_resolution(
            "q",
            &ApprovalResolution {
                outcome: Some(ApprovalOutcome::Approve),
                context_identity: id.map(str::to_owned),
                verdict: Some(Verdict::allow()),
            },
            "",
        );
        m.verdict.as_mut().unwrap().decision = pb::Decision::Unspecified as i32;
        let r = StreamResolution::from(m.clone()).resolution;
        assert_eq!(r.verdict, Some(unrepresentable_verdict()));
        let reason = |r: Resolved| match r {
            Resolved::Lifted(v) | Resolved::Stands(v) => v.reason,
        };
        assert_eq!(
            reason(validate_resolution(id, &r)).as_deref(),
            Some("host_error:verdict_invalid")
        );
        // The echo rule still comes first.
        assert_eq!(
            reason(validate_resolution(Some("sha256:other"), &r)).as_deref(),
            Some("host_error:approval_identity_mismatch")
        );
        // So does the presence check.
        m.outcome = pb::ApprovalOutcome::Unresolved as i32;
        let r = StreamResolution::from(m).resolution;
        assert_eq!(
            reason(validate_resolution(id, &r)).as_deref(),
            Some("host_error:approval_resolver_failed")
        );
        assert_eq!(unrepresentable_verdict().decision, Decision::Deny);
        assert!(unrepresentable_verdict().validate().is_err());
    }
}
