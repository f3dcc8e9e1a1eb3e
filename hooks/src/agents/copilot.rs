//! GitHub Copilot CLI's hooks (`.github/hooks/*.json`, the camelCase
//! event names): the JSON payload each event receives on stdin and the
//! JSON output that carries a decision back.
//!
//! The camelCase payload names no event: it is told by its members —
//! `toolResult` (`postToolUse`), `toolName` with a text `error`
//! (`postToolUseFailure`), `toolName` (`preToolUse`), `prompt`
//! (`userPromptSubmitted`), `stopReason` (`agentStop`), `reason`
//! (`sessionEnd`), `source` (`sessionStart`). A payload naming its event
//! (`hook_event_name`: the VS Code compatible format of the PascalCase
//! names) is refused, as are `errorOccurred`, `subagentStop` and the
//! others hookwire does not govern.
//!
//! The session is `sessionId`; a payload without one (older releases)
//! is keyed by its working directory (`cwd-` and 16 hex digits of its
//! SHA-256): one session per directory. A tool call has no id: the pre
//! and post events of one call are paired by an id derived from the
//! tool's name and arguments (`toolArgs`, JSON text, decoded when it is
//! JSON), like Gemini CLI's.
//!
//! Outputs: only `preToolUse` (`permissionDecision` `allow` / `deny` /
//! `ask` with `permissionDecisionReason`, `modifiedArgs` for a rewrite)
//! and `agentStop` (`decision: "block"` with `reason`: another turn with
//! the reason as its prompt) are read by Copilot. A denied start blocks
//! every later event; a denied prompt or tool result cannot be stopped:
//! it is recorded and quarantines the rest of the turn. A failing hook
//! (non-zero exit, timeout) is skipped by Copilot, never a block: the
//! command hook fails closed by printing the deny and exiting 0.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::derived::derived_id;
use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// Copilot can rewrite a tool's arguments and ask the user; it cannot stop
/// a prompt or withhold a tool's result.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    rewrite_tool_input: true,
    ask: true,
    ..Capabilities::NONE
};

/// The event a camelCase payload is, told by its members.
fn event_of(m: &Map<String, Value>) -> Option<&'static str> {
    let has = |k: &str| m.contains_key(k);
    Some(if has("toolResult") {
        "postToolUse"
    } else if has("toolName") && m.get("error").is_some_and(Value::is_string) {
        "postToolUseFailure"
    } else if has("toolName") {
        "preToolUse"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else if has("agentName") && has("stopReason") {
        "subagentStop"
    } else if has("agentName") {
        "subagentStart"
    } else if has("stopReason") {
        "agentStop"
    } else if has("error") {
        "errorOccurred"
    } else if has("reason") {
        "sessionEnd"
    } else if has("source") {
        "sessionStart"
    } else {
        return None;
    })
}

