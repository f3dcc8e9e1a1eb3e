//! A Responses request: checked and bounded, its `instructions` and
//! `input` items read into the neutral transcript, and the chain's
//! rewrites and overrides written back into the items they came from.
//! Everything the gateway does not govern (`store`, `include`, `text`,
//! `reasoning`, `tool_choice`, `metadata`, ...) goes upstream as sent.

use hookwire_client::ToolCall;
use serde_json::{Map, Value, json};

use super::check::{MAX_ID, bad};
use super::items::MAX_PARTS;
use super::tools::tool_names;
use crate::api::model::{ApiRequest, Entry, Rewrite, Text, TurnRequest};
use crate::bounds::MAX_MESSAGES;
use crate::error::Error;
use crate::extension::{ModelOverrides, SetBy, SystemPromptMode};

/// Where an entry of the view lives in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The `instructions` string.
    Instructions,
    /// `input` given as one string.
    Input,
    /// Item `i` of the `input` array.
    Item(usize),
    /// An item of the stored conversation the request continues: at the
    /// upstream already, not in the body.
    Stored,
}

/// A decoded Responses request.
#[derive(Debug, Clone)]
pub(crate) struct ResponsesRequest {
    body: Map<String, Value>,
    view: TurnRequest,
    slots: Vec<Slot>,
    /// `function_call_output` items the gateway adds ahead of the client's
    /// own ([`ApiRequest::answer_withheld_calls`]).
    answered: Vec<Value>,
}

/// The most `metadata` pairs the API takes.
const MAX_METADATA_KEYS: usize = 16;

impl ResponsesRequest {
    /// Decodes and checks a request body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Error> {
        let body: Map<String, Value> =
            serde_json::from_slice(body).map_err(|_| bad("the body is not a JSON object"))?;
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            _ => return Err(bad("model must be a non-empty string")),
        };
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("stream must be a boolean")),
        };
        if body.get("background") == Some(&Value::Bool(true)) {
            return Err(bad(
                "background responses are not governed: the gateway governs the answer it relays; \
                 send the request without background",
            ));
        }
        let continues = match body.get("previous_response_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_ID => Some(id.clone()),
            Some(_) => {
                return Err(bad(format!(
                    "previous_response_id must be a response id of 1-{MAX_ID} bytes"
                )));
            }
        };
        let tools = tool_names(body.get("tools"))?;
        let mut entries = Vec::new();
        let mut slots = Vec::new();
        match body.get("instructions") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                entries.push(Entry::Instructions(plain(s)));
                slots.push(Slot::Instructions);
            }
            Some(_) => return Err(bad("instructions must be a string")),
        }
        match body.get("input") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                entries.push(Entry::User(plain(s)));
                slots.push(Slot::Input);
            }
            Some(Value::Array(items)) => {
                if items.len() > MAX_MESSAGES {
                    return Err(bad(format!(
                        "input has {} items; the gateway governs at most {MAX_MESSAGES}",
                        items.len()
                    )));
                }
                for (i, item) in items.iter().enumerate() {
                    entries.push(entry_of(i, item)?);
                    slots.push(Slot::Item(i));
                }
            }
            Some(_) => return Err(bad("input must be a string or an array of items")),
        }
        Ok(Self {
            view: TurnRequest {
                model,
                stream,
                tools,
                entries,
                continues,
            },
            body,
            slots,
            answered: Vec::new(),
        })
    }

    fn item_mut(&mut self, i: usize) -> Option<&mut Map<String, Value>> {
        self.body
            .get_mut("input")?
            .as_array_mut()?
            .get_mut(i)?
            .as_object_mut()
    }
}

/// A plain string content.
fn plain(s: &str) -> Text {
    Text {
        text: s.to_owned(),
        other_parts: Vec::new(),
    }
}

