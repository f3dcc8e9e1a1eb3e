//! Claude Code's hooks (and Codex's, which share the format): the JSON
//! payload each event receives on stdin or as an HTTP body, and the JSON
//! output that carries a decision back. Unknown payload members
//! (`prompt_id`, `effort`, …) are ignored; a missing required member is
//! an error, never a default.
//!
//! Outputs: `PreToolUse` answers in `hookSpecificOutput`
//! (`permissionDecision` `deny` / `ask` with `permissionDecisionReason`,
//! `allow` with `updatedInput` for a rewrite); `UserPromptSubmit`,
//! `PostToolUse` and `Stop` block with `{"decision": "block", "reason"}`;
//! a denied start stops the agent with `{"continue": false, "stopReason"}`.
//! A step that proceeds unchanged gets `{}`: the agent's own permission
//! rules still apply.

use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// Claude Code can rewrite a tool's arguments and ask the user; it cannot
/// rewrite a prompt or a built-in tool's result.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    rewrite_tool_input: true,
    ask: true,
    block_prompt: true,
    block_post_tool: true,
    ..Capabilities::NONE
};

/// Decodes a payload of agent `agent`.
pub(super) fn decode(agent: &'static str, payload: &[u8]) -> Result<HookCall, Error> {
    let bad = |reason: String| Error::Payload { agent, reason };
    let value: Value =
        serde_json::from_slice(payload).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Value::Object(m) = value else {
        return Err(bad("not a JSON object".into()));
    };
    let text = |key: &str| -> Result<String, Error> {
        match m.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(format!("`{key}` is not a string"))),
            None => Err(bad(format!("`{key}` is missing"))),
        }
    };
    let optional = |key: &str| m.get(key).and_then(Value::as_str).map(str::to_owned);
    let session_id = text("session_id")?;
    let event_name = text("hook_event_name")?;
    let tool = |m: &Map<String, Value>| -> Result<(String, String, Value), Error> {
        let name = text("tool_name")?;
        let id = text("tool_use_id")?;
        let input = match m.get("tool_input") {
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(bad("`tool_input` is not an object".into())),
            None => return Err(bad("`tool_input` is missing".into())),
        };
        Ok((id, name, input))
    };
    let event = match event_name.as_str() {
        "SessionStart" => Event::SessionStart {
            source: optional("source"),
        },
        "UserPromptSubmit" => Event::Prompt {
            prompt: text("prompt")?,
        },
        "PreToolUse" => {
            let (id, name, input) = tool(&m)?;
            Event::PreTool { id, name, input }
        }
        "PostToolUse" => {
            let (id, name, input) = tool(&m)?;
            let response = m
                .get("tool_response")
                .cloned()
                .ok_or_else(|| bad("`tool_response` is missing".into()))?;
            Event::PostTool {
                id,
                name,
                input,
                response,
                is_error: false,
            }
        }
        "Stop" => Event::Stop {
            message: m
                .get("last_assistant_message")
                .cloned()
                .unwrap_or(Value::Null),
        },
        "SessionEnd" => Event::SessionEnd,
        other => {
            return Err(bad(format!(
                "event {:?} is not governed by hookwire (SessionStart, UserPromptSubmit, \
                 PreToolUse, PostToolUse, Stop, SessionEnd are); remove its hook",
                other.chars().take(64).collect::<String>()
            )));
        }
    };
    Ok(HookCall {
        session_id,
        event_name,
        cwd: optional("cwd"),
        event,
    })
}

/// The output for `outcome` at `event`.
pub(super) fn encode(event: &Event, outcome: &Outcome) -> Value {
    let pre_tool = |decision: &str, reason: &str, input: Option<&Value>| {
        let mut out = json!({
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        });
        if let (Some(input), Some(o)) = (input, out.as_object_mut()) {
            o.insert("updatedInput".into(), input.clone());
        }
        json!({ "hookSpecificOutput": out })
    };
    let block = |reason: &str| json!({"decision": "block", "reason": reason});
    match (event, outcome) {
        (_, Outcome::Proceed) => json!({}),
        (_, Outcome::Stop { reason }) => stop_agent(reason),
        (Event::PreTool { .. }, Outcome::Rewrite(input)) => pre_tool(
            "allow",
            "hookwire: the arguments were rewritten by policy",
            Some(input),
        ),
        (Event::PreTool { .. }, Outcome::Block { reason }) => pre_tool("deny", reason, None),
        (Event::PreTool { .. }, Outcome::Ask { reason }) => pre_tool("ask", reason, None),
        (Event::SessionStart { .. } | Event::SessionEnd, Outcome::Block { reason }) => {
            stop_agent(reason)
        }
        // The core produces neither a rewrite nor an ask where the
        // capabilities say the agent has none; were one to arrive, it
        // blocks rather than passing unapplied.
        (_, Outcome::Block { reason } | Outcome::Ask { reason }) => block(reason),
        (_, Outcome::Rewrite(_)) => block("hookwire: a rewrite this hook cannot apply"),
    }
}

/// The output every event honours: the agent stops.
pub(super) fn stop_agent(reason: &str) -> Value {
    json!({"continue": false, "stopReason": reason})
}

#[cfg(test)]
mod tests;
