//! The upstream's Responses stream assembled one typed event at a time:
//! `response.created`/`response.in_progress` give the response's
//! metadata, `response.output_item.added`/`.done` and the content-part,
//! text, refusal and function-call-argument events build the output items
//! by `output_index`, and `response.completed` (or `.incomplete`,
//! `.failed`) ends it with the whole response, which is the answer when it
//! is there. Other events (reasoning summaries, hosted tools' progress)
//! add nothing the final items do not carry. Everything kept is bounded.

use serde_json::{Map, Value, json};

use super::check::clip_to;
use super::items::{MAX_OUTPUT_ITEMS, MAX_PARTS, check_output, is_call, kind};
use super::response::ResponsesResponse;
use crate::api::model::EventAssembler;
use crate::bounds::MAX_TOOL_CALLS;
use crate::sse::SseEvent;

/// How many bytes of event data one stream may have the assembler keep
/// (text, arguments, items and the final response together).
pub(crate) const MAX_STREAM_BYTES: usize = 64 << 20;
/// How much of an upstream's error message an error carries.
const MAX_ERROR_MESSAGE: usize = 512;

/// A Responses stream read so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct ResponsesAssembler {
    /// The response of `response.created`/`response.in_progress`.
    snapshot: Option<Map<String, Value>>,
    /// The response of the event that ended the stream.
    last: Option<Map<String, Value>>,
    /// The event type that ended the stream.
    ended: Option<String>,
    /// The output items by `output_index`, and whether each is done.
    items: Vec<Option<(Value, bool)>>,
    /// Bytes of event data kept.
    kept: usize,
}

fn index_of(obj: &Map<String, Value>, field: &str, max: usize) -> Result<usize, String> {
    obj.get(field)
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|i| *i < max)
        .ok_or_else(|| format!("an event's {field} is missing or beyond {max}"))
}

fn string_of<'a>(obj: &'a Map<String, Value>, field: &str) -> Result<&'a str, String> {
    obj.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("an event has no {field} string"))
}

impl ResponsesAssembler {
    /// The response as known so far, without its output: the final one
    /// when the stream ended, else the one it opened with.
    pub(super) fn base(&self) -> Map<String, Value> {
        self.last
            .as_ref()
            .or(self.snapshot.as_ref())
            .cloned()
            .unwrap_or_else(|| {
                let mut m = Map::new();
                m.insert("id".into(), "resp_hookwire".into());
                m.insert("object".into(), "response".into());
                m.insert("created_at".into(), 0.into());
                m.insert("model".into(), "".into());
                m
            })
    }

    /// The response as it ended, without its output: [`Self::base`] with
    /// the `status` its last event gave when the response has none.
    pub(super) fn ended_base(&self) -> Map<String, Value> {
        let mut body = self.base();
        if let Some(ended) = &self.ended
            && !body.get("status").is_some_and(Value::is_string)
        {
            let status = ended.strip_prefix("response.").unwrap_or("completed");
            body.insert("status".into(), status.into());
        }
        body
    }

    /// The output items as known so far (the final response's when it
    /// carries them, else the assembled ones), each with whether it is
    /// done (every item is, once the stream ended).
    pub(super) fn output(&self) -> Vec<(Value, bool)> {
        match self.last.as_ref().and_then(|r| r.get("output")) {
            Some(Value::Array(o)) if !o.is_empty() => o.iter().map(|i| (i.clone(), true)).collect(),
            _ => self
                .items
                .iter()
                .flatten()
                .map(|(i, done)| (i.clone(), *done || self.ended.is_some()))
                .collect(),
        }
    }

    /// The output assembled from the item events alone.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn assembled_items(&self) -> Vec<Value> {
        self.items
            .iter()
            .flatten()
            .map(|(i, _)| i.clone())
            .collect()
    }

    fn keep(&mut self, bytes: usize) -> Result<(), String> {
        self.kept = self.kept.saturating_add(bytes);
        if self.kept > MAX_STREAM_BYTES {
            return Err(format!("the stream exceeds {MAX_STREAM_BYTES} bytes"));
        }
        Ok(())
    }

    fn item_mut(&mut self, obj: &Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
        let index = index_of(obj, "output_index", MAX_OUTPUT_ITEMS)?;
        self.items
            .get_mut(index)
            .and_then(Option::as_mut)
            .and_then(|(item, _)| item.as_object_mut())
            .ok_or_else(|| format!("an event names output item {index} before it was added"))
    }

    fn part_mut<'a>(
        item: &'a mut Map<String, Value>,
        obj: &Map<String, Value>,
    ) -> Result<&'a mut Map<String, Value>, String> {
        let index = index_of(obj, "content_index", MAX_PARTS)?;
        let content = item
            .entry("content")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or("a message item's content is not an array")?;
        while content.len() <= index {
            content.push(json!({"type": "output_text", "annotations": [], "text": ""}));
        }
        content[index]
            .as_object_mut()
            .ok_or_else(|| "a content part is not an object".to_owned())
    }

    fn set_item(&mut self, obj: &Map<String, Value>, done: bool) -> Result<(), String> {
        let index = index_of(obj, "output_index", MAX_OUTPUT_ITEMS)?;
        let item = obj
            .get("item")
            .filter(|i| i.is_object() && !kind(i).is_empty())
            .ok_or("an output item event has no item with a type")?;
        if is_call(kind(item)) && !done {
            let calls = self
                .items
                .iter()
                .flatten()
                .filter(|(i, _)| is_call(kind(i)))
                .count();
            if calls >= MAX_TOOL_CALLS {
                return Err(format!("more than {MAX_TOOL_CALLS} function calls"));
            }
        }
        if self.items.len() <= index {
            self.items.resize(index + 1, None);
        }
        self.items[index] = Some((item.clone(), done));
        Ok(())
    }
}

