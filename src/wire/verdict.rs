//! [`Verdict`] and the interceptor response envelope (§5.5) ⇄ the wire, plus
//! the service manifest and [`InterceptionPoint`] ⇄ `pb::InterceptionPoint`.
//!
//! Encoding maps every field 1:1 and never validates: an interceptor may
//! return an invalid verdict (a transform without a body, a reserved
//! reason, ...) and the host must receive it as such to deny it with
//! `host_error:verdict_invalid`. Decoding parses every JSON text exactly and
//! then applies §5 validation ([`Verdict::validate`]) and the §5.5 extension
//! rules, so whatever it returns is a verdict the host may enforce.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::canonical::{Canonicalizer, View};
use crate::context::is_namespace;
use crate::pb;
use crate::point::InterceptionPoint;
use crate::verdict::{Decision, InvalidVerdict, Transform, Verdict, Warning};
use crate::wire::json;

/// Largest canonical size of a response's `extensions`, in bytes (§5.5).
pub const RESPONSE_EXTENSIONS_MAX_BYTES: usize = 65_536;

/// What an interceptor returns (§5.5): a verdict plus opaque namespaced
/// transport metadata that never changes enforcement.
#[derive(Debug, Clone, PartialEq)]
pub struct InterceptorResponse {
    /// The verdict.
    pub verdict: Verdict,
    /// `<namespace>` -> JSON, e.g. receipts.
    pub extensions: Map<String, Value>,
}

impl From<Verdict> for InterceptorResponse {
    fn from(verdict: Verdict) -> Self {
        Self {
            verdict,
            extensions: Map::new(),
        }
    }
}

impl From<&InterceptorResponse> for pb::InterceptorResponse {
    fn from(r: &InterceptorResponse) -> Self {
        Self {
            verdict: Some(pb::Verdict::from(&r.verdict)),
            extensions: r
                .extensions
                .iter()
                .map(|(k, v)| (k.clone(), json_value(v)))
                .collect(),
        }
    }
}

impl TryFrom<pb::InterceptorResponse> for InterceptorResponse {
    type Error = InvalidVerdict;
    /// Decodes and applies §5 validation plus the §5.5 extension rules.
    fn try_from(r: pb::InterceptorResponse) -> Result<Self, Self::Error> {
        let verdict = Verdict::try_from(r.verdict.ok_or(InvalidVerdict::Missing)?)?;
        let extensions = decode_extensions(r.extensions)?;
        Ok(Self {
            verdict,
            extensions,
        })
    }
}

