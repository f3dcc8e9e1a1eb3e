//! Verdicts (AGENT-HOOKS-0.1 §5): what an interceptor returns, the
//! constructors authors use, the §5 validation a host applies to every
//! verdict it receives, and the §5.1 severity order aggregation relies on.
//!
//! [`Verdict`] can represent invalid shapes on purpose (a `transform`
//! decision without a transform body, a reserved reason, ...): the wire can
//! carry them, and the host must see them to turn them into
//! `host_error:verdict_invalid`. The constructors only build valid verdicts.

use serde_json::{Map, Value};

use crate::canonical;
use crate::json::InvalidJson;
use crate::reason::{HOST_ERROR_PREFIX, HostError};

/// Largest canonical (RFC 8785) size of `evidence`, in bytes (§5.3).
pub const EVIDENCE_MAX_BYTES: usize = 10_240;

/// Largest canonical size of a response's `extensions`, in bytes (§5.5).
/// It lives beside the verdict's own bounds because a breach is the same
/// failure, [`InvalidVerdict::ExtensionsTooLarge`].
pub const RESPONSE_EXTENSIONS_MAX_BYTES: usize = 65_536;

/// The three decisions of §5. `warn` is an allow with warnings and
/// `escalate` is a deny with an approval block; neither is a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Proceed with the target unchanged.
    Allow,
    /// Do not proceed (liftable when the verdict carries `approval`).
    Deny,
    /// Proceed with the target rewritten.
    Transform,
}

impl Decision {
    /// The wire name: `allow`, `deny` or `transform`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Transform => "transform",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "transform" => Some(Self::Transform),
            _ => None,
        }
    }
}

/// The §5.1 total order used by aggregation:
/// `deny > deny+approval > transform > allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// `allow`.
    Allow,
    /// `transform`.
    Transform,
    /// `deny` carrying an `approval` block.
    LiftableDeny,
    /// Plain `deny`.
    Deny,
}

/// A concern recorded without changing control flow (§5.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Warning {
    /// Machine identifier.
    pub reason: Option<String>,
    /// Human-readable text.
    pub message: Option<String>,
}

/// A rewrite of the target (§5.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    /// Path rooted at `$target` (see [`crate::path`]).
    pub path: String,
    /// Replacement value; `null` when the wire omitted it.
    pub value: Value,
}

/// An interceptor's decision and its metadata (§5).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What happens to the action.
    pub decision: Decision,
    /// Machine identifier; never `host_error:*` from an interceptor.
    pub reason: Option<String>,
    /// Human-readable text.
    pub message: Option<String>,
    /// Concerns recorded on any decision.
    pub warnings: Vec<Warning>,
    /// Present only on a deny; makes it liftable by the approval seam (§9).
    pub approval: Option<Map<String, Value>>,
    /// Present iff `decision` is [`Decision::Transform`].
    pub transform: Option<Transform>,
    /// Opaque offline-verifiable pointer (§5.3), a JSON object.
    pub evidence: Option<Map<String, Value>>,
    /// Labels for label-flow tracking (§5.4).
    pub result_labels: Vec<String>,
}

/// Why a verdict failed §5 validation. Every variant becomes
/// `host_error:verdict_invalid`; the message names the rule, never content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidVerdict {
    /// The JSON verdict is not an object.
    #[error("verdict is not a JSON object")]
    NotAnObject,
    /// `decision` is missing or not one of the three values.
    #[error("verdict decision is missing or not one of allow, deny, transform")]
    Decision,
    /// `reason` uses the reserved `host_error:` prefix.
    #[error("verdict reason uses the reserved host_error: prefix")]
    ReservedReason,
    /// `approval` on a permit verdict, or not an object.
    #[error("verdict approval is only valid as an object on a deny")]
    Approval,
    /// `transform` missing on a transform, present otherwise, or malformed.
    #[error(
        "verdict transform must be present exactly when decision is transform, with a string path"
    )]
    Transform,
    /// `warnings` is not an array of objects with string members.
    #[error("verdict warnings must be an array of {{reason?, message?}} objects")]
    Warnings,
    /// `evidence` is not an object.
    #[error("verdict evidence must be a JSON object")]
    Evidence,
    /// `evidence` is larger than 10240 canonical bytes.
    #[error("verdict evidence exceeds {EVIDENCE_MAX_BYTES} canonical bytes")]
    EvidenceTooLarge,
    /// `result_labels` is not an array of strings.
    #[error("verdict result_labels must be an array of strings")]
    ResultLabels,
    /// A member has the wrong JSON type (`reason`, `message`).
    #[error("verdict member {0} has the wrong type")]
    MemberType(&'static str),
    /// A value in the verdict is outside the exact JSON domain.
    #[error("verdict carries a value outside the JSON domain: {0}")]
    Domain(String),
    /// A JSON text on the wire (`approval`, `evidence`, `transform.value`,
    /// a response extension) could not be decoded exactly.
    #[error("verdict {member}: {error}")]
    Json {
        /// Which member carried the text.
        member: &'static str,
        /// What was wrong, without the value.
        error: InvalidJson,
    },
    /// An interceptor response carries no verdict (§5.5).
    #[error("interceptor response carries no verdict")]
    Missing,
    /// A response `extensions` namespace does not match `^[a-z][a-z0-9_]*$`
    /// (§5.5).
    #[error("response extensions namespace does not match ^[a-z][a-z0-9_]*$ (§5.5)")]
    ExtensionNamespace,
    /// The response `extensions` are larger than
    /// [`RESPONSE_EXTENSIONS_MAX_BYTES`] canonical bytes (§5.5).
    #[error("response extensions exceed {RESPONSE_EXTENSIONS_MAX_BYTES} canonical bytes (§5.5)")]
    ExtensionsTooLarge,
    /// A string, list or object of the verdict is larger than the bound
    /// hookwire sets on it (see [`InterceptorResponse::validate`](crate::InterceptorResponse::validate)).
    #[error("verdict {member} exceeds its bound of {max}")]
    Oversized {
        /// Which member (`reason`, `message`, `warnings`, ...).
        member: &'static str,
        /// The bound: bytes for strings and objects, entries for lists.
        max: usize,
    },
}

