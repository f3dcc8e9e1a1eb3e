//! The interception record (AGENT-HOOKS-0.1 §10.3): one per emission,
//! making the host's decision legible (the enforcement mode and resolved
//! composition it ran under live in [`crate::composition`]).
//!
//! A record is payload-free: it carries the projection of the combined
//! verdict (`transform.value` dropped, `approval` members stripped, messages
//! truncated to 256 bytes), identities, and attribution, never context
//! content.

use serde_json::{Map, Value};

use crate::composition::{Composition, Mode};
use crate::point::InterceptionPoint;
use crate::verdict::{Decision, Verdict, Warning};

/// Longest `message` a record keeps, in UTF-8 bytes (§10.3).
pub const RECORD_MESSAGE_MAX_BYTES: usize = 256;

/// The namespace of hookwire's own facts in
/// [`InterceptionRecord::extensions`] (`visibility`, `mutation_refused`,
/// `cancelled`, `approval`, ...).
pub const FACTS_NAMESPACE: &str = "hookwire";

/// How the approval seam ended, when it was consulted (§7.6, §10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResolvedBy {
    /// A permit resolution substituted for a verdict.
    Approval,
    /// The seam was consulted and did not lift the deny.
    Rejection,
}

impl ResolvedBy {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Rejection => "rejection",
        }
    }
}

/// One interceptor's verdict in the record's `verdicts` summary (§10.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictSummary {
    /// Registration index.
    pub index: usize,
    /// The decision it returned (or its §6.3 substitute).
    pub decision: Decision,
    /// Its reason.
    pub reason: Option<String>,
    /// Its registration name.
    pub name: Option<String>,
}

/// One record per emission (§10.3).
#[derive(Debug, Clone, PartialEq)]
pub struct InterceptionRecord {
    /// The point of the emission.
    pub interception_point: InterceptionPoint,
    /// The mode in effect.
    pub mode: Mode,
    /// The payload-free projection of the combined verdict.
    pub verdict: Verdict,
    /// Identity before dispatch (`None`: null provider or rejected before
    /// dispatch).
    pub input_identity: Option<String>,
    /// Identity after composition.
    pub enforced_identity: Option<String>,
    /// The declared identity provider name (`None`: the `null` provider).
    pub identity_provider: Option<String>,
    /// `session.id`.
    pub session_id: String,
    /// `sequence` (`-1` when unknown).
    pub sequence: i64,
    /// The context's `timestamp`, verbatim.
    pub timestamp: Option<String>,
    /// `{trace_id?, span_id?}` echoed from the context.
    pub trace: Option<Map<String, Value>>,
    /// Index of the interceptor whose verdict won or was consulted.
    pub decided_by: Option<usize>,
    /// Profile and knobs in effect (serialized resolved).
    pub composition: Composition,
    /// Per-interceptor summary.
    pub verdicts: Vec<VerdictSummary>,
    /// Whether registered interceptors were skipped (sequential profiles).
    pub fold_truncated: Option<bool>,
    /// How the approval seam ended, if consulted.
    pub resolved_by: Option<ResolvedBy>,
    /// Interceptors registered at emission time.
    pub interceptors_registered: usize,
    /// The declaration contract version, when the host was built from a
    /// declaration document (§7.7).
    pub declaration: Option<String>,
    /// Host-owned, payload-free facts about the emission that §10.3 has no
    /// member for, by namespace (`^[a-z][a-z0-9_]*$`, as context
    /// extensions, §4.6); hookwire's own go under [`FACTS_NAMESPACE`], e.g.
    /// which members each restricted binding was not shown (`visibility`),
    /// or what became of each binding's effect asks (`effects`: `{binding:
    /// {kinds, fate}}`). They are not part of the §10.3 record
    /// ([`Self::to_json`] leaves them out: the record schema is closed) and
    /// travel beside it: in [`Self::to_envelope`], the signed audit line,
    /// the emission span and the OTLP log record.
    pub extensions: Map<String, Value>,
}

