//! A Messages request: decoded and checked, its transcript as neutral
//! entries, and the verdicts' rewrites and the model overrides written
//! back into the body that goes upstream.
//!
//! The entries, in order: `system` (when present) as the instructions;
//! then per message — a user message's `tool_result` blocks, each its own
//! tool result in the order sent, then one user entry for the rest of the
//! message (its text blocks, and its images, documents, … named as other
//! parts) when it has any; an assistant message as one assistant entry
//! (its text, its `thinking`/`redacted_thinking` named as other parts, its
//! `tool_use` blocks as the calls), then one other entry per server-tool
//! block it carries (`server_tool_use`, `web_search_tool_result`, …); a
//! `system` message (which the API accepts inside `messages`, and Claude
//! Code sends) as instructions, like `system`: text only, governed where it
//! stands, rewritten in place.

use serde_json::{Map, Value};

use super::blocks::{MAX_BLOCKS, block_type, text_of, write_text};
use crate::api::model::{ApiRequest, Entry, Rewrite, TurnRequest};
use crate::bounds::MAX_MESSAGES;
use crate::error::Error;
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};
use hookwire_client::ToolCall;

/// How many tools one request may declare.
pub(crate) const MAX_TOOLS: usize = 1024;

/// A decoded Messages request, keeping every member it does not govern
/// (`stop_sequences`, `metadata`, `tool_choice`, `thinking`, …) as sent.
#[derive(Debug, Clone)]
pub(crate) struct MessagesRequest {
    body: Map<String, Value>,
    view: TurnRequest,
    /// Where each entry of `view` lives in `body`.
    places: Vec<Place>,
}

/// Where an entry lives in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// `system`.
    System,
    /// The content of message `m` (its text blocks, or its string).
    Content(usize),
    /// Block `b` of message `m`, a `tool_result`.
    ToolResult(usize, usize),
    /// Nothing the core writes (a server-tool block).
    Untouched,
}

fn bad(message: impl Into<String>) -> Error {
    Error::BadRequest(message.into())
}

impl MessagesRequest {
    /// Decodes and checks a request body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Error> {
        let body: Map<String, Value> =
            serde_json::from_slice(body).map_err(|_| bad("the body is not a JSON object"))?;
        if body
            .get("max_tokens")
            .and_then(Value::as_u64)
            .is_none_or(|n| n == 0)
        {
            return Err(bad("max_tokens is required and must be a positive integer"));
        }
        Self::decode_object(body)
    }

    /// Decodes and checks a body that has no `max_tokens` to check (a
    /// `count_tokens` request carries the same content without one).
    pub(crate) fn decode_object(body: Map<String, Value>) -> Result<Self, Error> {
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            _ => return Err(bad("model must be a non-empty string")),
        };
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("stream must be a boolean")),
        };
        let tools = tool_names(body.get("tools"))?;

        let mut entries = Vec::new();
        let mut places = Vec::new();
        match body.get("system") {
            None | Some(Value::Null) => {}
            Some(system) => {
                check_system(system)?;
                entries.push(Entry::Instructions(text_of(system, |_| true)));
                places.push(Place::System);
            }
        }
        let messages = match body.get("messages") {
            Some(Value::Array(m)) if m.is_empty() => {
                return Err(bad("messages must not be empty"));
            }
            Some(Value::Array(m)) if m.len() > MAX_MESSAGES => {
                return Err(bad(format!("more than {MAX_MESSAGES} messages")));
            }
            Some(Value::Array(m)) => m,
            _ => return Err(bad("messages must be an array")),
        };
        for (m, message) in messages.iter().enumerate() {
            decode_message(m, message, &mut entries, &mut places)?;
        }
        let view = TurnRequest {
            model,
            stream,
            tools,
            entries,
            continues: None,
        };
        Ok(Self { body, view, places })
    }

    /// The content of message `m`.
    fn content_mut(&mut self, m: usize) -> Option<&mut Value> {
        self.body
            .get_mut("messages")?
            .get_mut(m)?
            .get_mut("content")
    }
}

impl ApiRequest for MessagesRequest {
    fn view(&self) -> &TurnRequest {
        &self.view
    }

