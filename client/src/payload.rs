//! Typed payloads for the conditional members of each point (§4.2), so a
//! host writes `ToolCall { .. }` instead of assembling JSON by hand.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `input.role` (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputRole {
    /// A person talking to the agent.
    User,
    /// The system prompt or operator instructions.
    System,
    /// Anything else entering the session (documents, web pages, events).
    External,
}

/// `summary.reason` at `agent_shutdown` (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownReason {
    /// The session ended normally.
    Completed,
    /// The session ended on an error (or a denied `agent_startup`).
    Error,
    /// The session was cancelled.
    Cancelled,
}

impl ShutdownReason {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A tool call as the model requested it and the tool receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Pairs `pre_tool_call` with `post_tool_call` (§3.1).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub args: Value,
}

impl ToolCall {
    /// A tool call with the given id, name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            args,
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        // Built from clones: `json!` would serialize each field into a new
        // value, walking the arguments through serde's machinery.
        let mut call = serde_json::Map::new();
        call.insert("id".into(), Value::String(self.id.clone()));
        call.insert("name".into(), Value::String(self.name.clone()));
        call.insert("args".into(), self.args.clone());
        Value::Object(call)
    }
}

/// What a tool returned (§4.2 `tool_result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The result value; the target at `post_tool_call`.
    pub value: Value,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// A model's response (§4.2 `response`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text or structured content; `null` when the model only called tools.
    pub content: Value,
    /// Requested tool calls; empty when none.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped, e.g. `stop` or `tool_calls`.
    pub finish_reason: String,
}

impl ModelResponse {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "content": self.content,
            "tool_calls": self.tool_calls.iter().map(ToolCall::to_json).collect::<Vec<_>>(),
            "finish_reason": self.finish_reason,
        })
    }

    /// Reads a (possibly transformed) response target back. `None` when a
    /// transform left it in a shape that is not a response.
    pub fn from_target(target: &Value) -> Option<Self> {
        serde_json::from_value(target.clone()).ok()
    }
}
