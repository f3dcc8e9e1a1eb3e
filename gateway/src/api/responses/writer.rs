//! The Responses events the client receives, regenerated rather than
//! relayed: `response.created` and `response.in_progress` with the
//! upstream's metadata, the hosted items that came before the text, one
//! message item whose text deltas are what the chain released, then the
//! remaining kept items and the permitted function calls, and
//! `response.completed` (`response.incomplete` when the answer was
//! withheld or cut short) carrying the settled response. Every event has
//! the next `sequence_number`; `output_index` and `content_index` follow
//! the items as written.
//!
//! Created once the first text is about to be released (or over the
//! whole stream, for a buffered answer), the final response is exactly
//! what [`ApiResponse::settle`](crate::api::model::ApiResponse::settle) returns
//! for the same answer. Created earlier, the items that complete after it
//! follow the message, and the final response lists them in that order.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::items::{is_call, kind};
use super::response::{
    is_copy, message_id, message_item, message_status, settled_body, settled_output, settled_status,
};
use super::stream::ResponsesAssembler;
use crate::api::model::{EventWriter, Settled};
use crate::error::Error;
use crate::sse;

/// Writes one Responses stream.
#[derive(Debug)]
pub(crate) struct ResponsesWriter {
    /// The next `sequence_number`.
    seq: u64,
    /// The response as the stream opened, for `response.created`.
    base: Map<String, Value>,
    /// The id of the message item.
    message_id: String,
    /// The hosted items written in the opening.
    leading: Vec<Value>,
    /// The items written, in `output_index` order.
    written: Vec<Value>,
    /// The open message's `output_index`.
    open: Option<usize>,
    /// The text written into the open message.
    streamed: String,
}

