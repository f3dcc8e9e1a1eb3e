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
//!
//! Model events: `BeforeModel` is `pre_model_call` over the request's
//! `model` and `messages` (a rewrite is `hookSpecificOutput.llm_request`
//! with the new `messages`); `AfterModel` fires once per streamed chunk,
//! and each chunk is a `post_model_call` of its own text, governed as it
//! arrives, before Gemini shows it (a rewrite is
//! `hookSpecificOutput.llm_response`, the chunk replaced; a deny
//! discards the chunk and ends the turn). The whole answer is judged
//! again at `AfterAgent` (`output`). `AfterTool`'s result rewrite is
//! `hookSpecificOutput.tool_output`, which is text: a rewritten
//! `llmContent` (or a rewritten result that is a string) is applied,
//! any other rewrite blocks.

use serde_json::{Map, Value, json};

use super::derived::derived_id;
use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// Gemini CLI can rewrite a tool's arguments (by merge), its result (as
/// text), a model request's messages and a response chunk; it has no
/// ask and no prompt rewrite.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    rewrite_tool_input: true,
    rewrite_tool_output: true,
    rewrite_model_request: true,
    rewrite_model_response: true,
    block_prompt: true,
    block_post_tool: true,
    ..Capabilities::NONE
};

/// The text of a model response chunk (`candidates[0].content.parts`,
/// strings joined) and its `finishReason`, when it has one.
fn response_text(response: &Value) -> Result<(String, Option<String>), String> {
    let Some(candidate) = response.get("candidates").and_then(|c| c.get(0)) else {
        return Ok((String::new(), None));
    };
    let mut text = String::new();
    if let Some(parts) = candidate.pointer("/content/parts") {
        let Value::Array(parts) = parts else {
            return Err("`llm_response.candidates[0].content.parts` is not an array".into());
        };
        for part in parts {
            match part {
                Value::String(s) => text.push_str(s),
                _ => return Err("a response part is not text".into()),
            }
        }
    }
    let finish = candidate
        .get("finishReason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    Ok((text, finish))
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
        Ok((derived_id("gemini", &name, &input), name, input))
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
        "BeforeModel" | "AfterModel" => {
            let request = match m.get("llm_request") {
                Some(v @ Value::Object(_)) => v,
                _ => return Err(bad("`llm_request` is missing or not an object".into())),
            };
            let model = match request.get("model") {
                Some(Value::String(s)) => s.clone(),
                _ => return Err(bad("`llm_request.model` is missing or not a string".into())),
            };
            if event_name == "BeforeModel" {
                let messages = match request.get("messages") {
                    Some(v @ Value::Array(_)) => v.clone(),
                    _ => {
                        return Err(bad(
                            "`llm_request.messages` is missing or not an array".into()
                        ));
                    }
                };
                Event::PreModel { model, messages }
            } else {
                let response = match m.get("llm_response") {
                    Some(v @ Value::Object(_)) => v,
                    _ => return Err(bad("`llm_response` is missing or not an object".into())),
                };
                let (text, finish_reason) = response_text(response).map_err(bad)?;
                Event::PostModel {
                    model,
                    text,
                    finish_reason,
                }
            }
        }
        "AfterAgent" => Event::Stop {
            message: m.get("prompt_response").cloned().unwrap_or(Value::Null),
        },
        "SessionEnd" => Event::SessionEnd,
        other => {
            return Err(bad(format!(
                "event {:?} is not governed by hookwire (SessionStart, BeforeAgent, BeforeModel, \
                 AfterModel, BeforeTool, AfterTool, AfterAgent, SessionEnd are); remove its hook",
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
        (Event::PostTool { .. }, Outcome::Rewrite(result)) => {
            // `tool_output` is text: a rewritten `llmContent`, or a
            // result rewritten into a string.
            match result.get("llmContent").unwrap_or(result) {
                Value::String(text) => json!({"hookSpecificOutput": {"tool_output": text}}),
                _ => deny(
                    "hookwire: the verdict rewrites the tool result into something other than text, which Gemini CLI cannot apply; blocked instead",
                ),
            }
        }
        (Event::PreModel { .. }, Outcome::Rewrite(messages)) => {
            json!({"hookSpecificOutput": {"llm_request": {"messages": messages}}})
        }
        (Event::PostModel { finish_reason, .. }, Outcome::Rewrite(Value::String(text))) => {
            let mut candidate = json!({"content": {"role": "model", "parts": [text]}});
            if let (Some(reason), Some(c)) = (finish_reason, candidate.as_object_mut()) {
                c.insert("finishReason".into(), reason.clone().into());
            }
            json!({"hookSpecificOutput": {"llm_response": {"candidates": [candidate]}}})
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
