//! The interceptor response envelope (§5.5): a verdict plus namespaced
//! transport metadata, and the one validation every response gets before a
//! host enforces it, whether it came from a service over the wire or from
//! an interceptor in the host's own process.
//!
//! The spec bounds `evidence` (§5.3) and leaves the verdict's other strings
//! and lists open; a host copies them into records, metrics and the
//! agent's own state (a deny `message` goes back to the model), so an
//! unbounded `reason` is a memory and context-size hazard. hookwire bounds
//! each of them (the `*_MAX*` constants below), and a response beyond a
//! bound is `host_error:verdict_invalid` like any other §5 violation. The
//! transform `value` is bounded by the context bound instead: the
//! transformed context must pass §12.3 again before it is enforced.

use serde_json::{Map, Value};

use crate::canonical::{Canonicalizer, View};
use crate::context::is_namespace;
use crate::verdict::{InvalidVerdict, RESPONSE_EXTENSIONS_MAX_BYTES, Verdict};

/// Largest verdict `reason`, and warning `reason`, in UTF-8 bytes: a
/// machine identifier, recorded verbatim and used as a metric label.
pub const REASON_MAX_BYTES: usize = 1024;

/// Largest verdict `message`, and warning `message`, in UTF-8 bytes:
/// human text that may be shown to the user or fed back to the model.
pub const MESSAGE_MAX_BYTES: usize = 16 * 1024;

/// Most `warnings` one verdict may carry.
pub const WARNINGS_MAX: usize = 64;

/// Most `result_labels` one verdict may carry.
pub const RESULT_LABELS_MAX: usize = 64;

/// Largest result label, in UTF-8 bytes.
pub const LABEL_MAX_BYTES: usize = 1024;

/// Largest `transform.path`, in UTF-8 bytes.
pub const TRANSFORM_PATH_MAX_BYTES: usize = 4096;

/// Largest encoded interceptor response a host decodes from the wire, in
/// bytes: above the §12.3 default context bound (5 MiB; a transform may
/// replace a whole target of nearly that size) plus the response's other
/// bounded members, and equal to the request limit interceptor servers
/// apply. tonic's own default (4 MiB) would turn a valid 4.5 MB transform
/// into `host_error:interceptor_failed`. A host that raises its context
/// bound above about 7.5 MiB needs transforms smaller than that bound.
pub const WIRE_RESPONSE_MAX_BYTES: usize = 8 * 1024 * 1024;

/// Largest `approval` block, in canonical (RFC 8785) bytes: it travels to
/// the approval resolver and its reviewers.
pub const APPROVAL_MAX_BYTES: usize = 65_536;

/// What an interceptor returns (§5.5): a verdict plus namespaced
/// metadata. Only the verdict decides; a host may act on its own
/// namespace's members as effects, and hookwire's host does so only in
/// `enforce` mode, from a permitting verdict, inside the binding's grant.
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