impl InterceptionRecord {
    /// Whether the guarded action proceeds (§6, §8).
    pub fn proceeds(&self) -> bool {
        self.mode == Mode::EvaluateOnly || self.verdict.is_permit()
    }

    /// One of hookwire's facts about the emission
    /// (`extensions.hookwire.<name>`), e.g. `"visibility"`.
    pub fn fact(&self, name: &str) -> Option<&Value> {
        self.extensions.get(FACTS_NAMESPACE)?.get(name)
    }

    /// The record with the facts beside it, the shape a sink that keeps
    /// both writes: `{"record": <§10.3>, "extensions": {"hookwire": {...}}}`,
    /// `extensions` absent when there are none. The `record` member is
    /// exactly [`Self::to_json`].
    pub fn to_envelope(&self) -> Value {
        let mut m = Map::new();
        m.insert("record".into(), self.to_json());
        if !self.extensions.is_empty() {
            m.insert("extensions".into(), Value::Object(self.extensions.clone()));
        }
        Value::Object(m)
    }

    /// The §10.3 JSON shape, and nothing else: it validates against the
    /// spec's `interception-record.schema.json`, which admits no other
    /// member. hookwire's facts ([`Self::extensions`]) are not in it; see
    /// [`Self::to_envelope`].
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "interception_point".into(),
            self.interception_point.as_str().into(),
        );
        m.insert("mode".into(), self.mode.as_str().into());
        m.insert("verdict".into(), projection_json(&self.verdict));
        m.insert("input_identity".into(), opt_str(&self.input_identity));
        m.insert("enforced_identity".into(), opt_str(&self.enforced_identity));
        m.insert("identity_provider".into(), opt_str(&self.identity_provider));
        m.insert("session_id".into(), self.session_id.as_str().into());
        m.insert("sequence".into(), self.sequence.into());
        if let Some(t) = &self.timestamp {
            m.insert("timestamp".into(), t.as_str().into());
        }
        if let Some(t) = &self.trace {
            m.insert("trace".into(), Value::Object(t.clone()));
        }
        m.insert(
            "decided_by".into(),
            self.decided_by.map_or(Value::Null, Value::from),
        );
        m.insert("composition".into(), self.composition.to_json());
        if let Some(d) = &self.declaration {
            m.insert("declaration".into(), d.as_str().into());
        }
        if !self.verdicts.is_empty() {
            let items = self
                .verdicts
                .iter()
                .map(|s| {
                    let mut e = Map::new();
                    e.insert("index".into(), s.index.into());
                    e.insert("decision".into(), s.decision.as_str().into());
                    if let Some(r) = &s.reason {
                        e.insert("reason".into(), r.as_str().into());
                    }
                    if let Some(n) = &s.name {
                        e.insert("name".into(), n.as_str().into());
                    }
                    Value::Object(e)
                })
                .collect();
            m.insert("verdicts".into(), Value::Array(items));
        }
        if let Some(f) = self.fold_truncated {
            m.insert("fold_truncated".into(), f.into());
        }
        if let Some(r) = self.resolved_by {
            m.insert("resolved_by".into(), r.as_str().into());
        }
        m.insert(
            "interceptors_registered".into(),
            self.interceptors_registered.into(),
        );
        Value::Object(m)
    }
}

/// The record's `verdict` member: the projection's JSON without
/// `transform.value`. §10.3 drops the member, not just its content; a
/// [`Verdict`] always holds a value (`null` after [`payload_free`]), so the
/// drop happens here.
fn projection_json(v: &Verdict) -> Value {
    let mut json = v.to_json();
    if let Some(t) = json.get_mut("transform").and_then(Value::as_object_mut) {
        t.remove("value");
    }
    json
}

fn opt_str(s: &Option<String>) -> Value {
    s.as_deref().map_or(Value::Null, Value::from)
}

