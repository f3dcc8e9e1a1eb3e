//! [`Verdict`] ⇄ `pb::Verdict`.
//!
//! Encoding maps every field 1:1 and never validates: an interceptor may
//! return an invalid verdict (a transform without a body, a reserved
//! reason, ...) and the host must receive it as such to deny it with
//! `host_error:verdict_invalid`. Decoding parses every JSON text exactly and
//! then applies §5 validation ([`Verdict::validate`]), so whatever it
//! returns is a verdict the host may enforce.

use serde_json::{Map, Value};

use crate::json;
use crate::pb;
use crate::verdict::{Decision, InvalidVerdict, Transform, Verdict, Warning};

impl From<&Verdict> for pb::Verdict {
    /// Maps every field 1:1, without validation (see the module docs).
    fn from(v: &Verdict) -> Self {
        Self {
            decision: pb::Decision::from(v.decision) as i32,
            reason: v.reason.clone(),
            message: v.message.clone(),
            warnings: v
                .warnings
                .iter()
                .map(|w| pb::Warning {
                    reason: w.reason.clone(),
                    message: w.message.clone(),
                })
                .collect(),
            approval: v.approval.as_ref().map(json_object),
            transform: v.transform.as_ref().map(|t| pb::Transform {
                path: t.path.clone(),
                value: Some(json_value(&t.value)),
            }),
            evidence: v.evidence.as_ref().map(json_object),
            result_labels: v.result_labels.clone(),
        }
    }
}

impl TryFrom<pb::Verdict> for Verdict {
    type Error = InvalidVerdict;
    /// Decodes and applies §5 validation.
    fn try_from(v: pb::Verdict) -> Result<Self, Self::Error> {
        let verdict = verdict_from_pb_unchecked(v)?;
        verdict.validate()?;
        Ok(verdict)
    }
}

/// Decodes a verdict as sent, without §5 validation: fails only when the
/// message cannot be represented as a [`Verdict`] at all (no decision, or
/// a JSON text that does not parse exactly).
///
/// For carriers that must pass a verdict on unchanged for someone else to
/// validate: an approval service forwarding a host-synthesized liftable
/// deny (whose reason is a reserved `host_error:*`), a host receiving an
/// approval resolution that §9 validates in its normative order, or a
/// response validated as a whole ([`crate::InterceptorResponse::validate`]).
pub(super) fn verdict_from_pb_unchecked(v: pb::Verdict) -> Result<Verdict, InvalidVerdict> {
    let decision = match pb::Decision::try_from(v.decision) {
        Ok(pb::Decision::Allow) => Decision::Allow,
        Ok(pb::Decision::Deny) => Decision::Deny,
        Ok(pb::Decision::Transform) => Decision::Transform,
        Ok(pb::Decision::Unspecified) | Err(_) => return Err(InvalidVerdict::Decision),
    };
    let approval = v
        .approval
        .map(|j| decode_object("approval", &j, InvalidVerdict::Approval))
        .transpose()?;
    let transform = v
        .transform
        .map(|t| -> Result<Transform, InvalidVerdict> {
            let value = match t.value {
                Some(j) => decode_json("transform.value", &j)?,
                None => Value::Null,
            };
            Ok(Transform {
                path: t.path,
                value,
            })
        })
        .transpose()?;
    let evidence = v
        .evidence
        .map(|j| decode_object("evidence", &j, InvalidVerdict::Evidence))
        .transpose()?;
    Ok(Verdict {
        decision,
        reason: v.reason,
        message: v.message,
        warnings: v
            .warnings
            .into_iter()
            .map(|w| Warning {
                reason: w.reason,
                message: w.message,
            })
            .collect(),
        approval,
        transform,
        evidence,
        result_labels: v.result_labels,
    })
}

impl From<Decision> for pb::Decision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Allow => Self::Allow,
            Decision::Deny => Self::Deny,
            Decision::Transform => Self::Transform,
        }
    }
}

pub(super) fn json_value(v: &Value) -> pb::JsonValue {
    pb::JsonValue {
        json: json::encode(v),
    }
}

fn json_object(m: &Map<String, Value>) -> pb::JsonValue {
    pb::JsonValue {
        json: json::encode_object(m),
    }
}

pub(super) fn decode_json(
    member: &'static str,
    j: &pb::JsonValue,
) -> Result<Value, InvalidVerdict> {
    json::decode(&j.json).map_err(|error| InvalidVerdict::Json { member, error })
}