/// Decodes response extensions: namespaced keys, exact JSON, and at most
/// [`RESPONSE_EXTENSIONS_MAX_BYTES`] canonical bytes.
fn decode_extensions(
    wire: HashMap<String, pb::JsonValue>,
) -> Result<Map<String, Value>, InvalidVerdict> {
    let mut extensions = Map::new();
    if wire.is_empty() {
        return Ok(extensions);
    }
    if !wire.keys().all(|k| is_namespace(k)) {
        return Err(InvalidVerdict::ExtensionNamespace);
    }
    for (namespace, text) in wire {
        let value = decode_json("extensions", &text)?;
        extensions.insert(namespace, value);
    }
    let entries: Vec<(&str, View<'_>)> = extensions
        .iter()
        .map(|(k, v)| (k.as_str(), View::Whole(v)))
        .collect();
    let mut canonical = String::new();
    Canonicalizer::default()
        .write(View::Object(&entries), &mut canonical)
        .map_err(|e| InvalidVerdict::Domain(e.to_string()))?;
    if canonical.len() > RESPONSE_EXTENSIONS_MAX_BYTES {
        return Err(InvalidVerdict::ExtensionsTooLarge);
    }
    Ok(extensions)
}

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
/// deny (whose reason is a reserved `host_error:*`), or a host receiving
/// an approval resolution that §9 validates in its normative order.
pub fn verdict_from_pb_unchecked(v: pb::Verdict) -> Result<Verdict, InvalidVerdict> {
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

fn json_value(v: &Value) -> pb::JsonValue {
    pb::JsonValue {
        json: json::encode(v),
    }
}

fn json_object(m: &Map<String, Value>) -> pb::JsonValue {
    pb::JsonValue {
        json: json::encode_object(m),
    }
}

fn decode_json(member: &'static str, j: &pb::JsonValue) -> Result<Value, InvalidVerdict> {
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

/// A service's self-description, answered by `Describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Service name.
    pub name: String,
    /// Service version.
    pub version: String,
    /// Contract version, `agent-hooks/0.1`.
    pub spec: String,
    /// Points the service wants; empty means all eight.
    pub points: Vec<InterceptionPoint>,
    /// One line for operators.
    pub description: String,
}

impl From<&Manifest> for pb::Manifest {
    fn from(m: &Manifest) -> Self {
        Self {
            name: m.name.clone(),
            version: m.version.clone(),
            spec: m.spec.clone(),
            points: m
                .points
                .iter()
                .map(|&p| pb::InterceptionPoint::from(p) as i32)
                .collect(),
            description: m.description.clone(),
        }
    }
}

/// A manifest naming an unspecified or unknown point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("manifest names an unknown interception point ({0})")]
pub struct InvalidManifest(pub i32);

impl TryFrom<pb::Manifest> for Manifest {
    type Error = InvalidManifest;
    fn try_from(m: pb::Manifest) -> Result<Self, Self::Error> {
        let points = m
            .points
            .iter()
            .map(|&raw| {
                pb::InterceptionPoint::try_from(raw)
                    .ok()
                    .and_then(|p| InterceptionPoint::try_from(p).ok())
                    .ok_or(InvalidManifest(raw))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            name: m.name,
            version: m.version,
            spec: m.spec,
            points,
            description: m.description,
        })
    }
}

impl From<InterceptionPoint> for pb::InterceptionPoint {
    fn from(p: InterceptionPoint) -> Self {
        match p {
            InterceptionPoint::AgentStartup => Self::AgentStartup,
            InterceptionPoint::Input => Self::Input,
            InterceptionPoint::PreModelCall => Self::PreModelCall,
            InterceptionPoint::PostModelCall => Self::PostModelCall,
            InterceptionPoint::PreToolCall => Self::PreToolCall,
            InterceptionPoint::PostToolCall => Self::PostToolCall,
            InterceptionPoint::Output => Self::Output,
            InterceptionPoint::AgentShutdown => Self::AgentShutdown,
        }
    }
}

/// `INTERCEPTION_POINT_UNSPECIFIED`, which names none of the eight points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interception point is unspecified: expected one of the eight points (§3)")]
pub struct UnspecifiedPoint;

impl TryFrom<pb::InterceptionPoint> for InterceptionPoint {
    type Error = UnspecifiedPoint;
    fn try_from(p: pb::InterceptionPoint) -> Result<Self, Self::Error> {
        Ok(match p {
            pb::InterceptionPoint::Unspecified => return Err(UnspecifiedPoint),
            pb::InterceptionPoint::AgentStartup => Self::AgentStartup,
            pb::InterceptionPoint::Input => Self::Input,
            pb::InterceptionPoint::PreModelCall => Self::PreModelCall,
            pb::InterceptionPoint::PostModelCall => Self::PostModelCall,
            pb::InterceptionPoint::PreToolCall => Self::PreToolCall,
            pb::InterceptionPoint::PostToolCall => Self::PostToolCall,
            pb::InterceptionPoint::Output => Self::Output,
            pb::InterceptionPoint::AgentShutdown => Self::AgentShutdown,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::EVIDENCE_MAX_BYTES;
    use crate::wire::json::InvalidJson;
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

    #[test]
    fn responses_check_extensions() {
        let mut resp = InterceptorResponse::from(Verdict::allow());
        resp.extensions
            .insert("acme".into(), json!({"receipt": {"id": "r-1", "n": 1.0}}));
        let wire = pb::InterceptorResponse::from(&resp);
        assert_eq!(InterceptorResponse::try_from(wire.clone()).unwrap(), resp);

        let mut missing = wire.clone();
        missing.verdict = None;
        assert_eq!(
            InterceptorResponse::try_from(missing),
            Err(InvalidVerdict::Missing)
        );

        for bad in ["Acme", "", "1acme", "ac-me", "acme.receipt"] {
            let mut w = wire.clone();
            w.extensions.insert(bad.into(), jv("1"));
            assert_eq!(
                InterceptorResponse::try_from(w),
                Err(InvalidVerdict::ExtensionNamespace),
                "{bad:?}"
            );
        }

        // {"a":"…"} is 8 bytes plus the string.
        let at_cap = "x".repeat(RESPONSE_EXTENSIONS_MAX_BYTES - 8);
        let mut w = wire.clone();
        w.extensions.clear();
        w.extensions.insert("a".into(), json_value(&json!(at_cap)));
        InterceptorResponse::try_from(w.clone()).unwrap();
        w.extensions
            .insert("a".into(), json_value(&json!(at_cap + "x")));
        assert_eq!(
            InterceptorResponse::try_from(w),
            Err(InvalidVerdict::ExtensionsTooLarge)
        );

        let mut w = wire;
        w.extensions.insert("bad_json".into(), jv("{\"a\":}"));
        assert!(matches!(
            InterceptorResponse::try_from(w),
            Err(InvalidVerdict::Json {
                member: "extensions",
                ..
            })
        ));
    }

    #[test]
    fn points_and_manifest() {
        for p in InterceptionPoint::ALL {
            let wire = pb::InterceptionPoint::from(p);
            assert_eq!(wire.as_str_name(), p.as_str().to_ascii_uppercase());
            assert_eq!(InterceptionPoint::try_from(wire), Ok(p));
        }
        assert_eq!(
            InterceptionPoint::try_from(pb::InterceptionPoint::Unspecified),
            Err(UnspecifiedPoint)
        );
        let m = Manifest {
            name: "acme-egress-filter".into(),
            version: "1.2.0".into(),
            spec: "agent-hooks/0.1".into(),
            points: vec![InterceptionPoint::PreToolCall, InterceptionPoint::Output],
            description: "Blocks egress to unknown hosts.".into(),
        };
        let wire = pb::Manifest::from(&m);
        assert_eq!(wire.points, [5, 7]);
        assert_eq!(Manifest::try_from(wire.clone()), Ok(m));
        for raw in [0, 9, -1] {
            let mut w = wire.clone();
            w.points.push(raw);
            assert_eq!(Manifest::try_from(w), Err(InvalidManifest(raw)));
        }
    }
}
