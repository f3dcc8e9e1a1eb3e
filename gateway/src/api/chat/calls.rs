//! Chat tool calls: the `tool_calls` of a message (a replayed assistant
//! turn, an upstream's answer) read into hookwire's [`ToolCall`], and a
//! permitted call written back in the API's shape (in a whole answer and
//! in a stream's chunks).

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use crate::bounds::MAX_TOOL_CALLS;

/// hookwire's [`ToolCall`] for each tool call of a message (`arguments`
/// decoded; text that is not JSON stays a string).
pub(crate) fn tool_calls_of(message: &Value) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let calls = calls.as_array().ok_or("tool_calls must be an array")?;
    if calls.len() > MAX_TOOL_CALLS {
        return Err(format!("more than {MAX_TOOL_CALLS} tool calls"));
    }
    calls
        .iter()
        .map(|c| {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .ok_or("a tool call has no id")?;
            let f = c.get("function").ok_or("a tool call has no function")?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool call has no function name")?;
            let args = f.get("arguments").and_then(Value::as_str).unwrap_or("{}");
            let args = serde_json::from_str(args).unwrap_or_else(|_| Value::from(args));
            Ok(ToolCall::new(id, name, args))
        })
        .collect()
}

/// The Chat Completions tool call for hookwire's [`ToolCall`].
pub(crate) fn chat_tool_call(call: &ToolCall) -> Value {
    let arguments = match &call.args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    json!({"id": call.id, "type": "function",
           "function": {"name": call.name, "arguments": arguments}})
}