fn decode_object(
    member: &'static str,
    j: &pb::JsonValue,
    not_an_object: InvalidVerdict,
) -> Result<Map<String, Value>, InvalidVerdict> {
    match decode_json(member, j)? {
        Value::Object(m) => Ok(m),
        _ => Err(not_an_object),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::InvalidJson;
    use crate::verdict::EVIDENCE_MAX_BYTES;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn jv(text: &str) -> pb::JsonValue {
        pb::JsonValue { json: text.into() }
    }

    #[test]
    fn valid_verdicts_round_trip() {
        let verdicts = [
            Verdict::allow(),
            Verdict::warn("pii", "looks like an email").with_label("pii"),
            Verdict::transform("$target.x", json!({"a": [1, 1.0, null]})),
            Verdict::transform("$target", Value::Null),
            Verdict::escalate("needs_human").with_approval(obj(json!({"ticket": "T-1"}))),
            Verdict::deny("blocked")
                .with_message("no")
                .with_evidence(obj(json!({"uri": "https://e.example/1"}))),
        ];
        for v in verdicts {
            let wire = pb::Verdict::from(&v);
            assert_eq!(Verdict::try_from(wire).unwrap(), v);
        }
    }

    #[test]
    fn invalid_verdicts_are_carried_faithfully_and_refused_on_decode() {
        let mut no_body = Verdict::transform("$target", json!(1));
        no_body.transform = None;
        let cases = [
            (no_body, InvalidVerdict::Transform),
            (
                Verdict::deny("host_error:context_invalid"),
                InvalidVerdict::ReservedReason,
            ),
            (
                Verdict::allow().with_approval(Map::new()),
                InvalidVerdict::Approval,
            ),
            (
                Verdict::allow().with_evidence(obj(json!({"a": "x".repeat(EVIDENCE_MAX_BYTES)}))),
                InvalidVerdict::EvidenceTooLarge,
            ),
        ];
        for (v, err) in cases {
            let wire = pb::Verdict::from(&v);
            assert_eq!(wire.decision, pb::Decision::from(v.decision) as i32);
            assert_eq!(wire.reason, v.reason);
            assert_eq!(wire.transform.is_some(), v.transform.is_some());
            assert_eq!(Verdict::try_from(wire), Err(err));
        }
    }

    #[test]
    fn decode_refusals() {
        let base = pb::Verdict::from(&Verdict::deny("x"));
        let with = |f: &dyn Fn(&mut pb::Verdict)| {
            let mut v = base.clone();
            f(&mut v);
            Verdict::try_from(v)
        };
        assert_eq!(with(&|v| v.decision = 0), Err(InvalidVerdict::Decision));
        assert_eq!(with(&|v| v.decision = 42), Err(InvalidVerdict::Decision));
        assert_eq!(
            with(&|v| v.approval = Some(jv("[]"))),
            Err(InvalidVerdict::Approval)
        );
        assert_eq!(
            with(&|v| v.approval = Some(jv("null"))),
            Err(InvalidVerdict::Approval)
        );
        assert_eq!(
            with(&|v| v.evidence = Some(jv("\"uri\""))),
            Err(InvalidVerdict::Evidence)
        );
        assert!(matches!(
            with(&|v| v.evidence = Some(jv("{"))),
            Err(InvalidVerdict::Json {
                member: "evidence",
                error: InvalidJson::Syntax(_)
            })
        ));
        assert_eq!(
            with(&|v| v.evidence = Some(jv(r#"{"n":18446744073709551616}"#))),
            Err(InvalidVerdict::Json {
                member: "evidence",
                error: InvalidJson::IntegerOutOfRange(5)
            })
        );
        assert!(matches!(
            with(&|v| v.evidence = Some(jv(r#"{"n":9007199254740993}"#))),
            Err(InvalidVerdict::Domain(_))
        ));
        let t = |value: Option<pb::JsonValue>| {
            Verdict::try_from(pb::Verdict {
                decision: pb::Decision::Transform as i32,
                transform: Some(pb::Transform {
                    path: "$target".into(),
                    value,
                }),
                ..Default::default()
            })
        };
        assert_eq!(
            t(None).unwrap().transform.unwrap().value,
            Value::Null,
            "absent transform value is null"
        );
        assert!(matches!(
            t(Some(jv("1e400"))),
            Err(InvalidVerdict::Json {
                member: "transform.value",
                ..
            })
        ));
    }
}