fn string_field<'a>(
    i: usize,
    item: &'a Map<String, Value>,
    field: &str,
    max: usize,
) -> Result<&'a str, Error> {
    match item.get(field) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= max => Ok(s),
        _ => Err(bad(format!(
            "input item {i}: {field} must be a string of 1-{max} bytes"
        ))),
    }
}

/// A part or item `type` the context names, checked and bounded.
fn kind_of(value: &Value, what: &str) -> Result<Option<String>, Error> {
    match value.get("type") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) if !t.is_empty() && t.len() <= MAX_ID => Ok(Some(t.clone())),
        Some(_) => Err(bad(format!(
            "{what}: type must be a string of 1-{MAX_ID} bytes"
        ))),
    }
}

/// The entry of input item `i`.
fn entry_of(i: usize, item: &Value) -> Result<Entry, Error> {
    let obj = item
        .as_object()
        .ok_or_else(|| bad(format!("input item {i} is not an object")))?;
    let kind = kind_of(item, &format!("input item {i}"))?;
    match kind.as_deref() {
        None | Some("message") if obj.contains_key("role") => message_entry(i, obj),
        Some("message") => Err(bad(format!("input item {i}: a message needs a role"))),
        None if obj.get("id").is_some_and(Value::is_string) => {
            Ok(Entry::Other("item_reference".into()))
        }
        None => Err(bad(format!("input item {i} has neither a type nor a role"))),
        Some("function_call") => {
            let call_id = string_field(i, obj, "call_id", MAX_ID)?;
            let name = string_field(i, obj, "name", MAX_ID)?;
            let args = match obj.get("arguments") {
                Some(Value::String(a)) => {
                    serde_json::from_str(a).unwrap_or_else(|_| Value::from(a.as_str()))
                }
                _ => return Err(bad(format!("input item {i}: arguments must be a string"))),
            };
            Ok(Entry::Assistant {
                text: Text::default(),
                tool_calls: vec![ToolCall::new(call_id, name, args)],
            })
        }
        Some("custom_tool_call") => {
            let call_id = string_field(i, obj, "call_id", MAX_ID)?;
            let name = string_field(i, obj, "name", MAX_ID)?;
            let input = match obj.get("input") {
                Some(Value::String(s)) => s.clone(),
                _ => return Err(bad(format!("input item {i}: input must be a string"))),
            };
            Ok(Entry::Assistant {
                text: Text::default(),
                tool_calls: vec![ToolCall::new(call_id, name, json!({"input": input}))],
            })
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let call_id = string_field(i, obj, "call_id", MAX_ID)?;
            let result = match obj.get("output") {
                Some(Value::String(_)) => obj["output"].clone(),
                Some(Value::Array(parts)) => {
                    check_parts(i, parts)?;
                    obj["output"].clone()
                }
                _ => {
                    return Err(bad(format!(
                        "input item {i}: output must be a string or an array of parts"
                    )));
                }
            };
            Ok(Entry::ToolResult {
                call_id: call_id.to_owned(),
                result,
                is_error: false,
            })
        }
        Some(other) => Ok(Entry::Other(other.to_owned())),
    }
}

/// Whether a part is one whose text the chain sees.
fn is_text_part(part: &Value) -> bool {
    matches!(
        part.get("type").and_then(Value::as_str),
        Some("input_text" | "output_text")
    )
}

fn check_parts(i: usize, parts: &[Value]) -> Result<(), Error> {
    if parts.len() > MAX_PARTS {
        return Err(bad(format!(
            "input item {i} has more than {MAX_PARTS} content parts"
        )));
    }
    for (j, part) in parts.iter().enumerate() {
        let what = format!("input item {i}, part {j}");
        if !part.is_object() || kind_of(part, &what)?.is_none() {
            return Err(bad(format!("{what} must be an object with a type")));
        }
        if is_text_part(part) && !part.get("text").is_some_and(Value::is_string) {
            return Err(bad(format!("{what}: a text part needs a text string")));
        }
    }
    Ok(())
}

