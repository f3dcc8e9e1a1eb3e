//! The members each interception point's context carries beyond the core
//! (§4.2): built from the typed arguments of the session's methods, and
//! by the stream mediator that emits through them.

use hookwire::InvalidContext;
use hookwire::json::InvalidJson;
use serde_json::{Map, Value, json};

use crate::payload::{InputRole, ShutdownReason, ToolCall, ToolResult};

/// `agent_startup`: the tools the agent registered.
pub(super) fn startup_members(tools_registered: Vec<String>) -> Map<String, Value> {
    one("agent_init", json!({"tools_registered": tools_registered}))
}

/// `agent_shutdown`: why the session ends.
pub(super) fn shutdown_members(reason: ShutdownReason) -> Map<String, Value> {
    one("summary", json!({"reason": reason.as_str()}))
}

/// `input`: the request entering the session and who sent it.
pub(super) fn input_members(content: Value, role: InputRole) -> Map<String, Value> {
    one("input", json!({"content": content, "role": role}))
}

/// `pre_model_call`: the model and the messages sent to it.
pub(super) fn pre_model_members(model_id: &str, messages: Value) -> Map<String, Value> {
    let mut m = one("model", json!({"id": model_id}));
    m.insert("messages".into(), messages);
    m
}

/// `post_model_call`: the model and its response.
pub(crate) fn post_model_members(model_id: &str, response: Value) -> Map<String, Value> {
    let mut m = one("model", json!({"id": model_id}));
    m.insert("response".into(), response);
    m
}

/// `pre_tool_call`: the call about to be made.
pub(super) fn pre_tool_members(call: &ToolCall) -> Map<String, Value> {
    one("tool_call", call.to_json())
}

/// `post_tool_call`: the call made and what the tool returned.
pub(super) fn post_tool_members(call: &ToolCall, result: &ToolResult) -> Map<String, Value> {
    let mut m = one("tool_call", call.to_json());
    m.insert(
        "tool_result".into(),
        json!({"value": result.value, "is_error": result.is_error}),
    );
    m
}

/// `output`: the answer about to reach the caller.
pub(super) fn output_members(content: Value) -> Map<String, Value> {
    one("output", json!({"content": content}))
}

/// Why a member given as JSON text cannot enter a context (§4.4).
pub(super) fn undecodable(member: &str, e: &InvalidJson) -> InvalidContext {
    InvalidContext::Json {
        member: member.to_owned(),
        problem: e.to_string(),
    }
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), value);
    m
}
