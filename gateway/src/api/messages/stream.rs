//! Messages server-sent events from the upstream, assembled into the
//! whole message they amount to.
//!
//! The API streams `message_start` (the message, content empty), then per
//! content block `content_block_start`, `content_block_delta`s
//! (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`,
//! `citations_delta`) and `content_block_stop`, then `message_delta` (the
//! `stop_reason`, the output usage) and `message_stop`; `ping` at any
//! time, and an `error` event when the stream fails. Event types the
//! assembler does not know are skipped, as the API documents; a delta it
//! does not know is refused (it could carry text the chain would miss).

use serde_json::{Map, Value, json};

use super::blocks::{MAX_BLOCKS, block_type};
use super::response::MessagesResponse;
use crate::api::model::EventAssembler;
use crate::bounds::MAX_TOOL_CALLS;
use crate::sse::SseEvent;

/// The most bytes of event data one stream may amount to.
pub(crate) const MAX_STREAM_BYTES: usize = 16 << 20;
/// How much of an upstream error event's message an error keeps.
const MAX_ERROR_MESSAGE: usize = 512;

/// A Messages stream assembled, one event at a time.
#[derive(Debug, Default)]
pub(crate) struct MessagesAssembler {
    /// The `message_start` message, content emptied.
    pub(super) start: Option<Map<String, Value>>,
    /// The content blocks, by index, as assembled so far.
    pub(super) blocks: Vec<Value>,
    /// Per block: its `input_json_delta` text so far, and whether it is
    /// still open.
    pub(super) state: Vec<(String, bool)>,
    /// The `message_delta` deltas, merged.
    pub(super) delta: Map<String, Value>,
    /// The `message_delta` usages, merged (nulls skipped).
    pub(super) delta_usage: Map<String, Value>,
    tool_uses: usize,
    bytes: usize,
    done: bool,
}

impl MessagesAssembler {
    /// The block at `index` of a delta or stop event, when open.
    fn open_block(&mut self, data: &Value) -> Result<usize, String> {
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .ok_or("a content block event has no index")?;
        match usize::try_from(index).ok().and_then(|i| self.state.get(i)) {
            Some((_, true)) => Ok(index as usize),
            _ => Err(format!("content block {index} is not open")),
        }
    }

    fn message_start(&mut self, data: &Value) -> Result<String, String> {
        if self.start.is_some() {
            return Err("a second message_start".into());
        }
        let Some(Value::Object(mut message)) = data.get("message").cloned() else {
            return Err("message_start has no message".into());
        };
        if !matches!(message.get("usage"), None | Some(Value::Object(_))) {
            return Err("message_start's usage is not an object".into());
        }
        let content = match message.insert("content".into(), json!([])) {
            None => Vec::new(),
            Some(Value::Array(blocks)) if blocks.len() <= MAX_BLOCKS => blocks,
            Some(_) => return Err("message_start's content is not a bounded array".into()),
        };
        let mut text = String::new();
        for block in content {
            text.push_str(&self.start_block(block)?);
            self.state.last_mut().ok_or("no block")?.1 = false;
        }
        self.start = Some(message);
        Ok(text)
    }

    /// Adds a block (open); returns the text it starts with.
    fn start_block(&mut self, block: Value) -> Result<String, String> {
        if self.blocks.len() >= MAX_BLOCKS {
            return Err(format!("more than {MAX_BLOCKS} content blocks"));
        }
        if !block.is_object() || !block.get("type").is_some_and(Value::is_string) {
            return Err("a content block is not an object with a type".into());
        }
        let text = match block_type(&block) {
            "text" => block
                .get("text")
                .and_then(Value::as_str)
                .ok_or("a text block without text")?
                .to_owned(),
            "tool_use" => {
                self.tool_uses += 1;
                if self.tool_uses > MAX_TOOL_CALLS {
                    return Err(format!("more than {MAX_TOOL_CALLS} tool calls"));
                }
                String::new()
            }
            _ => String::new(),
        };
        self.blocks.push(block);
        self.state.push((String::new(), true));
        Ok(text)
    }

    fn delta(&mut self, data: &Value) -> Result<String, String> {
        let i = self.open_block(data)?;
        let delta = data
            .get("delta")
            .ok_or("content_block_delta has no delta")?;
        let kind = delta
            .get("type")
            .and_then(Value::as_str)
            .ok_or("a delta has no type")?;
        let of = block_type(&self.blocks[i]).to_owned();
        let wrong = || format!("a {kind} for a {of} block");
        let field = |name: &str| {
            delta
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a {kind} without {name}"))
        };
        let block = &mut self.blocks[i];
        match kind {
            "text_delta" if of == "text" => {
                let text = field("text")?;
                append(block, "text", text);
                return Ok(text.to_owned());
            }
            "input_json_delta" if of.ends_with("tool_use") => {
                self.state[i].0.push_str(field("partial_json")?);
            }
            "thinking_delta" if of == "thinking" => append(block, "thinking", field("thinking")?),
            "signature_delta" if of == "thinking" => {
                block["signature"] = Value::from(field("signature")?);
            }
            "citations_delta" if of == "text" => {
                let citation = delta
                    .get("citation")
                    .ok_or("a citations_delta without citation")?;
                match block
                    .as_object_mut()
                    .map(|b| b.entry("citations").or_insert_with(|| json!([])))
                {
                    Some(Value::Array(list)) => list.push(citation.clone()),
                    _ => return Err("a text block's citations are not an array".into()),
                }
            }
            "text_delta" | "input_json_delta" | "thinking_delta" | "signature_delta"
            | "citations_delta" => return Err(wrong()),
            other => return Err(format!("an unknown content block delta {other:?}")),
        }
        Ok(String::new())
    }

