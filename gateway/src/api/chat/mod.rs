//! The OpenAI Chat Completions adapter (`POST /v1/chat/completions`).
//!
//! A request's `messages` map one to one onto [`Entry`]s (entry `i` is
//! message `i`): `system`/`developer` → instructions, `user` → a user
//! entry, `assistant` → a model turn with its `tool_calls`, `tool` → the
//! result of `tool_call_id`; any other role passes through as
//! [`Entry::Other`]; the deprecated function calling (`functions`,
//! `function_call`, `role: "function"`) is refused with a 400 naming the
//! member. A `content` that is an array of parts is governed by
//! its text parts (joined); the other parts (`image_url`, `input_audio`,
//! `file`) pass through untouched and are named in the context. Exactly
//! one choice is governed (`n` must be 1). Whole answers are in
//! `response`, streamed ones in `stream`; a message's content is read and
//! rewritten in `content`, its tool calls in `calls`, for requests and
//! answers alike.

mod calls;
mod content;
pub(crate) mod members;
mod response;
mod stream;

use axum::http::StatusCode;
use serde_json::{Map, Value};

pub(crate) use calls::chat_tool_call;
use calls::tool_calls_of;
pub use content::MAX_PARTS;
use content::{replace_text, text_of};
pub(crate) use response::ChatResponse;
pub(crate) use stream::{ChatAssembler, ChatWriter};

use crate::api::model::{Api, ApiRequest, Entry, Rewrite, TurnRequest};
use crate::bounds::MAX_MESSAGES;
use crate::error::Error;
use crate::extension::ModelOverrides;

/// How many tools one request may declare (the API's own limit).
pub const MAX_TOOLS: usize = 128;

/// OpenAI Chat Completions.
pub(crate) struct Chat;

impl Api for Chat {
    const NAME: &'static str = "chat_completions";
    const ROUTE: &'static str = "/v1/chat/completions";
    const UPSTREAM_PATH: &'static str = "/chat/completions";
    type Request = ChatRequest;
    type Response = ChatResponse;
    type Assembler = ChatAssembler;
    type Writer = ChatWriter;

    fn decode_request(body: &[u8]) -> Result<ChatRequest, Error> {
        ChatRequest::decode(body)
    }

    fn decode_response(body: &[u8]) -> Result<ChatResponse, Error> {
        ChatResponse::decode(body)
    }

    fn error_body(error: &Error) -> (StatusCode, Value) {
        (error.status(), error.to_openai_json())
    }
}

/// A decoded Chat Completions request: its messages, the rest of the body
/// as sent, and the neutral view of both.
#[derive(Debug, Clone)]
pub(crate) struct ChatRequest {
    /// Every member but `messages`.
    body: Map<String, Value>,
    /// `messages`, rewritten in place.
    messages: Vec<Value>,
    view: TurnRequest,
}

