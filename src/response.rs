//! The interceptor response envelope (§5.5): a verdict plus namespaced
//! transport metadata, and the one validation every response gets before a
//! host enforces it, whether it came from a service over the wire or from
//! an interceptor in the host's own process.

use serde_json::{Map, Value};

use crate::canonical::{Canonicalizer, View};
use crate::context::is_namespace;
use crate::verdict::{InvalidVerdict, RESPONSE_EXTENSIONS_MAX_BYTES, Verdict};

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

impl InterceptorResponse {
    /// §5 validation of the verdict, then the §5.5 rules on `extensions`:
    /// every namespace matches `^[a-z][a-z0-9_]*$` and the whole map is at
    /// most [`RESPONSE_EXTENSIONS_MAX_BYTES`] canonical bytes. A host
    /// enforces only responses that pass; the wire decoder and the
    /// in-process path both call this, so one violation is one error
    /// wherever the response came from.
    pub fn validate(&self) -> Result<(), InvalidVerdict> {
        self.verdict.validate()?;
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
}