    fn rewrite(&mut self, index: usize, rewrite: Rewrite) -> Result<(), Error> {
        let place = *self
            .places
            .get(index)
            .ok_or_else(|| bad(format!("the request has no entry {index} to rewrite")))?;
        let mismatch = || {
            bad(format!(
                "entry {index} of the request cannot take this rewrite ({place:?})"
            ))
        };
        let missing = || bad(format!("entry {index} of the request is gone"));
        match (place, rewrite) {
            (Place::System, Rewrite::Text(text)) => {
                write_text(self.body.get_mut("system").ok_or_else(missing)?, &text);
                set_text(&mut self.view.entries[index], text);
            }
            (Place::Content(m), Rewrite::Text(text)) => {
                write_text(self.content_mut(m).ok_or_else(missing)?, &text);
                set_text(&mut self.view.entries[index], text);
            }
            (Place::ToolResult(m, b), Rewrite::ToolResult { text, is_error }) => {
                let block = self
                    .content_mut(m)
                    .and_then(|c| c.get_mut(b))
                    .and_then(Value::as_object_mut)
                    .ok_or_else(missing)?;
                block.insert("content".into(), Value::from(text.clone()));
                block.insert("is_error".into(), Value::from(is_error));
                if let Entry::ToolResult {
                    result,
                    is_error: e,
                    ..
                } = &mut self.view.entries[index]
                {
                    *result = Value::from(text);
                    *e = is_error;
                }
            }
            _ => return Err(mismatch()),
        }
        Ok(())
    }

    /// `model`, `temperature`, `top_p`, `max_tokens`; the system prompt
    /// replaces `system` (as a string), or is put before it (before a
    /// string with a blank line, as a first text block of blocks), or
    /// becomes it when there is none.
    fn apply_overrides(&mut self, overrides: &ModelOverrides) {
        let body = &mut self.body;
        overrides.apply_common(body, "max_tokens");
        if let Some(m) = &overrides.model {
            self.view.model = m.value.clone();
        }
        if let Some(SetBy {
            value: (mode, text),
            ..
        }) = &overrides.system_prompt
        {
            let system = match (mode, body.remove("system")) {
                (SystemPromptMode::Prepend, Some(Value::String(old))) => {
                    Value::from(format!("{text}\n\n{old}"))
                }
                (SystemPromptMode::Prepend, Some(Value::Array(mut blocks))) => {
                    blocks.insert(0, serde_json::json!({"type": "text", "text": text}));
                    Value::Array(blocks)
                }
                _ => Value::from(text.clone()),
            };
            body.insert("system".into(), system);
        }
    }

    fn into_body(self) -> Map<String, Value> {
        self.body
    }
}

/// Sets the text of a user, assistant or instructions entry.
fn set_text(entry: &mut Entry, new: String) {
    match entry {
        Entry::Instructions(t) | Entry::User(t) | Entry::Assistant { text: t, .. } => t.text = new,
        Entry::ToolResult { .. } | Entry::Other(_) => {}
    }
}

/// `system`: a string, or an array of text blocks.
fn check_system(system: &Value) -> Result<(), Error> {
    match system {
        Value::String(_) => Ok(()),
        Value::Array(blocks) if blocks.len() > MAX_BLOCKS => {
            Err(bad(format!("system has more than {MAX_BLOCKS} blocks")))
        }
        Value::Array(blocks)
            if blocks.iter().all(|b| {
                block_type(b) == "text" && b.get("text").is_some_and(Value::is_string)
            }) =>
        {
            Ok(())
        }
        _ => Err(bad("system must be a string or an array of text blocks")),
    }
}

/// Checks a content array: bounded, each block an object with a `type`,
/// each text block with a string `text`. `what` names it in the error.
fn check_blocks(blocks: &[Value], what: &dyn Fn() -> String) -> Result<(), Error> {
    if blocks.len() > MAX_BLOCKS {
        return Err(bad(format!("{} has more than {MAX_BLOCKS} blocks", what())));
    }
    for (b, block) in blocks.iter().enumerate() {
        match block.get("type") {
            Some(Value::String(t)) if t == "text" => {
                if !block.get("text").is_some_and(Value::is_string) {
                    return Err(bad(format!("{}[{b}] is a text block without text", what())));
                }
            }
            Some(Value::String(_)) => {}
            _ => return Err(bad(format!("{}[{b}] is not a block with a type", what()))),
        }
    }
    Ok(())
}