impl ChatRequest {
    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let bad = |m: &str| Error::BadRequest(m.into());
        let mut body: Map<String, Value> =
            serde_json::from_slice(bytes).map_err(|_| bad("the body is not a JSON object"))?;
        let model = match body.get("model") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(bad("model must be a string")),
        };
        if body.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
            return Err(bad("n must be 1: the gateway governs exactly one choice"));
        }
        for legacy in LEGACY_MEMBERS {
            if body.get(legacy).is_some_and(|v| !v.is_null()) {
                return Err(Error::BadRequest(format!(
                    "{legacy} is not governed: declare tools and use tool_calls instead"
                )));
            }
        }
        let messages = match body.remove("messages") {
            Some(Value::Array(m)) if m.is_empty() => return Err(bad("messages must not be empty")),
            Some(Value::Array(m)) if m.len() > MAX_MESSAGES => {
                return Err(Error::BadRequest(format!(
                    "too many messages: at most {MAX_MESSAGES}"
                )));
            }
            Some(Value::Array(m)) => m,
            _ => return Err(bad("messages must be an array of messages with a role")),
        };
        let entries = messages
            .iter()
            .enumerate()
            .map(|(i, m)| entry_of(m).map_err(|e| Error::BadRequest(format!("messages[{i}]: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let view = TurnRequest {
            model,
            stream: body.get("stream") == Some(&Value::Bool(true)),
            tools: tool_names(&body)?,
            entries,
            continues: None,
        };
        Ok(Self {
            body,
            messages,
            view,
        })
    }
}

impl ApiRequest for ChatRequest {
    fn view(&self) -> &TurnRequest {
        &self.view
    }

    fn rewrite(&mut self, index: usize, rewrite: Rewrite) -> Result<(), Error> {
        let (Some(message), Some(entry)) = (
            self.messages.get_mut(index),
            self.view.entries.get_mut(index),
        ) else {
            return Err(Error::BadRequest(format!("no message {index} to rewrite")));
        };
        match (&rewrite, entry) {
            (
                Rewrite::Text(text),
                Entry::Instructions(t) | Entry::User(t) | Entry::Assistant { text: t, .. },
            ) => {
                message["content"] = replace_text(message.get("content"), text);
                t.text = text.clone();
            }
            (Rewrite::ToolResult { text, .. }, Entry::ToolResult { result, .. }) => {
                // Chat Completions has no error flag on a tool message.
                message["content"] = Value::from(text.clone());
                *result = Value::from(text.clone());
            }
            (_, entry) => {
                return Err(Error::BadRequest(format!(
                    "message {index} cannot take {rewrite:?}: it is {entry:?}"
                )));
            }
        }
        Ok(())
    }

    fn apply_overrides(&mut self, overrides: &ModelOverrides) {
        self.body.insert(
            "messages".into(),
            Value::Array(std::mem::take(&mut self.messages)),
        );
        overrides.apply(&mut self.body);
        if let Some(Value::Array(m)) = self.body.remove("messages") {
            self.messages = m;
        }
        if let Some(m) = self.body.get("model").and_then(Value::as_str) {
            self.view.model = m.to_owned();
        }
    }

    fn into_body(mut self) -> Map<String, Value> {
        self.body
            .insert("messages".into(), Value::Array(self.messages));
        self.body
    }
}

/// The deprecated function-calling members of a request. Refused, not
/// governed: a legacy call has no id, so its result (a `function`
/// message naming only the function) cannot be paired with the call the
/// chain permitted, and every current client sends `tools` instead.
pub(crate) const LEGACY_MEMBERS: [&str; 2] = ["functions", "function_call"];

/// The entry of one message.
fn entry_of(message: &Value) -> Result<Entry, String> {
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .ok_or("a message needs a string role")?;
    if role == "function" {
        return Err("role \"function\" is not governed: send tool results as role \"tool\"".into());
    }
    if message.get("function_call").is_some_and(|f| !f.is_null()) {
        return Err("function_call is not governed: replay calls as tool_calls".into());
    }
    let content = message.get("content");
    Ok(match role {
        "system" | "developer" => Entry::Instructions(text_of(content)?),
        "user" => Entry::User(text_of(content)?),
        "assistant" => Entry::Assistant {
            text: text_of(content)?,
            tool_calls: tool_calls_of(message)?,
        },
        "tool" => Entry::ToolResult {
            call_id: message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or("a tool message needs a string tool_call_id")?
                .to_owned(),
            result: content.cloned().unwrap_or(Value::Null),
            is_error: false,
        },
        other => Entry::Other(other.to_owned()),
    })
}

/// The names of the request's function tools, sorted and deduplicated.
fn tool_names(body: &Map<String, Value>) -> Result<Vec<String>, Error> {
    let tools = match body.get("tools") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(t)) if t.len() > MAX_TOOLS => {
            return Err(Error::BadRequest(format!(
                "too many tools: at most {MAX_TOOLS}"
            )));
        }
        Some(Value::Array(t)) => t,
        Some(_) => return Err(Error::BadRequest("tools must be an array".into())),
    };
    let mut names: Vec<String> = tools
        .iter()
        .filter_map(|t| t.get("function")?.get("name")?.as_str())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_copies;
