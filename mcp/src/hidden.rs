//! Hidden tools as a binding of the host's chain, so that a hidden tool
//! called anyway is a deny on the record, not an allow the proxy then
//! disregards. The kind `hookwire.mcp_hidden_tools` (config `{"tools":
//! [NAME…]}`) is an in-process interceptor denying `pre_tool_call` for
//! those names with the reason [`HIDDEN_REASON`]; a declaration may bind
//! it itself, and `--hide-tool` adds one binding of it first in the chain
//! ([`with_hidden_binding`]). Every name a binding of the kind lists is
//! also kept out of `tools/list` ([`HiddenTools::names`]).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use hookwire::{InterceptionPoint, InterceptorResponse, Verdict};
use hookwire_client::declaration::Registry;
use hookwire_client::{BoxError, InterceptorBinding, interceptor_fn};
use serde_json::{Map, Value, json};

/// The binding kind listing hidden tools.
pub const HIDDEN_KIND: &str = "hookwire.mcp_hidden_tools";
/// The id of the binding `--hide-tool` adds.
pub const HIDDEN_BINDING_ID: &str = "hookwire-mcp-hidden-tools";
/// The reason of a hidden tool's deny.
pub const HIDDEN_REASON: &str = "mcp:tool_hidden";
/// The most names one binding may list.
const MAX_HIDDEN: usize = 1024;

/// The names every binding of [`HIDDEN_KIND`] resolved so far lists.
#[derive(Debug, Clone, Default)]
pub struct HiddenTools(Arc<Mutex<BTreeSet<String>>>);

impl HiddenTools {
    /// Registers [`HIDDEN_KIND`] in `registry`; the names its bindings
    /// list are collected here as the declaration loads.
    pub fn register(&self, registry: Registry) -> Result<Registry, hookwire_client::Error> {
        let collected = self.clone();
        let registry = registry.kind(HIDDEN_KIND, move |config, ctx| {
            let names = tool_names(config)?;
            if ctx.at.iter().any(|p| *p != InterceptionPoint::PreToolCall) {
                return Err("bind it at pre_tool_call only (\"at\": [\"pre_tool_call\"])".into());
            }
            collected
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(names.iter().cloned());
            let names = Arc::new(names);
            let deny = interceptor_fn(move |ctx| {
                let names = names.clone();
                async move {
                    let name = ctx
                        .get("tool_call")
                        .and_then(|c| c.get("name"))
                        .and_then(Value::as_str);
                    let verdict = match name {
                        Some(n) if names.contains(n) => {
                            let mut v = Verdict::deny(HIDDEN_REASON);
                            v.message =
                                Some(format!("tool {n:?} is not available through this proxy"));
                            v
                        }
                        _ => Verdict::allow(),
                    };
                    Ok::<_, BoxError>(InterceptorResponse {
                        verdict,
                        extensions: Map::new(),
                    })
                }
            });
            Ok(InterceptorBinding::local(ctx.id, deny))
        })?;
        Ok(registry)
    }

    /// Every hidden name.
    pub fn names(&self) -> BTreeSet<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn tool_names(config: &Value) -> Result<BTreeSet<String>, String> {
    let bad = || "config must be {\"tools\": [NAME, …]} (non-empty strings)".to_owned();
    let tools = config
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if tools.len() > MAX_HIDDEN {
        return Err(format!("config.tools lists more than {MAX_HIDDEN} names"));
    }
    tools
        .iter()
        .map(|t| {
            t.as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(bad)
        })
        .collect()
}

/// A declaration document with a binding of [`HIDDEN_KIND`] for `names`
/// first in its chain (nothing changes when `names` is empty).
pub fn with_hidden_binding(mut document: Value, names: &BTreeSet<String>) -> Value {
    if names.is_empty() {
        return document;
    }
    let binding = json!({
        "id": HIDDEN_BINDING_ID,
        "kind": HIDDEN_KIND,
        "config": {"tools": names},
        "at": ["pre_tool_call"],
    });
    if let Some(Value::Array(bindings)) = document.get_mut("bindings") {
        bindings.insert(0, binding);
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_goes_first_and_lists_the_names() {
        let doc = json!({"bindings": [{"id": "p"}]});
        let names: BTreeSet<String> = ["b".to_owned(), "a".to_owned()].into();
        let out = with_hidden_binding(doc.clone(), &names);
        assert_eq!(out["bindings"][0]["kind"], HIDDEN_KIND);
        assert_eq!(out["bindings"][0]["config"]["tools"], json!(["a", "b"]));
        assert_eq!(out["bindings"][1]["id"], "p");
        assert_eq!(with_hidden_binding(doc.clone(), &BTreeSet::new()), doc);
    }

    #[test]
    fn configs_are_checked() {
        assert!(tool_names(&json!({"tools": ["a"]})).is_ok());
        for bad in [
            json!({}),
            json!({"tools": "a"}),
            json!({"tools": [""]}),
            json!({"tools": [1]}),
        ] {
            assert!(tool_names(&bad).is_err(), "{bad}");
        }
    }
}