/// The §10.3 payload-free projection of a combined verdict.
pub fn payload_free(v: &Verdict) -> Verdict {
    Verdict {
        decision: v.decision,
        reason: v.reason.clone(),
        message: v.message.as_deref().map(truncate_message),
        warnings: v
            .warnings
            .iter()
            .map(|w| Warning {
                reason: w.reason.clone(),
                message: w.message.as_deref().map(truncate_message),
            })
            .collect(),
        approval: v.approval.as_ref().map(|_| Map::new()),
        transform: v.transform.as_ref().map(|t| crate::verdict::Transform {
            path: t.path.clone(),
            value: Value::Null,
        }),
        evidence: v.evidence.clone(),
        result_labels: v.result_labels.clone(),
    }
}

/// Truncates to at most 256 UTF-8 bytes on a character boundary, appending
/// `…` when something was cut (§10.3).
pub fn truncate_message(s: &str) -> String {
    if s.len() <= RECORD_MESSAGE_MAX_BYTES {
        return s.to_owned();
    }
    let mut end = RECORD_MESSAGE_MAX_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn projection_drops_payload() {
        let v = Verdict::transform("$target.email", json!("secret@example.com"))
            .with_message("é".repeat(200))
            .with_label("pii");
        let p = payload_free(&v).to_json();
        assert_eq!(
            p["transform"],
            json!({"path": "$target.email", "value": null})
        );
        let msg = p["message"].as_str().unwrap();
        assert!(msg.ends_with('…') && msg.len() <= 256 + '…'.len_utf8());
        let e = payload_free(
            &Verdict::escalate("r")
                .with_approval(json!({"ticket": "x"}).as_object().unwrap().clone()),
        );
        assert_eq!(e.approval, Some(Map::new()));
    }

    #[test]
    fn record_json_drops_transform_value() {
        // AH-CTK-093: the record keeps transform.path; transform.value is
        // absent, not null.
        let record = InterceptionRecord {
            interception_point: InterceptionPoint::PreToolCall,
            mode: Mode::Enforce,
            verdict: payload_free(&Verdict::transform("$target.url", json!("https://safe"))),
            input_identity: None,
            enforced_identity: None,
            identity_provider: None,
            session_id: "s".into(),
            sequence: 3,
            timestamp: None,
            trace: None,
            decided_by: Some(0),
            composition: Composition::default(),
            verdicts: Vec::new(),
            fold_truncated: Some(false),
            resolved_by: None,
            interceptors_registered: 1,
            declaration: None,
            extensions: Map::new(),
        };
        let json = record.to_json();
        assert_eq!(json["verdict"]["decision"], "transform");
        assert_eq!(json["verdict"]["transform"], json!({"path": "$target.url"}));
        assert!(!json.to_string().contains("https://safe"));
        assert_eq!(record.to_envelope(), json!({"record": json}));
    }

    #[test]
    fn facts_travel_beside_the_record_never_inside_it() {
        let mut record = InterceptionRecord {
            interception_point: InterceptionPoint::Input,
            mode: Mode::Enforce,
            verdict: Verdict::allow(),
            input_identity: None,
            enforced_identity: None,
            identity_provider: None,
            session_id: "s".into(),
            sequence: 1,
            timestamp: None,
            trace: None,
            decided_by: None,
            composition: Composition::default(),
            verdicts: Vec::new(),
            fold_truncated: Some(false),
            resolved_by: None,
            interceptors_registered: 1,
            declaration: None,
            extensions: Map::new(),
        };
        let bare = record.to_json();
        record.extensions.insert(
            FACTS_NAMESPACE.into(),
            json!({"visibility": {"pii": ["actor"]}, "cancelled": true}),
        );
        // The §10.3 record is closed (`additionalProperties: false`).
        assert_eq!(record.to_json(), bare);
        assert!(record.to_json().get("extensions").is_none());
        assert_eq!(
            record.to_envelope(),
            json!({
                "record": bare,
                "extensions": {"hookwire": {"visibility": {"pii": ["actor"]}, "cancelled": true}},
            })
        );
        assert_eq!(record.fact("cancelled"), Some(&json!(true)));
        assert_eq!(record.fact("mutation_refused"), None);
    }
}