/// The entries of message `m` (see the module's documentation).
fn decode_message(
    m: usize,
    message: &Value,
    entries: &mut Vec<Entry>,
    places: &mut Vec<Place>,
) -> Result<(), Error> {
    let role = message.get("role").and_then(Value::as_str);
    let content = message.get("content").unwrap_or(&Value::Null);
    let at = || format!("messages[{m}].content");
    let blocks = match content {
        Value::String(_) => None,
        Value::Array(blocks) if blocks.is_empty() => {
            return Err(bad(format!("{} must not be empty", at())));
        }
        Value::Array(blocks) => {
            check_blocks(blocks, &at)?;
            Some(blocks)
        }
        _ => {
            return Err(bad(format!(
                "{} must be a string or an array of blocks",
                at()
            )));
        }
    };
    match role {
        Some("user") => {
            let mut rest = blocks.is_none();
            for (b, block) in blocks.into_iter().flatten().enumerate() {
                if block_type(block) != "tool_result" {
                    rest = true;
                    continue;
                }
                entries.push(tool_result(block, &|| format!("{}[{b}]", at()))?);
                places.push(Place::ToolResult(m, b));
            }
            if rest {
                entries.push(Entry::User(text_of(content, |t| t != "tool_result")));
                places.push(Place::Content(m));
            }
        }
        Some("assistant") => {
            let is_part = |t: &str| t == "thinking" || t == "redacted_thinking";
            let mut tool_calls = Vec::new();
            let mut others = Vec::new();
            for (b, block) in blocks.into_iter().flatten().enumerate() {
                match block_type(block) {
                    "tool_use" => {
                        tool_calls.push(tool_use(block, &|| format!("{}[{b}]", at()))?);
                    }
                    "text" => {}
                    t if is_part(t) => {}
                    t => others.push(Entry::Other(t.to_owned())),
                }
            }
            entries.push(Entry::Assistant {
                text: text_of(content, is_part),
                tool_calls,
            });
            places.push(Place::Content(m));
            places.extend(others.iter().map(|_| Place::Untouched));
            entries.extend(others);
        }
        Some("system") => {
            // What the API accepts beside the top-level `system`: more
            // instructions, governed as such (text only, like `system`).
            check_system(content).map_err(|_| {
                bad(format!(
                    "{} of a system message must be a string or an array of text blocks",
                    at()
                ))
            })?;
            entries.push(Entry::Instructions(text_of(content, |_| false)));
            places.push(Place::Content(m));
        }
        _ => {
            return Err(bad(format!(
                "messages[{m}].role must be \"user\", \"assistant\" or \"system\""
            )));
        }
    }
    Ok(())
}

/// A `tool_result` block as a tool result entry.
fn tool_result(block: &Value, at: &dyn Fn() -> String) -> Result<Entry, Error> {
    let call_id = match block.get("tool_use_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => {
            return Err(bad(format!(
                "{}.tool_use_id must be a non-empty string",
                at()
            )));
        }
    };
    let result = match block.get("content") {
        None | Some(Value::Null) => Value::from(""),
        Some(Value::String(s)) => Value::from(s.clone()),
        Some(Value::Array(blocks)) => {
            check_blocks(blocks, &|| format!("{}.content", at()))?;
            Value::Array(blocks.clone())
        }
        Some(_) => {
            return Err(bad(format!(
                "{}.content must be a string or an array of blocks",
                at()
            )));
        }
    };
    let is_error = match block.get("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad(format!("{}.is_error must be a boolean", at()))),
    };
    Ok(Entry::ToolResult {
        call_id,
        result,
        is_error,
    })
}

/// A `tool_use` block (of a request or a response) as a tool call.
pub(crate) fn tool_use(block: &Value, at: &dyn Fn() -> String) -> Result<ToolCall, Error> {
    let field = |name: &str| match block.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(bad(format!("{}.{name} must be a non-empty string", at()))),
    };
    let (id, name) = (field("id")?, field("name")?);
    match block.get("input") {
        Some(input @ Value::Object(_)) => Ok(ToolCall::new(id, name, input.clone())),
        _ => Err(bad(format!("{}.input must be an object", at()))),
    }
}

/// The names of the tools the client runs, sorted and deduplicated:
/// custom tools (no `type`, or `custom`) and the Anthropic-defined tools
/// whose calls come back as `tool_use` (`bash_*`, `text_editor_*`,
/// `computer_*`, `memory_*`). Server tools (web search, code execution, …)
/// run at the provider and are not registered.
fn tool_names(tools: Option<&Value>) -> Result<Vec<String>, Error> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(t)) if t.len() > MAX_TOOLS => {
            return Err(bad(format!("more than {MAX_TOOLS} tools")));
        }
        Some(Value::Array(t)) => t,
        Some(_) => return Err(bad("tools must be an array")),
    };
    let mut names = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            return Err(bad(format!("tools[{i}].name must be a string")));
        };
        let client_run = match tool.get("type") {
            None | Some(Value::Null) => true,
            Some(Value::String(t)) => {
                t == "custom"
                    || ["bash_", "text_editor_", "computer_", "memory_"]
                        .iter()
                        .any(|p| t.starts_with(p))
            }
            Some(_) => return Err(bad(format!("tools[{i}].type must be a string"))),
        };
        if client_run {
            names.push(name.to_owned());
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}
