//! Unit tests of the loader: one or more documents per refusal class and
//! bound, the equivalence of the load paths, secrets from the environment,
//! sealing and the record stamp.

mod load_paths;
mod refusals;
mod resolved_form;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hookwire::{InterceptionPoint as P, Mode, Profile, Verdict};
use serde_json::{Value, json};

use super::*;
use crate::binding::InterceptorBinding;
use crate::interceptor::{BoxError, interceptor_fn};
use crate::{Host, RecordLog, ShutdownReason, ToolCall};

const SECRET: &str = "s3cr3t-do-not-log";

/// A registry with the standard kinds and `test.verdict`, whose config
/// `{"deny": reason}` denies and `{}` allows.
fn registry() -> Registry {
    Registry::standard()
        .kind("test.verdict", |config, ctx| {
            let deny = match config.get("deny") {
                None => None,
                Some(Value::String(r)) => Some(r.clone()),
                Some(_) => return Err("config.deny must be a string".into()),
            };
            let f = interceptor_fn(move |_| {
                let v = deny.clone().map_or_else(Verdict::allow, Verdict::deny);
                async move { Ok::<_, BoxError>(v) }
            });
            Ok(InterceptorBinding::local(ctx.id, f))
        })
        .unwrap()
        .kind("test.panics", |_, _| panic!("resolver bug"))
        .unwrap()
        .identity_provider("hmac-k1", |_| Ok("k1:fixed".into()))
        .unwrap()
        .approval_redactor("strip", |ctx| ctx.clone())
        .unwrap()
}

fn doc(extra: Value) -> Value {
    let mut d = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "allow", "kind": "test.verdict"}],
    });
    for (k, v) in extra.as_object().unwrap() {
        d[k] = v.clone();
    }
    d
}

/// The refusal class of loading `value` as JSON text against `registry()`.
fn class_of(value: &Value) -> Option<RefusalClass> {
    class_of_text(&value.to_string())
}

fn class_of_text(text: &str) -> Option<RefusalClass> {
    let refused = Declaration::from_json(text)
        .and_then(|d| Host::declared("a", "hookwire").load(&d, &registry()));
    match refused {
        Ok(_) => None,
        Err(e) => {
            let r = e.refusal().expect("a refusal").clone();
            let shown = e.to_string();
            assert!(!shown.contains(SECRET), "finding echoes config: {shown}");
            assert!(
                r.findings
                    .iter()
                    .all(|f| f.detail.chars().count() <= MAX_DETAIL_CHARS)
            );
            Some(r.class)
        }
    }
}

#[track_caller]
fn refused(class: RefusalClass, docs: &[Value]) {
    for d in docs {
        assert_eq!(class_of(d), Some(class), "{d}");
    }
}