/// A tool's arguments: `toolArgs` decoded when it is JSON text.
fn arguments(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

/// Decodes a Copilot payload.
pub(super) fn decode(payload: &[u8]) -> Result<HookCall, Error> {
    let agent = "copilot";
    let bad = |reason: String| Error::Payload { agent, reason };
    let value: Value =
        serde_json::from_slice(payload).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Value::Object(m) = value else {
        return Err(bad("not a JSON object".into()));
    };
    if let Some(named) = m.get("hook_event_name") {
        let named: String = named.as_str().unwrap_or("?").chars().take(64).collect();
        return Err(bad(format!(
            "a payload naming its event ({named:?}: the VS Code compatible format of the \
             PascalCase names, or an event hookwire does not govern) is not supported: \
             configure the camelCase names sessionStart, userPromptSubmitted, preToolUse, \
             postToolUse, agentStop, sessionEnd"
        )));
    }
    let text = |key: &str| -> Result<String, Error> {
        match m.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(format!("`{key}` is not a string"))),
            None => Err(bad(format!("`{key}` is missing"))),
        }
    };
    let cwd = text("cwd")?;
    let session_id = match m.get("sessionId") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(bad("`sessionId` is not a string".into())),
        None => {
            let digest = Sha256::digest(cwd.as_bytes());
            let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            format!("cwd-{hex}")
        }
    };
    let event_name = event_of(&m)
        .ok_or_else(|| bad("the payload is none of the events hookwire governs".into()))?;
    let tool = || -> Result<(String, String, Value), Error> {
        let name = text("toolName")?;
        let input = arguments(
            m.get("toolArgs")
                .ok_or_else(|| bad("`toolArgs` is missing".into()))?,
        );
        Ok((derived_id("copilot", &name, &input), name, input))
    };
    let event = match event_name {
        "sessionStart" => Event::SessionStart {
            source: m.get("source").and_then(Value::as_str).map(str::to_owned),
        },
        "userPromptSubmitted" => Event::Prompt {
            prompt: text("prompt")?,
        },
        "preToolUse" => {
            let (id, name, input) = tool()?;
            Event::PreTool { id, name, input }
        }
        "postToolUse" | "postToolUseFailure" => {
            let (id, name, input) = tool()?;
            let failed = event_name == "postToolUseFailure";
            let response = if failed {
                json!({"error": m["error"]})
            } else {
                m["toolResult"].clone()
            };
            let is_error = failed
                || !matches!(
                    response.get("resultType").and_then(Value::as_str),
                    Some("success") | None
                );
            Event::PostTool {
                id,
                name,
                input,
                response,
                is_error,
            }
        }
        "agentStop" => Event::Stop {
            message: Value::Null,
        },
        "sessionEnd" => Event::SessionEnd,
        other => {
            return Err(bad(format!(
                "event {other:?} is not governed by hookwire (sessionStart, userPromptSubmitted, \
                 preToolUse, postToolUse, agentStop, sessionEnd are); remove its hook"
            )));
        }
    };
    Ok(HookCall {
        session_id,
        event_name: event_name.to_owned(),
        cwd: Some(cwd),
        event,
    })
}

/// The `preToolUse` answer.
fn pre_tool(decision: &str, reason: &str) -> Value {
    json!({"permissionDecision": decision, "permissionDecisionReason": reason})
}

/// The output for `outcome` at `event`.
pub(super) fn encode(event: &Event, outcome: &Outcome) -> Value {
    match (event, outcome) {
        (_, Outcome::Proceed) => json!({}),
        (Event::PreTool { .. }, Outcome::Rewrite(args @ Value::Object(_))) => {
            let mut out = pre_tool("allow", "hookwire: the arguments were rewritten by policy");
            if let Some(o) = out.as_object_mut() {
                o.insert("modifiedArgs".into(), args.clone());
            }
            out
        }
        (Event::PreTool { .. }, Outcome::Rewrite(_)) => pre_tool(
            "deny",
            "hookwire: the verdict rewrites the arguments into something other than an object, \
             which Copilot cannot apply; blocked instead",
        ),
        (Event::PreTool { .. }, Outcome::Ask { reason }) => pre_tool("ask", reason),
        (Event::PreTool { .. }, Outcome::Block { reason } | Outcome::Stop { reason }) => {
            pre_tool("deny", reason)
        }
        (
            Event::Stop { .. },
            Outcome::Block { reason } | Outcome::Ask { reason } | Outcome::Stop { reason },
        ) => {
            json!({"decision": "block", "reason": reason})
        }
        (Event::Stop { .. }, Outcome::Rewrite(_)) => json!({
            "decision": "block",
            "reason": "hookwire: a rewrite Copilot cannot apply at agentStop; blocked instead",
        }),
        // Copilot reads no other answer: the core has recorded the deny
        // and quarantined the turn (or blocks every later event of a
        // denied start).
        _ => json!({}),
    }
}

/// The output that blocks whichever event Copilot reads an answer of.
pub(super) fn stop_agent(reason: &str) -> Value {
    json!({
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
        "decision": "block",
        "reason": reason,
    })
}

#[cfg(test)]
mod tests;