/// A message item (`role` and `content`) as an entry.
fn message_entry(i: usize, obj: &Map<String, Value>) -> Result<Entry, Error> {
    let role = obj.get("role").and_then(Value::as_str).unwrap_or_default();
    let text = match obj.get("content") {
        Some(Value::String(s)) => plain(s),
        Some(Value::Array(parts)) => {
            check_parts(i, parts)?;
            let mut text = Text::default();
            for part in parts {
                if is_text_part(part) {
                    text.text
                        .push_str(part["text"].as_str().unwrap_or_default());
                } else if let Some(Value::String(kind)) = part.get("type") {
                    text.other_parts.push(kind.clone());
                }
            }
            text
        }
        _ => {
            return Err(bad(format!(
                "input item {i}: content must be a string or an array of parts"
            )));
        }
    };
    match role {
        "user" => Ok(Entry::User(text)),
        "system" | "developer" => Ok(Entry::Instructions(text)),
        "assistant" => Ok(Entry::Assistant {
            text,
            tool_calls: Vec::new(),
        }),
        _ => Err(bad(format!(
            "input item {i}: role must be user, system, developer or assistant"
        ))),
    }
}

/// Writes `text` into a message item's content: a string stays a string;
/// in a part array the text parts become one part of the first one's type
/// (`input_text`, or `output_text` for the assistant), where it was.
fn write_text(item: &mut Map<String, Value>, text: String) -> Result<(), Error> {
    let assistant = item.get("role").and_then(Value::as_str) == Some("assistant");
    match item.get_mut("content") {
        Some(Value::String(s)) => *s = text,
        Some(Value::Array(parts)) => {
            let first = parts.iter().position(is_text_part);
            let kind = match first.and_then(|f| parts[f]["type"].as_str()) {
                Some(k) => k.to_owned(),
                None if assistant => "output_text".to_owned(),
                None => "input_text".to_owned(),
            };
            if first.is_none() && text.is_empty() {
                return Ok(());
            }
            let part = if kind == "output_text" {
                json!({"type": kind, "text": text, "annotations": []})
            } else {
                json!({"type": kind, "text": text})
            };
            parts.retain(|p| !is_text_part(p));
            // Every part before the first text part was kept, so it goes
            // back where it was.
            parts.insert(first.unwrap_or(0), part);
        }
        _ => return Err(bad("a message item without content cannot take a text")),
    }
    Ok(())
}

impl ApiRequest for ResponsesRequest {
    fn view(&self) -> &TurnRequest {
        &self.view
    }

    fn rewrite(&mut self, index: usize, rewrite: Rewrite) -> Result<(), Error> {
        let slot = *self
            .slots
            .get(index)
            .ok_or_else(|| bad(format!("the request has no entry {index} to rewrite")))?;
        let refused = || {
            bad(format!(
                "entry {index} of the request cannot take that rewrite"
            ))
        };
        match (&rewrite, slot) {
            (Rewrite::Text(text), Slot::Instructions) => {
                self.body.insert("instructions".into(), text.clone().into());
            }
            (Rewrite::Text(text), Slot::Input) => {
                self.body.insert("input".into(), text.clone().into());
            }
            (Rewrite::Text(text), Slot::Item(i)) => {
                let item = self.item_mut(i).ok_or_else(refused)?;
                match item.get("type").and_then(Value::as_str) {
                    None | Some("message") => write_text(item, text.clone())?,
                    Some("function_call" | "custom_tool_call") if text.is_empty() => {}
                    _ => return Err(refused()),
                }
            }
            (Rewrite::ToolResult { text, .. }, Slot::Item(i)) => {
                let item = self.item_mut(i).ok_or_else(refused)?;
                if !matches!(
                    item.get("type").and_then(Value::as_str),
                    Some("function_call_output" | "custom_tool_call_output")
                ) {
                    return Err(refused());
                }
                item.insert("output".into(), text.clone().into());
            }
            (_, Slot::Stored) => {
                return Err(Error::Transform(format!(
                    "entry {index} is history the upstream stores (the continued answer's \
                     conversation); it cannot be rewritten there: start the conversation again"
                )));
            }
            (Rewrite::ToolResult { .. }, _) => return Err(refused()),
        }
        match (&mut self.view.entries[index], rewrite) {
            (
                Entry::Instructions(t) | Entry::User(t) | Entry::Assistant { text: t, .. },
                Rewrite::Text(text),
            ) => t.text = text,
            (
                Entry::ToolResult {
                    result, is_error, ..
                },
                Rewrite::ToolResult { text, is_error: e },
            ) => {
                *result = Value::String(text);
                *is_error = e;
            }
            _ => return Err(refused()),
        }
        Ok(())
    }

