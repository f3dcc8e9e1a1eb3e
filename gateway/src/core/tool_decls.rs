//! The request's tools as `pre_model_call` shows them (AGENT-HOOKS §4.5:
//! the context SHOULD carry the tool declarations the model will see):
//! one `tool_decl` per declared tool, in the order sent, with its name,
//! its description and its schema, and for a tool the provider runs (a
//! hosted or server tool, a namespace of tools) its whole declaration as
//! `config`, so that a policy can stop a request by its tools. The
//! gateway cannot write a changed declaration back: a transform that
//! changes `tools` fails closed.

use serde::Deserialize;
use serde_json::{Map, Value};

/// The member of a request body this module reads; the rest is skipped
/// unread.
#[derive(Deserialize)]
struct ToolsOnly {
    #[serde(default)]
    tools: Option<Value>,
}

/// The `tool_decl`s of a request body (empty when it declares none; the
/// adapter has already checked the body and bounded its tools).
pub(crate) fn of(body: &[u8]) -> Vec<Value> {
    let tools = serde_json::from_slice::<ToolsOnly>(body)
        .ok()
        .and_then(|t| t.tools);
    let Some(Value::Array(tools)) = tools else {
        return Vec::new();
    };
    tools.iter().map(decl).collect()
}

/// One tool's `tool_decl`: Chat `{type: function, function: {name,
/// description, parameters}}`, Responses `{type: function, name,
/// description, parameters}` or a custom tool's `format`, Messages
/// `{name, description, input_schema}`; any other typed tool is the
/// provider's (`web_search`, `web_search_20250305`, `namespace`, …),
/// named by its `name` or else its `type`, with its declaration whole.
fn decl(tool: &Value) -> Value {
    let inner = tool.get("function").unwrap_or(tool);
    let kind = tool.get("type").and_then(Value::as_str);
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let name = str_of(inner, "name")
        .or_else(|| kind.map(str::to_owned))
        .unwrap_or_default();
    let mut d = Map::new();
    d.insert("name".into(), Value::from(name));
    if let Some(desc) = str_of(inner, "description") {
        d.insert("description".into(), Value::from(desc));
    }
    if let Some(schema) = ["parameters", "input_schema", "format"]
        .iter()
        .find_map(|k| inner.get(*k).filter(|s| s.is_object()))
    {
        d.insert("schema".into(), schema.clone());
    }
    let runs_at_client = matches!(kind, None | Some("function" | "custom"));
    if !runs_at_client {
        d.insert("config".into(), tool.clone());
    }
    Value::Object(d)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_api_s_tools_become_tool_decls() {
        let body = json!({"model": "m", "tools": [
            {"type": "function", "function": {"name": "bash", "description": "Run it",
                                              "parameters": {"type": "object"}}},
            {"type": "function", "name": "ls", "description": "List", "parameters": {}},
            {"type": "web_search", "search_context_size": "low"},
            {"name": "cat", "description": "Read", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
            {"type": "custom", "name": "patch", "format": {"type": "text"}},
        ]});
        let decls = of(body.to_string().as_bytes());
        assert_eq!(
            decls,
            [
                json!({"name": "bash", "description": "Run it", "schema": {"type": "object"}}),
                json!({"name": "ls", "description": "List", "schema": {}}),
                json!({"name": "web_search",
                       "config": {"type": "web_search", "search_context_size": "low"}}),
                json!({"name": "cat", "description": "Read", "schema": {"type": "object"}}),
                json!({"name": "web_search", "config":
                       {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}}),
                json!({"name": "patch", "schema": {"type": "text"}}),
            ]
        );
        assert!(of(b"{\"model\": \"m\"}").is_empty());
        assert!(of(b"{\"tools\": null}").is_empty());
    }
}