    fn stop_block(&mut self, data: &Value) -> Result<(), String> {
        let i = self.open_block(data)?;
        let (json, open) = &mut self.state[i];
        *open = false;
        if !json.is_empty() {
            let input: Value = serde_json::from_str(json)
                .map_err(|_| format!("the input of content block {i} is not JSON"))?;
            if !input.is_object() {
                return Err(format!("the input of content block {i} is not an object"));
            }
            self.blocks[i]["input"] = input;
            json.clear();
        }
        Ok(())
    }

    fn message_delta(&mut self, data: &Value) -> Result<(), String> {
        let Some(Value::Object(delta)) = data.get("delta") else {
            return Err("message_delta has no delta".into());
        };
        // Its members are the message's; never its content or usage (the
        // usage comes beside the delta).
        for (k, v) in delta
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "content" | "usage"))
        {
            self.delta.insert(k.clone(), v.clone());
        }
        match data.get("usage") {
            None | Some(Value::Null) => {}
            Some(Value::Object(usage)) => {
                for (k, v) in usage.iter().filter(|(_, v)| !v.is_null()) {
                    self.delta_usage.insert(k.clone(), v.clone());
                }
            }
            Some(_) => return Err("message_delta's usage is not an object".into()),
        }
        Ok(())
    }

    /// The `message_start` message (content empty, stop reason unset), or
    /// a stand-in when the stream has not said it yet.
    pub(super) fn start_message(&self) -> Map<String, Value> {
        let mut m = self.start.clone().unwrap_or_else(|| {
            Map::from_iter([
                ("id".to_owned(), Value::from("msg_hookwire")),
                ("type".to_owned(), Value::from("message")),
                ("role".to_owned(), Value::from("assistant")),
                ("model".to_owned(), Value::from("")),
            ])
        });
        m.insert("content".into(), json!([]));
        m.insert("stop_reason".into(), Value::Null);
        m.insert("stop_sequence".into(), Value::Null);
        m
    }

    /// The final usage: `message_start`'s with the deltas' merged in.
    pub(super) fn usage(&self) -> Option<Value> {
        let start = self.start.as_ref()?.get("usage");
        if start.is_none() && self.delta_usage.is_empty() {
            return None;
        }
        let mut usage = start
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        usage.extend(self.delta_usage.clone());
        Some(Value::Object(usage))
    }
}

/// Appends to a string member of a block.
fn append(block: &mut Value, key: &str, more: &str) {
    let mut s = block
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    s.push_str(more);
    block[key] = Value::from(s);
}

/// An upstream `error` event as an error naming its type and message
/// (bounded).
fn upstream_error(data: &Value) -> String {
    let e = data.get("error");
    let kind = e
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message: String = e
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .chars()
        .take(MAX_ERROR_MESSAGE)
        .collect();
    format!("the upstream's stream failed: {kind}: {message}")
}

impl EventAssembler for MessagesAssembler {
    type Response = MessagesResponse;

    fn add(&mut self, event: &SseEvent) -> Result<String, String> {
        self.bytes = self.bytes.saturating_add(event.data.len());
        if self.bytes > MAX_STREAM_BYTES {
            return Err(format!("the stream exceeds {MAX_STREAM_BYTES} bytes"));
        }
        let data = event.json()?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .ok_or("an event has no type")?;
        if let Some(name) = &event.name
            && name != kind
        {
            return Err(format!("an event named {name:?} carries a {kind:?}"));
        }
        let known = [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ];
        match kind {
            "ping" => return Ok(String::new()),
            "error" => return Err(upstream_error(&data)),
            k if !known.contains(&k) => return Ok(String::new()),
            k if self.done => return Err(format!("a {k} event after message_stop")),
            "message_start" => return self.message_start(&data),
            k if self.start.is_none() => return Err(format!("a {k} event before message_start")),
            _ => {}
        }
        match kind {
            "content_block_start" => {
                let index = data.get("index").and_then(Value::as_u64);
                if index != Some(self.blocks.len() as u64) {
                    return Err(format!(
                        "content_block_start index {index:?}, expected {}",
                        self.blocks.len()
                    ));
                }
                let block = data
                    .get("content_block")
                    .cloned()
                    .ok_or("content_block_start has no content_block")?;
                self.start_block(block)
            }
            "content_block_delta" => self.delta(&data),
            "content_block_stop" => self.stop_block(&data).map(|()| String::new()),
            "message_delta" => self.message_delta(&data).map(|()| String::new()),
            _ => {
                if let Some(i) = self.state.iter().position(|(_, open)| *open) {
                    return Err(format!("message_stop with content block {i} open"));
                }
                self.done = true;
                Ok(String::new())
            }
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&self) -> Result<MessagesResponse, String> {
        let Some(start) = &self.start else {
            return Err("the stream ended before message_start".into());
        };
        if let Some(i) = self.state.iter().position(|(_, open)| *open) {
            return Err(format!("the stream ended with content block {i} open"));
        }
        if !self.delta.get("stop_reason").is_some_and(Value::is_string) {
            return Err("the stream ended before its stop_reason".into());
        }
        let mut message = start.clone();
        message.insert("content".into(), Value::Array(self.blocks.clone()));
        message.extend(self.delta.clone());
        if let Some(usage) = self.usage() {
            message.insert("usage".into(), usage);
        }
        MessagesResponse::from_message(message).map_err(|e| e.to_string())
    }
}
