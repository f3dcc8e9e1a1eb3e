//! Gemini CLI's hooks: the JSON payload each event receives on stdin and
//! the JSON output that carries a decision back (`decision: "deny"` with
//! `reason`; `hookSpecificOutput.tool_input`, merged over the model's
//! arguments, for a rewrite; `{"continue": false, "stopReason"}` to stop
//! the agent loop). Unknown payload members (`timestamp`,
//! `mcp_context`, …) are ignored.
//!
//! Gemini CLI gives a tool call no id. The pairing id of a `BeforeTool`
//! and its `AfterTool` is derived from the tool's name and arguments
//! (`gemini:` and the first 16 hex digits of the SHA-256 of both), so the
//! two events of one call meet; two identical calls in flight at once
//! share it, and the second is refused by the host (blocked).
//!
//! Its `SessionStart` is advisory: a denied start cannot stop the agent,
//! but every later event of the session is blocked. A rewrite that would
//! remove an argument cannot be expressed by a merge, and blocks.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// Gemini CLI can rewrite a tool's arguments (by merge); it has no ask,
/// and hookwire does not yet map a rewrite onto its text-only
/// `tool_output` or its prompt.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    rewrite_tool_input: true,
    rewrite_tool_output: false,
    rewrite_prompt: false,
    ask: false,
};

/// The pairing id of a call of `name` with `input`.
fn call_id(name: &str, input: &Value) -> String {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(input.to_string().as_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("gemini:{hex}")
}

/// Decodes a Gemini CLI payload.
pub(super) fn decode(payload: &[u8]) -> Result<HookCall, Error> {
    let agent = "gemini-cli";
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
    let session_id = text("session_id")?;
    let event_name = text("hook_event_name")?;
    let tool = |m: &Map<String, Value>| -> Result<(String, String, Value), Error> {
        let name = text("tool_name")?;
        let input = match m.get("tool_input") {
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(bad("`tool_input` is not an object".into())),
            None => return Err(bad("`tool_input` is missing".into())),
        };
        Ok((call_id(&name, &input), name, input))
    };
    let event = match event_name.as_str() {
        "SessionStart" => Event::SessionStart {
            source: m.get("source").and_then(Value::as_str).map(str::to_owned),
        },
        "BeforeAgent" => Event::Prompt {
            prompt: text("prompt")?,
        },
        "BeforeTool" => {
            let (id, name, input) = tool(&m)?;
            Event::PreTool { id, name, input }
        }
        "AfterTool" => {
            let (id, name, input) = tool(&m)?;
            let response = m
                .get("tool_response")
                .cloned()
                .ok_or_else(|| bad("`tool_response` is missing".into()))?;
            let is_error = response.get("error").is_some_and(|e| !e.is_null());
            Event::PostTool {
                id,
                name,
                input,
                response,
                is_error,
            }
        }
        "AfterAgent" => Event::Stop {
            message: m.get("prompt_response").cloned().unwrap_or(Value::Null),
        },
        "SessionEnd" => Event::SessionEnd,
        other => {
            return Err(bad(format!(
                "event {:?} is not governed by hookwire (SessionStart, BeforeAgent, BeforeTool, \
                 AfterTool, AfterAgent, SessionEnd are); remove its hook",
                other.chars().take(64).collect::<String>()
            )));
        }
    };
    Ok(HookCall {
        session_id,
        event_name,
        cwd: m.get("cwd").and_then(Value::as_str).map(str::to_owned),
        event,
    })
}

/// The output for `outcome` at `event`.
pub(super) fn encode(event: &Event, outcome: &Outcome) -> Value {
    let deny = |reason: &str| json!({"decision": "deny", "reason": reason});
    match (event, outcome) {
        (_, Outcome::Proceed) => json!({}),
        (_, Outcome::Stop { reason }) => stop_agent(reason),
        (Event::SessionStart { .. } | Event::SessionEnd, Outcome::Block { reason }) => {
            stop_agent(reason)
        }
        (Event::PreTool { input, .. }, Outcome::Rewrite(rewritten)) => {
            // A merge over the model's arguments: it can change and add
            // members, not remove them.
            let keeps_every_member = match (input, rewritten) {
                (Value::Object(old), Value::Object(new)) => old.keys().all(|k| new.contains_key(k)),
                _ => false,
            };
            if keeps_every_member {
                json!({"hookSpecificOutput": {"tool_input": rewritten}})
            } else {
                deny(
                    "hookwire: the verdict removes tool arguments, which Gemini CLI cannot apply; blocked instead",
                )
            }
        }
        (_, Outcome::Block { reason } | Outcome::Ask { reason }) => deny(reason),
        (_, Outcome::Rewrite(_)) => deny("hookwire: a rewrite this hook cannot apply"),
    }
}

/// The output that stops the agent loop.
pub(super) fn stop_agent(reason: &str) -> Value {
    json!({"continue": false, "stopReason": reason})
}

#[cfg(test)]
mod tests;
