//! A context member only some bindings see: the callback token a model
//! gateway puts in its contexts (`extensions.hookwire.callback`) lets an
//! interceptor's own model calls go back through the gateway without
//! being intercepted again, so whoever holds it can skip the chain. It
//! reaches only the bindings granted it
//! ([`InterceptorBinding::receives_callback`](crate::InterceptorBinding::receives_callback));
//! every other binding, the approval seam (and so the approval service
//! and its approvers) get the context without it.
//!
//! A granted binding never sees the request's token itself either: its
//! copy carries the token derived for it ([`callback_token_for`]: the
//! request's token and the binding's name, hashed), which the gateway
//! redeems for that binding alone. So a token says which binding made a
//! nested call, and one binding's token is no other's.

use hookwire::AgentContext;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The extensions namespace the member lives in.
const NAMESPACE: &str = "hookwire";
/// The member of that namespace.
const CALLBACK: &str = "callback";

/// The callback token binding `binding` receives for the request whose
/// token is `token`: `hwcb_` and 64 hex digits, as the request's own.
/// The gateway computes the same for each granted binding when it mints
/// the request's token.
pub fn callback_token_for(token: &str, binding: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"hookwire-callback\0");
    h.update(token.as_bytes());
    h.update([0]);
    h.update(binding.as_bytes());
    format!("hwcb_{}", hex::encode(h.finalize()))
}

/// `ctx` with its callback token replaced by the one derived for
/// `binding`.
pub(crate) fn for_binding(ctx: &AgentContext, binding: &str) -> AgentContext {
    let mut out = ctx.clone();
    derive_in_place(&mut out, binding);
    out
}

/// Replaces the callback token in `ctx` with the one derived for
/// `binding` (a callback member without a string token is removed).
pub(crate) fn derive_in_place(ctx: &mut AgentContext, binding: &str) {
    let derived = ctx
        .get("extensions")
        .and_then(|e| e.get(NAMESPACE))
        .and_then(|h| h.get(CALLBACK))
        .and_then(|c| c.get("token"))
        .and_then(Value::as_str)
        .map(|t| callback_token_for(t, binding));
    let Some(derived) = derived else {
        strip_callback(ctx);
        return;
    };
    if let Some(Value::Object(ext)) = ctx.members_mut().get_mut("extensions")
        && let Some(Value::Object(ns)) = ext.get_mut(NAMESPACE)
        && let Some(Value::Object(cb)) = ns.get_mut(CALLBACK)
    {
        cb.insert("token".into(), Value::String(derived));
    }
}

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
    fn each_binding_gets_its_own_token_and_never_the_requests() {
        let c = ctx(json!({"hookwire": {"callback": {"token": "hwcb_req", "depth": 1}}}));
        let a = for_binding(&c, "judge-a");
        let b = for_binding(&c, "judge-b");
        let token = |c: &AgentContext| {
            c.get("extensions").unwrap()["hookwire"]["callback"]["token"].clone()
        };
        assert_eq!(token(&a), json!(callback_token_for("hwcb_req", "judge-a")));
        assert_ne!(token(&a), token(&b));
        assert_ne!(token(&a), json!("hwcb_req"));
        assert_eq!(token(&a).as_str().unwrap().len(), 69);
        assert_eq!(
            a.get("extensions").unwrap()["hookwire"]["callback"]["depth"],
            1,
            "the rest of the member stays"
        );
        let odd = ctx(json!({"hookwire": {"callback": {"token": 7}}}));
        assert!(!carries_callback(&for_binding(&odd, "judge-a")));
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
