//! Cursor's agent hooks (`.cursor/hooks.json`): the JSON payload each
//! event receives on stdin and the JSON output that carries a decision
//! back. The session is the `conversation_id`, stable across the turns of
//! one conversation (its `generation_id` changes with every user
//! message). Unknown payload members (`model`, `cursor_version`,
//! `user_email`, …) are ignored.
//!
//! Events: `sessionStart`, `beforeSubmitPrompt`, the generic `preToolUse`
//! and `postToolUse` (with Cursor's `tool_use_id`; tool names as Cursor
//! reports them: `Shell`, `Read`, `Write`, `MCP:…`), the tool-specific
//! `beforeShellExecution`, `beforeMCPExecution` and `beforeReadFile`
//! (pre-tool calls of `Shell`, the MCP tool and `Read`; no post event
//! pairs them, so each gets an id of its own), `stop` and `sessionEnd`.
//! `afterFileEdit` (and the other after-the-fact notifications) is not
//! governed: it can neither block nor rewrite, and `postToolUse` already
//! reports the edit tools with their name and result.
//!
//! Outputs: a pre-tool deny is `permission: "deny"` with `user_message`
//! and `agent_message` (and the `decision`/`reason` pair Cursor's
//! reference also gives for `preToolUse`); a prompt is stopped with
//! `continue: false`; a stop deny is a `followup_message` (Cursor submits
//! it as the next user message, at most five times in a row); a post-tool
//! deny cannot withhold the result (Cursor has no such answer): it is
//! recorded, quarantines the rest of the turn and is passed to the model
//! as `additional_context`. Cursor's `ask` is not honoured in every run
//! mode, and no argument rewrite is documented that hookwire can rely
//! on: a liftable deny and a transform are blocks.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::derived::derived_id;
use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// Cursor can stop a prompt and deny a tool; it cannot withhold a tool's
/// result, rewrite anything hookwire relies on, or ask reliably.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    block_prompt: true,
    ..Capabilities::NONE
};

/// Numbers the pre-tool calls no post event pairs, so that two reads of
/// one file are two calls.
static UNPAIRED: AtomicU64 = AtomicU64::new(0);

/// Tool arguments as Cursor sends them: an object, or JSON text of one.
fn arguments(value: Option<&Value>, key: &str) -> Result<Value, String> {
    match value {
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(format!("`{key}` is text that is not a JSON object")),
        },
        Some(_) => Err(format!("`{key}` is not an object")),
        None => Err(format!("`{key}` is missing")),
    }
}

/// A pre-tool call no post event pairs: its id is its own.
fn unpaired(name: String, input: Value) -> Event {
    let n = UNPAIRED.fetch_add(1, Ordering::Relaxed);
    let id = format!("{}:{n}", derived_id("cursor", &name, &input));
    Event::PreTool { id, name, input }
}

/// Decodes a Cursor payload.
pub(super) fn decode(payload: &[u8]) -> Result<HookCall, Error> {
    let agent = "cursor";
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
    let session_id = text("conversation_id")?;
    let event_name = text("hook_event_name")?;
    let event = match event_name.as_str() {
        "sessionStart" => Event::SessionStart { source: None },
        "beforeSubmitPrompt" => Event::Prompt {
            prompt: text("prompt")?,
        },
        "preToolUse" => Event::PreTool {
            id: text("tool_use_id")?,
            name: text("tool_name")?,
            input: arguments(m.get("tool_input"), "tool_input").map_err(bad)?,
        },
        "beforeShellExecution" => {
            let mut input = Map::new();
            input.insert("command".into(), text("command")?.into());
            if let Some(cwd) = m.get("cwd").and_then(Value::as_str) {
                input.insert("cwd".into(), cwd.into());
            }
            unpaired("Shell".into(), Value::Object(input))
        }
        "beforeMCPExecution" => unpaired(
            text("tool_name")?,
            arguments(m.get("tool_input"), "tool_input").map_err(bad)?,
        ),
        "beforeReadFile" => unpaired("Read".into(), json!({"file_path": text("file_path")?})),
        "postToolUse" => Event::PostTool {
            id: text("tool_use_id")?,
            name: text("tool_name")?,
            input: arguments(m.get("tool_input"), "tool_input").map_err(bad)?,
            response: m
                .get("tool_output")
                .cloned()
                .ok_or_else(|| bad("`tool_output` is missing".into()))?,
            is_error: false,
        },
        "stop" => Event::Stop {
            message: Value::Null,
        },
        "sessionEnd" => Event::SessionEnd,
        other => {
            return Err(bad(format!(
                "event {:?} is not governed by hookwire (sessionStart, beforeSubmitPrompt, \
                 preToolUse, beforeShellExecution, beforeMCPExecution, beforeReadFile, \
                 postToolUse, stop, sessionEnd are); remove its hook",
                other.chars().take(64).collect::<String>()
            )));
        }
    };
    let cwd = m.get("cwd").and_then(Value::as_str).or_else(|| {
        m.get("workspace_roots")
            .and_then(|r| r.get(0))
            .and_then(Value::as_str)
    });
    Ok(HookCall {
        session_id,
        event_name,
        cwd: cwd.map(str::to_owned),
        event,
    })
}

/// A pre-tool deny in both spellings Cursor's reference gives.
fn deny_tool(reason: &str) -> Value {
    json!({
        "permission": "deny",
        "user_message": reason,
        "agent_message": reason,
        "decision": "deny",
        "reason": reason,
    })
}

/// The output for `outcome` at `event`.
pub(super) fn encode(event: &Event, outcome: &Outcome) -> Value {
    let reason = match outcome {
        Outcome::Proceed => {
            return match event {
                Event::Prompt { .. } => json!({"continue": true}),
                _ => json!({}),
            };
        }
        // The core rewrites nothing for Cursor (no capability); were a
        // rewrite to arrive, it blocks rather than passing unapplied.
        Outcome::Rewrite(_) => "hookwire: a rewrite Cursor cannot apply; blocked instead",
        Outcome::Block { reason } | Outcome::Ask { reason } | Outcome::Stop { reason } => reason,
    };
    match event {
        Event::PreTool { .. } => deny_tool(reason),
        Event::PostTool { .. } => json!({"additional_context": reason}),
        Event::Stop { .. } => json!({"followup_message": reason}),
        _ => json!({"continue": false, "user_message": reason}),
    }
}

/// The output that blocks whichever event it answers: a deny for a tool,
/// `continue: false` for a prompt or a start.
pub(super) fn stop_agent(reason: &str) -> Value {
    let mut out = deny_tool(reason);
    if let Some(o) = out.as_object_mut() {
        o.insert("continue".into(), false.into());
    }
    out
}

#[cfg(test)]
mod tests;