impl EventAssembler for ResponsesAssembler {
    type Response = ResponsesResponse;

    fn add(&mut self, event: &SseEvent) -> Result<String, String> {
        if self.ended.is_some() || event.data.trim() == "[DONE]" {
            return Ok(String::new());
        }
        let value = event.json()?;
        let obj = value
            .as_object()
            .ok_or("an event's data is not an object")?;
        let kind = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            _ => event.name.as_deref().ok_or("an event has no type")?,
        };
        let mut text = String::new();
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                let response = obj
                    .get("response")
                    .and_then(Value::as_object)
                    .ok_or_else(|| format!("{kind} has no response"))?;
                self.keep(event.data.len())?;
                self.snapshot = Some(response.clone());
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                if let Some(response) = obj.get("response") {
                    let response = response
                        .as_object()
                        .ok_or_else(|| format!("{kind}'s response is not an object"))?;
                    if let Some(output) = response.get("output") {
                        check_output(output.as_array().ok_or("an output is not an array")?)?;
                    }
                    self.keep(event.data.len())?;
                    self.last = Some(response.clone());
                }
                self.ended = Some(kind.to_owned());
            }
            "error" => {
                let message = obj
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                return Err(format!(
                    "the upstream's stream failed: {}",
                    clip_to(message, MAX_ERROR_MESSAGE)
                ));
            }
            "response.output_item.added" | "response.output_item.done" => {
                self.keep(event.data.len())?;
                self.set_item(obj, kind.ends_with(".done"))?;
            }
            "response.content_part.added" | "response.content_part.done" => {
                let part = obj
                    .get("part")
                    .filter(|p| p.is_object())
                    .ok_or("a content part event has no part")?
                    .clone();
                self.keep(event.data.len())?;
                let item = self.item_mut(obj)?;
                *Self::part_mut(item, obj)? = part.as_object().cloned().unwrap_or_default();
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = string_of(obj, "delta")?;
                self.keep(delta.len())?;
                let field = if kind == "response.refusal.delta" {
                    "refusal"
                } else {
                    "text"
                };
                let item = self.item_mut(obj)?;
                let part = Self::part_mut(item, obj)?;
                match part.entry(field).or_insert_with(|| "".into()) {
                    Value::String(s) => s.push_str(delta),
                    _ => return Err("a content part's text is not a string".into()),
                }
                text = delta.to_owned();
            }
            "response.output_text.annotation.added" => {
                let annotation = obj.get("annotation").cloned().unwrap_or(Value::Null);
                self.keep(event.data.len())?;
                let item = self.item_mut(obj)?;
                let part = Self::part_mut(item, obj)?;
                match part.entry("annotations").or_insert_with(|| json!([])) {
                    Value::Array(a) if a.len() < MAX_PARTS => a.push(annotation),
                    _ => return Err("too many annotations, or not an array".into()),
                }
            }
            "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.delta"
            | "response.custom_tool_call_input.done" => {
                let done = kind.ends_with(".done");
                let field = if kind.starts_with("response.custom") {
                    "input"
                } else {
                    "arguments"
                };
                let piece = string_of(obj, if done { field } else { "delta" })?.to_owned();
                self.keep(piece.len())?;
                let item = self.item_mut(obj)?;
                match item.entry(field).or_insert_with(|| "".into()) {
                    Value::String(s) if done => *s = piece,
                    Value::String(s) => s.push_str(&piece),
                    _ => return Err(format!("a call's {field} is not a string")),
                }
            }
            _ => {}
        }
        Ok(text)
    }

    fn is_done(&self) -> bool {
        self.ended.is_some()
    }

    fn finish(&self) -> Result<ResponsesResponse, String> {
        if self.ended.is_none() {
            return Err("the stream ended before response.completed".into());
        }
        let mut body = self.ended_base();
        let output: Vec<Value> = self.output().into_iter().map(|(i, _)| i).collect();
        body.insert("output".into(), Value::Array(output));
        ResponsesResponse::from_value(Value::Object(body))
    }
}