    /// `max_tokens` is `max_output_tokens` here; the system prompt is
    /// `instructions` (replaced, or put before the request's own).
    fn apply_overrides(&mut self, overrides: &ModelOverrides) {
        let body = &mut self.body;
        overrides.apply_common(body, "max_output_tokens");
        if let Some(SetBy {
            value: (mode, text),
            ..
        }) = &overrides.system_prompt
        {
            let instructions = match (mode, body.get("instructions").and_then(Value::as_str)) {
                (SystemPromptMode::Prepend, Some(old)) if !old.is_empty() => {
                    format!("{text}\n\n{old}")
                }
                _ => text.clone(),
            };
            body.insert("instructions".into(), instructions.into());
        }
    }

    fn answer_withheld_calls(&mut self, answers: &[(String, String)]) -> Result<(), Error> {
        let items = self.view.entries.len() + self.answered.len() + answers.len();
        if items > MAX_MESSAGES {
            return Err(bad(format!(
                "more than {MAX_MESSAGES} items would go upstream"
            )));
        }
        for (call_id, text) in answers {
            let answered_by_client = self
                .view
                .entries
                .iter()
                .any(|e| matches!(e, Entry::ToolResult { call_id: c, .. } if c == call_id));
            if !answered_by_client {
                self.answered.push(json!({
                    "type": "function_call_output", "call_id": call_id, "output": text
                }));
            }
        }
        Ok(())
    }

    fn with_stored(&mut self, items: &[Value]) -> Result<(), Error> {
        if items.len() + self.view.entries.len() > MAX_MESSAGES {
            return Err(bad(format!(
                "the continued conversation and the request hold more than {MAX_MESSAGES} items"
            )));
        }
        let stored = items
            .iter()
            .enumerate()
            .map(|(i, item)| entry_of(i, item))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::UpstreamResponse(format!("a stored item: {e}")))?;
        let n = stored.len();
        self.view.entries.splice(0..0, stored);
        self.slots
            .splice(0..0, std::iter::repeat_n(Slot::Stored, n));
        Ok(())
    }

    fn tag_owner(&mut self, key: &str, tag: &str) -> Result<(), Error> {
        let metadata = self
            .body
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if metadata.is_null() {
            *metadata = Value::Object(Map::new());
        }
        let Some(map) = metadata.as_object_mut() else {
            return Err(bad("metadata must be an object"));
        };
        map.remove(key);
        if map.len() >= MAX_METADATA_KEYS {
            return Err(bad(format!(
                "metadata holds {MAX_METADATA_KEYS} keys already; the gateway needs one for \
                 `{key}`"
            )));
        }
        map.insert(key.to_owned(), Value::from(tag));
        Ok(())
    }

    fn into_body(mut self) -> Map<String, Value> {
        if !self.answered.is_empty() {
            let mut items = std::mem::take(&mut self.answered);
            match self.body.remove("input") {
                Some(Value::Array(own)) => items.extend(own),
                Some(Value::String(s)) => items.push(json!({"role": "user", "content": s})),
                _ => {}
            }
            self.body.insert("input".into(), Value::Array(items));
        }
        self.body
    }
}
