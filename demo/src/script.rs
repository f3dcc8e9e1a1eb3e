//! The demo's script, the same in the buffered and the streaming run:
//! its session id, what the user asks, the mock model and the mock tool.

use hookwire_client::{ModelResponse, ToolCall};
use serde_json::{Value, json};

use crate::report::tool_report;

/// The id of the demo's one session, in both the buffered and the
/// streaming demo.
pub const SESSION_ID: &str = "demo-session-1";

/// What the demo user asks, in both the buffered and the streaming demo.
pub(crate) const REQUEST: &str = "Please free space in /tmp/build, then mail the report to jane.doe@example.com or call me at +1 415-555-0100.";

/// The mock model: first asks for two shell commands, then summarizes.
pub(crate) fn mock_model(turn: usize, messages: &[Value]) -> ModelResponse {
    match turn {
        0 => ModelResponse {
            content: Value::Null,
            tool_calls: vec![
                ToolCall::new("call-1", "bash", json!({"cmd": "rm -rf /tmp/build"})),
                ToolCall::new("call-2", "bash", json!({"cmd": "du -sh /tmp/build"})),
            ],
            finish_reason: "tool_calls".into(),
        },
        _ => ModelResponse {
            content: json!(tool_report(messages).concat().trim_end()),
            tool_calls: vec![],
            finish_reason: "stop".into(),
        },
    }
}

/// The mock tool: pretends to run a shell command.
pub(crate) fn mock_bash(args: &Value) -> Value {
    let cmd = args.get("cmd").and_then(Value::as_str).unwrap_or_default();
    json!({"stdout": format!("1.2G\t{}", cmd.rsplit(' ').next().unwrap_or("")), "exit_code": 0})
}