/// Whether two items are the same item (by id, else by value).
fn same_item(a: &Value, b: &Value) -> bool {
    match (a.get("id"), b.get("id")) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl ResponsesWriter {
    fn event(&mut self, kind: &str, mut body: Map<String, Value>) -> Bytes {
        body.insert("type".into(), kind.into());
        body.insert("sequence_number".into(), self.seq.into());
        self.seq += 1;
        sse::named(kind, &Value::Object(body))
    }

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// `response.output_item.added` for the next index.
    fn add_item(&mut self, item: Value, out: &mut Vec<Bytes>) -> usize {
        let index = self.written.len();
        out.push(self.event(
            "response.output_item.added",
            Self::object(json!({"output_index": index, "item": item})),
        ));
        self.written.push(item);
        index
    }

    /// `response.output_item.done`, the item in its final form.
    fn finish_item(&mut self, index: usize, item: Value, out: &mut Vec<Bytes>) {
        out.push(self.event(
            "response.output_item.done",
            Self::object(json!({"output_index": index, "item": item.clone()})),
        ));
        self.written[index] = item;
    }

    /// An item the upstream finished (hosted, reasoning): added and done.
    fn whole_item(&mut self, item: Value, out: &mut Vec<Bytes>) {
        let index = self.add_item(item.clone(), out);
        self.finish_item(index, item, out);
    }

    /// A permitted call: added without arguments (a custom tool call:
    /// without input), the arguments as one delta, done.
    fn call_item(&mut self, item: Value, out: &mut Vec<Bytes>) {
        let (field, events) = if kind(&item) == "custom_tool_call" {
            ("input", "response.custom_tool_call_input")
        } else {
            ("arguments", "response.function_call_arguments")
        };
        let mut opening = item.clone();
        opening[field] = "".into();
        if opening.get("status").is_some() {
            opening["status"] = "in_progress".into();
        }
        let index = self.add_item(opening, out);
        let item_id = item.get("id").cloned().unwrap_or_else(|| "".into());
        let args = item
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        out.push(self.event(
            &format!("{events}.delta"),
            Self::object(json!({"item_id": item_id, "output_index": index, "delta": args})),
        ));
        let mut done = Self::object(json!({"item_id": item_id, "output_index": index}));
        done.insert(field.into(), args.into());
        out.push(self.event(&format!("{events}.done"), done));
        self.finish_item(index, item, out);
    }

    /// Opens the message item and its one text part.
    fn open_message(&mut self, out: &mut Vec<Bytes>) -> usize {
        let item = json!({"id": self.message_id, "type": "message", "status": "in_progress",
                          "role": "assistant", "content": []});
        let index = self.add_item(item, out);
        out.push(self.event(
            "response.content_part.added",
            Self::object(json!({"item_id": self.message_id, "output_index": index,
                                "content_index": 0,
                                "part": {"type": "output_text", "annotations": [], "text": ""}})),
        ));
        self.open = Some(index);
        index
    }

    fn delta(&mut self, index: usize, delta: &str) -> Bytes {
        self.streamed.push_str(delta);
        self.event(
            "response.output_text.delta",
            Self::object(json!({"item_id": self.message_id, "output_index": index,
                                "content_index": 0, "delta": delta, "logprobs": []})),
        )
    }

    /// Ends the message: the rest of the settled text, then its done
    /// events with the settled item.
    fn close_message(&mut self, index: usize, item: Value, out: &mut Vec<Bytes>) {
        let text = item["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(rest) = text.strip_prefix(self.streamed.as_str())
            && !rest.is_empty()
        {
            let rest = rest.to_owned();
            out.push(self.delta(index, &rest));
        }
        let part = item["content"][0].clone();
        out.push(self.event(
            "response.output_text.done",
            Self::object(json!({"item_id": self.message_id, "output_index": index,
                                "content_index": 0, "text": text, "logprobs": []})),
        ));
        out.push(self.event(
            "response.content_part.done",
            Self::object(json!({"item_id": self.message_id, "output_index": index,
                                "content_index": 0, "part": part})),
        ));
        self.finish_item(index, item, out);
        self.open = None;
    }
}

impl EventWriter for ResponsesWriter {
    type Assembler = ResponsesAssembler;

    fn new(seen: &ResponsesAssembler) -> Self {
        let mut base = seen.base();
        let output = seen.output();
        let items: Vec<Value> = output.iter().map(|(i, _)| i.clone()).collect();
        let message_id = message_id(&base, &items);
        // Streamed incrementally, the items finished before the first
        // text go out first (a reasoning item must precede its message);
        // a buffered replay writes only those the settled answer keeps.
        let leading = output
            .into_iter()
            .take_while(|(i, done)| *done && is_copy(i))
            .map(|(i, _)| i)
            .collect();
        base.insert("status".into(), "in_progress".into());
        base.insert("output".into(), json!([]));
        for k in ["incomplete_details", "error", "usage", "output_text"] {
            if base.contains_key(k) {
                base.insert(k.into(), Value::Null);
            }
        }
        Self {
            seq: 0,
            base,
            message_id,
            leading,
            written: Vec::new(),
            open: None,
            streamed: String::new(),
        }
    }

    fn opening(&mut self) -> Vec<Bytes> {
        let mut out = Vec::new();
        for kind in ["response.created", "response.in_progress"] {
            let response = Value::Object(self.base.clone());
            out.push(self.event(kind, Self::object(json!({"response": response}))));
        }
        for item in self.leading.clone() {
            self.whole_item(item, &mut out);
        }
        out
    }

    fn text(&mut self, delta: &str) -> Bytes {
        let mut out = Vec::new();
        let index = match self.open {
            Some(index) => index,
            None => self.open_message(&mut out),
        };
        out.push(self.delta(index, delta));
        Bytes::from(out.concat())
    }

    fn closing(&mut self, seen: &ResponsesAssembler, settled: &Settled) -> Vec<Bytes> {
        let base = seen.ended_base();
        let items: Vec<Value> = seen.output().into_iter().map(|(i, _)| i).collect();
        let message_status = message_status(settled_status(&base, &settled.finish));
        let target = settled_output(&items, settled, &self.message_id, message_status);
        let mut out = Vec::new();
        let mut leading = self.leading.clone();
        for item in target {
            if kind(&item) == "message" {
                let index = match self.open {
                    Some(index) => index,
                    None => self.open_message(&mut out),
                };
                self.close_message(index, item, &mut out);
            } else if let Some(at) = leading.iter().position(|w| same_item(w, &item)) {
                // Written in the opening.
                leading.remove(at);
            } else if is_call(kind(&item)) {
                self.call_item(item, &mut out);
            } else {
                self.whole_item(item, &mut out);
            }
        }
        if let Some(index) = self.open {
            let text = self.streamed.clone();
            let item = message_item(&[], &text, &self.message_id, message_status);
            self.close_message(index, item, &mut out);
        }
        let body = settled_body(base, self.written.clone(), settled);
        let end = match body.get("status").and_then(Value::as_str) {
            Some("incomplete") => "response.incomplete",
            Some("failed") => "response.failed",
            _ => "response.completed",
        };
        out.push(self.event(end, Self::object(json!({"response": body}))));
        out
    }

    /// The whole stream of a buffered answer, item for item the output
    /// [`settle`](crate::api::model::ApiResponse::settle) gives: the settled
    /// leading items, the message, the rest.
    fn replay(seen: &ResponsesAssembler, settled: &Settled) -> Vec<Bytes> {
        let mut w = Self::new(seen);
        let items: Vec<Value> = seen.output().into_iter().map(|(i, _)| i).collect();
        let status = message_status(settled_status(&seen.ended_base(), &settled.finish));
        let target = settled_output(&items, settled, &w.message_id, status);
        w.leading = target.into_iter().take_while(is_copy).collect();
        let mut out = w.opening();
        if !settled.text.is_empty() {
            out.push(w.text(&settled.text));
        }
        out.extend(w.closing(seen, settled));
        out
    }

    fn error(error: &Error) -> Bytes {
        sse::named("error", &error_event(error, 0))
    }

    fn error_at(&mut self, error: &Error) -> Bytes {
        let seq = self.seq;
        self.seq += 1;
        sse::named("error", &error_event(error, seq))
    }
}

/// An `error` event: the OpenAI error's code and message.
fn error_event(error: &Error, seq: u64) -> Value {
    let body = error.to_openai_json();
    json!({"type": "error", "code": body["error"]["code"], "message": body["error"]["message"],
           "param": null, "sequence_number": seq})
}