impl Verdict {
    fn bare(decision: Decision) -> Self {
        Self {
            decision,
            reason: None,
            message: None,
            warnings: Vec::new(),
            approval: None,
            transform: None,
            evidence: None,
            result_labels: Vec::new(),
        }
    }

    /// `allow`: proceed unchanged.
    pub fn allow() -> Self {
        Self::bare(Decision::Allow)
    }

    /// `deny` with a machine reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::bare(Decision::Deny).with_reason(reason)
    }

    /// `transform`: replace the value at `path` (rooted at `$target`).
    pub fn transform(path: impl Into<String>, value: Value) -> Self {
        Self {
            transform: Some(Transform {
                path: path.into(),
                value,
            }),
            ..Self::bare(Decision::Transform)
        }
    }

    /// `warn` sugar (§5.1): an allow carrying one warning.
    pub fn warn(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::allow().with_warning(Warning {
            reason: Some(reason.into()),
            message: Some(message.into()),
        })
    }

    /// `escalate` sugar (§5.1): a deny with an empty approval block, lifted
    /// only if the approval seam resolves to a permit.
    pub fn escalate(reason: impl Into<String>) -> Self {
        Self {
            approval: Some(Map::new()),
            ..Self::deny(reason)
        }
    }

    /// The deny a host synthesizes for a reserved reason (§11).
    pub fn host_error(error: HostError) -> Self {
        Self::bare(Decision::Deny).with_reason(error.as_str())
    }

    /// Sets `reason`.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Sets `message`.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Appends a warning.
    pub fn with_warning(mut self, warning: Warning) -> Self {
        self.warnings.push(warning);
        self
    }

    /// Sets the approval block (turns a deny into a liftable deny).
    pub fn with_approval(mut self, approval: Map<String, Value>) -> Self {
        self.approval = Some(approval);
        self
    }

    /// Sets `evidence`.
    pub fn with_evidence(mut self, evidence: Map<String, Value>) -> Self {
        self.evidence = Some(evidence);
        self
    }

    /// Appends a result label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.result_labels.push(label.into());
        self
    }

    /// `allow` or `transform`.
    pub fn is_permit(&self) -> bool {
        matches!(self.decision, Decision::Allow | Decision::Transform)
    }

    /// A deny carrying an approval block (§5.1).
    pub fn is_liftable(&self) -> bool {
        self.decision == Decision::Deny && self.approval.is_some()
    }

    /// The reserved reason this verdict carries, if the host synthesized it.
    pub fn host_error_reason(&self) -> Option<HostError> {
        self.reason.as_deref().and_then(HostError::from_reason)
    }

    /// Position in the §5.1 order.
    pub fn severity(&self) -> Severity {
        match self.decision {
            Decision::Allow => Severity::Allow,
            Decision::Transform => Severity::Transform,
            Decision::Deny if self.approval.is_some() => Severity::LiftableDeny,
            Decision::Deny => Severity::Deny,
        }
    }

    /// §5 validation, as a host applies it to every verdict it receives.
    pub fn validate(&self) -> Result<(), InvalidVerdict> {
        if self
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with(HOST_ERROR_PREFIX))
        {
            return Err(InvalidVerdict::ReservedReason);
        }
        if self.approval.is_some() && self.decision != Decision::Deny {
            return Err(InvalidVerdict::Approval);
        }
        if self.transform.is_some() != (self.decision == Decision::Transform) {
            return Err(InvalidVerdict::Transform);
        }
        if let Some(evidence) = &self.evidence {
            let size = canonical::canonical_len(&Value::Object(evidence.clone()))
                .map_err(|e| InvalidVerdict::Domain(e.to_string()))?;
            if size > EVIDENCE_MAX_BYTES {
                return Err(InvalidVerdict::EvidenceTooLarge);
            }
        }
        Ok(())
    }

    /// The spec JSON shape of this verdict (members absent when empty).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("decision".into(), Value::from(self.decision.as_str()));
        if let Some(r) = &self.reason {
            m.insert("reason".into(), Value::from(r.as_str()));
        }
        if let Some(msg) = &self.message {
            m.insert("message".into(), Value::from(msg.as_str()));
        }
        if !self.warnings.is_empty() {
            m.insert(
                "warnings".into(),
                self.warnings.iter().map(Warning::to_json).collect(),
            );
        }
        if let Some(a) = &self.approval {
            m.insert("approval".into(), Value::Object(a.clone()));
        }
        if let Some(t) = &self.transform {
            let mut tm = Map::new();
            tm.insert("path".into(), Value::from(t.path.as_str()));
            tm.insert("value".into(), t.value.clone());
            m.insert("transform".into(), Value::Object(tm));
        }
        if let Some(e) = &self.evidence {
            m.insert("evidence".into(), Value::Object(e.clone()));
        }
        if !self.result_labels.is_empty() {
            m.insert(
                "result_labels".into(),
                self.result_labels
                    .iter()
                    .map(|l| Value::from(l.as_str()))
                    .collect(),
            );
        }
        Value::Object(m)
    }

    /// Parses the spec JSON shape and applies §5 validation: every failure
    /// is an [`InvalidVerdict`], i.e. `host_error:verdict_invalid`.
    pub fn from_json(value: &Value) -> Result<Self, InvalidVerdict> {
        let obj = value.as_object().ok_or(InvalidVerdict::NotAnObject)?;
        let decision = obj
            .get("decision")
            .and_then(Value::as_str)
            .and_then(Decision::parse)
            .ok_or(InvalidVerdict::Decision)?;
        let opt_str = |key: &'static str| match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(InvalidVerdict::MemberType(key)),
        };
        let reason = opt_str("reason")?;
        let message = opt_str("message")?;
        let warnings = match obj.get("warnings") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(Warning::from_json)
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(InvalidVerdict::Warnings),
        };
        let approval = match obj.get("approval") {
            None | Some(Value::Null) => None,
            Some(Value::Object(a)) => Some(a.clone()),
            Some(_) => return Err(InvalidVerdict::Approval),
        };
        let transform = match obj.get("transform") {
            None | Some(Value::Null) => None,
            Some(Value::Object(t)) => {
                let path = t
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or(InvalidVerdict::Transform)?;
                Some(Transform {
                    path: path.to_owned(),
                    value: t.get("value").cloned().unwrap_or(Value::Null),
                })
            }
            Some(_) => return Err(InvalidVerdict::Transform),
        };
        let evidence = match obj.get("evidence") {
            None | Some(Value::Null) => None,
            Some(Value::Object(e)) => Some(e.clone()),
            Some(_) => return Err(InvalidVerdict::Evidence),
        };
        let result_labels = match obj.get("result_labels") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|l| l.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or(InvalidVerdict::ResultLabels)?,
            Some(_) => return Err(InvalidVerdict::ResultLabels),
        };
        let verdict = Self {
            decision,
            reason,
            message,
            warnings,
            approval,
            transform,
            evidence,
            result_labels,
        };
        verdict.validate()?;
        Ok(verdict)
    }
}

impl Warning {
    /// The spec JSON shape `{reason?, message?}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(r) = &self.reason {
            m.insert("reason".into(), Value::from(r.as_str()));
        }
        if let Some(msg) = &self.message {
            m.insert("message".into(), Value::from(msg.as_str()));
        }
        Value::Object(m)
    }

    fn from_json(value: &Value) -> Result<Self, InvalidVerdict> {
        let obj = value.as_object().ok_or(InvalidVerdict::Warnings)?;
        let field = |key: &str| match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(InvalidVerdict::Warnings),
        };
        Ok(Self {
            reason: field("reason")?,
            message: field("message")?,
        })
    }
}

#[cfg(test)]
mod tests;