impl InterceptorResponse {
    /// §5 validation of the verdict, hookwire's bounds on its strings and
    /// lists ([`REASON_MAX_BYTES`], [`MESSAGE_MAX_BYTES`],
    /// [`WARNINGS_MAX`], [`RESULT_LABELS_MAX`], [`LABEL_MAX_BYTES`],
    /// [`TRANSFORM_PATH_MAX_BYTES`], [`APPROVAL_MAX_BYTES`];
    /// [`InvalidVerdict::Oversized`]), then the §5.5 rules on
    /// `extensions`: every namespace matches `^[a-z][a-z0-9_]*$` and the
    /// whole map is at most [`RESPONSE_EXTENSIONS_MAX_BYTES`] canonical
    /// bytes. A host enforces only responses that pass; the wire decoder
    /// and the in-process path both call this, so one violation is one
    /// error wherever the response came from.
    pub fn validate(&self) -> Result<(), InvalidVerdict> {
        self.verdict.validate()?;
        check_bounds(&self.verdict)?;
        if self.extensions.is_empty() {
            return Ok(());
        }
        if !self.extensions.keys().all(|k| is_namespace(k)) {
            return Err(InvalidVerdict::ExtensionNamespace);
        }
        let entries: Vec<(&str, View<'_>)> = self
            .extensions
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
        Ok(())
    }
}

/// hookwire's bounds on the verdict members the spec leaves open.
fn check_bounds(v: &Verdict) -> Result<(), InvalidVerdict> {
    let oversized = |member, max| Err(InvalidVerdict::Oversized { member, max });
    let longer = |s: &Option<String>, max: usize| s.as_ref().is_some_and(|s| s.len() > max);
    if longer(&v.reason, REASON_MAX_BYTES) {
        return oversized("reason", REASON_MAX_BYTES);
    }
    if longer(&v.message, MESSAGE_MAX_BYTES) {
        return oversized("message", MESSAGE_MAX_BYTES);
    }
    if v.warnings.len() > WARNINGS_MAX {
        return oversized("warnings", WARNINGS_MAX);
    }
    for w in &v.warnings {
        if longer(&w.reason, REASON_MAX_BYTES) {
            return oversized("warnings[].reason", REASON_MAX_BYTES);
        }
        if longer(&w.message, MESSAGE_MAX_BYTES) {
            return oversized("warnings[].message", MESSAGE_MAX_BYTES);
        }
    }
    if v.result_labels.len() > RESULT_LABELS_MAX {
        return oversized("result_labels", RESULT_LABELS_MAX);
    }
    if v.result_labels.iter().any(|l| l.len() > LABEL_MAX_BYTES) {
        return oversized("result_labels[]", LABEL_MAX_BYTES);
    }
    if v.transform
        .as_ref()
        .is_some_and(|t| t.path.len() > TRANSFORM_PATH_MAX_BYTES)
    {
        return oversized("transform.path", TRANSFORM_PATH_MAX_BYTES);
    }
    if let Some(approval) = &v.approval
        && !approval.is_empty()
    {
        let size = crate::canonical::canonical_len(&Value::Object(approval.clone()))
            .map_err(|e| InvalidVerdict::Domain(e.to_string()))?;
        if size > APPROVAL_MAX_BYTES {
            return oversized("approval", APPROVAL_MAX_BYTES);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(namespace: &str, value: Value) -> InterceptorResponse {
        let mut r = InterceptorResponse::from(Verdict::allow());
        r.extensions.insert(namespace.into(), value);
        r
    }

    #[test]
    fn validation_covers_the_verdict_and_the_extensions() {
        with("acme", json!({"receipt": "r-1"})).validate().unwrap();
        InterceptorResponse::from(Verdict::allow())
            .validate()
            .unwrap();
        assert_eq!(
            InterceptorResponse::from(Verdict::deny("host_error:verdict_invalid")).validate(),
            Err(InvalidVerdict::ReservedReason)
        );
        for bad in ["Acme", "", "1acme", "ac-me", "acme.receipt"] {
            assert_eq!(
                with(bad, json!(1)).validate(),
                Err(InvalidVerdict::ExtensionNamespace),
                "{bad:?}"
            );
        }
        // {"a":"…"} is 8 bytes plus the string.
        let at_cap = "x".repeat(RESPONSE_EXTENSIONS_MAX_BYTES - 8);
        with("a", json!(at_cap)).validate().unwrap();
        assert_eq!(
            with("a", json!(at_cap + "x")).validate(),
            Err(InvalidVerdict::ExtensionsTooLarge)
        );
        assert!(matches!(
            with("a", json!(9_007_199_254_740_993u64)).validate(),
            Err(InvalidVerdict::Domain(_))
        ));
    }

    fn oversized(v: Verdict) -> Option<&'static str> {
        match InterceptorResponse::from(v).validate() {
            Err(InvalidVerdict::Oversized { member, .. }) => Some(member),
            Ok(()) => None,
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_open_string_and_list_of_a_verdict_is_bounded() {
        use crate::verdict::Warning;
        let at = |n| "r".repeat(n);
        // At the bound passes, one byte over fails, member by member.
        assert_eq!(oversized(Verdict::deny(at(REASON_MAX_BYTES))), None);
        assert_eq!(
            oversized(Verdict::deny(at(REASON_MAX_BYTES + 1))),
            Some("reason")
        );
        // The 3 MB reason that once reached the model.
        assert_eq!(oversized(Verdict::deny(at(3_000_000))), Some("reason"));
        let msg = |n| Verdict::deny("p").with_message(at(n));
        assert_eq!(oversized(msg(MESSAGE_MAX_BYTES)), None);
        assert_eq!(oversized(msg(MESSAGE_MAX_BYTES + 1)), Some("message"));
        let warned = |reason: usize, message: usize| {
            Verdict::allow().with_warning(Warning {
                reason: Some(at(reason)),
                message: Some(at(message)),
            })
        };
        assert_eq!(oversized(warned(REASON_MAX_BYTES, MESSAGE_MAX_BYTES)), None);
        assert_eq!(
            oversized(warned(REASON_MAX_BYTES + 1, 1)),
            Some("warnings[].reason")
        );
        assert_eq!(
            oversized(warned(1, MESSAGE_MAX_BYTES + 1)),
            Some("warnings[].message")
        );
        let many_warnings = (0..=WARNINGS_MAX).fold(Verdict::allow(), |v, i| {
            v.with_warning(Warning {
                reason: Some(format!("w{i}")),
                message: None,
            })
        });
        assert_eq!(oversized(many_warnings), Some("warnings"));
        let many_labels =
            (0..=RESULT_LABELS_MAX).fold(Verdict::allow(), |v, i| v.with_label(format!("l{i}")));
        assert_eq!(oversized(many_labels), Some("result_labels"));
        assert_eq!(
            oversized(Verdict::allow().with_label(at(LABEL_MAX_BYTES + 1))),
            Some("result_labels[]")
        );
        let path = format!("$target{}", ".a".repeat(TRANSFORM_PATH_MAX_BYTES));
        assert_eq!(
            oversized(Verdict::transform(path, json!(1))),
            Some("transform.path")
        );
        let mut approval = Map::new();
        approval.insert("why".into(), json!(at(APPROVAL_MAX_BYTES)));
        assert_eq!(
            oversized(Verdict::escalate("p").with_approval(approval)),
            Some("approval")
        );
        let err = InterceptorResponse::from(Verdict::deny(at(REASON_MAX_BYTES + 1)))
            .validate()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("verdict reason exceeds its bound of {REASON_MAX_BYTES}"),
            "the message names the rule, never the content"
        );
    }
}
