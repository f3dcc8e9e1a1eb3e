//! A context member only some bindings see: the callback token a model
//! gateway puts in its contexts (`extensions.hookwire.callback`) lets an
//! interceptor's own model calls go back through the gateway without
//! being intercepted again, so whoever holds it can skip the chain. It
//! reaches only the bindings granted it
//! ([`InterceptorBinding::receives_callback`](crate::InterceptorBinding::receives_callback));
//! every other binding, the approval seam (and so the approval service
//! and its approvers) get the context without it.

use hookwire::AgentContext;
use serde_json::Value;

/// The extensions namespace the member lives in.
const NAMESPACE: &str = "hookwire";
/// The member of that namespace.
const CALLBACK: &str = "callback";

/// Whether `ctx` carries a callback token.
pub(crate) fn carries_callback(ctx: &AgentContext) -> bool {
    ctx.get("extensions")
        .and_then(|e| e.get(NAMESPACE))
        .is_some_and(|h| h.get(CALLBACK).is_some())
}

/// `ctx` without its callback token (the namespace, and `extensions`,
/// dropped when nothing else is left in them).
pub(crate) fn without_callback(ctx: &AgentContext) -> AgentContext {
    let mut out = ctx.clone();
    strip_callback(&mut out);
    out
}

/// Removes the callback token from `ctx` in place.
pub(crate) fn strip_callback(ctx: &mut AgentContext) {
    let members = ctx.members_mut();
    let Some(Value::Object(ext)) = members.get_mut("extensions") else {
        return;
    };
    if let Some(Value::Object(ns)) = ext.get_mut(NAMESPACE) {
        ns.remove(CALLBACK);
        if ns.is_empty() {
            ext.remove(NAMESPACE);
        }
    }
    if ext.is_empty() {
        members.remove("extensions");
    }
}

#[cfg(test)]
mod tests {
    use hookwire::InterceptionPoint;
    use serde_json::{Map, json};

    use super::*;

    fn ctx(extensions: Value) -> AgentContext {
        let mut m = Map::new();
        m.insert("extensions".into(), extensions);
        AgentContext::from_members_unchecked(InterceptionPoint::PreModelCall, m)
    }

    #[test]
    fn only_the_token_goes() {
        let c = ctx(
            json!({"hookwire": {"callback": {"token": "t"}, "content_parts": []},
                           "acme": {"x": 1}}),
        );
        assert!(carries_callback(&c));
        let s = without_callback(&c);
        assert!(!carries_callback(&s));
        assert_eq!(
            s.get("extensions"),
            Some(&json!({"hookwire": {"content_parts": []}, "acme": {"x": 1}}))
        );
        let alone = without_callback(&ctx(json!({"hookwire": {"callback": {"token": "t"}}})));
        assert_eq!(alone.get("extensions"), None, "nothing left: no member");
        let none = ctx(json!({"acme": {}}));
        assert!(!carries_callback(&none));
        assert_eq!(
            without_callback(&none).get("extensions"),
            Some(&json!({"acme": {}}))
        );
    }
}
