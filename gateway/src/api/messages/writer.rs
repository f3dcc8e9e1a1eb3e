//! The Messages events the client receives, regenerated from what the
//! chain settled: `message_start` with the upstream's id, model and usage,
//! each block's start, deltas and stop with indexes counted from 0 in the
//! order written (a `tool_use` block's input as one `input_json_delta`,
//! thinking and server-tool blocks whole in their start), then
//! `message_delta` with the settled `stop_reason` and `message_stop`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::blocks::{block_type, settled_content, tool_use_block};
use super::error::error_body;
use super::stop::stop_reason;
use super::stream::MessagesAssembler;
use crate::api::model::{EventWriter, Settled};
use crate::error::Error;
use crate::sse;

/// Writes the events the client receives: one consistent sequence, block
/// indexes counted from 0 in the order written.
#[derive(Debug)]
pub(crate) struct MessagesWriter {
    start: Map<String, Value>,
    /// The index of the next block written.
    next: usize,
    /// The index of the text block, while open.
    text_open: Option<usize>,
    /// The upstream's whole pass-through blocks that came before its
    /// first text or call, written in the opening.
    lead: Vec<Value>,
    /// How many of the upstream's blocks the opening took.
    looked_at: usize,
}

impl MessagesWriter {
    fn event(name: &str, v: &Value) -> Bytes {
        sse::named(name, v)
    }

    fn block_start(&mut self, block: &Value) -> (usize, Bytes) {
        let index = self.next;
        self.next += 1;
        let e = json!({"type": "content_block_start", "index": index, "content_block": block});
        (index, Self::event("content_block_start", &e))
    }

    fn block_delta(index: usize, delta: Value) -> Bytes {
        let e = json!({"type": "content_block_delta", "index": index, "delta": delta});
        Self::event("content_block_delta", &e)
    }

    fn block_stop(index: usize) -> Bytes {
        let e = json!({"type": "content_block_stop", "index": index});
        Self::event("content_block_stop", &e)
    }

    /// The events of one whole block: a text block as its start and one
    /// `text_delta`, a `tool_use` block with its input as one
    /// `input_json_delta`, any other block whole in its start.
    fn whole_block(&mut self, block: &Value) -> Vec<Bytes> {
        match block_type(block) {
            "text" => {
                let text = block.get("text").cloned().unwrap_or_default();
                let (i, start) = self.block_start(&json!({"type": "text", "text": ""}));
                let delta = json!({"type": "text_delta", "text": text});
                vec![start, Self::block_delta(i, delta), Self::block_stop(i)]
            }
            "tool_use" => {
                let mut head = block.clone();
                let input = head
                    .get_mut("input")
                    .map(Value::take)
                    .unwrap_or_else(|| json!({}));
                head["input"] = json!({});
                let (i, start) = self.block_start(&head);
                let delta = json!({"type": "input_json_delta", "partial_json": input.to_string()});
                vec![start, Self::block_delta(i, delta), Self::block_stop(i)]
            }
            _ => {
                let (i, start) = self.block_start(block);
                vec![start, Self::block_stop(i)]
            }
        }
    }

    /// `message_delta` with the settled stop reason and the upstream's
    /// usage, then `message_stop`.
    fn ending(seen: &MessagesAssembler, settled: &Settled) -> Vec<Bytes> {
        let upstream = seen.delta.get("stop_reason").and_then(Value::as_str);
        let reason = stop_reason(&settled.finish, upstream);
        let mut delta = seen.delta.clone();
        // The assembled message takes the delta's stop_sequence over
        // message_start's; the written one must say the same.
        let said = delta.remove("stop_sequence").or_else(|| {
            seen.start
                .as_ref()
                .and_then(|m| m.get("stop_sequence").cloned())
        });
        let sequence = match said {
            Some(s) if reason == "stop_sequence" => s,
            _ => Value::Null,
        };
        delta.insert("stop_reason".into(), Value::from(reason));
        delta.insert("stop_sequence".into(), sequence);
        let mut usage = seen.delta_usage.clone();
        if !usage.contains_key("output_tokens")
            && let Some(out) = seen.usage().and_then(|u| u.get("output_tokens").cloned())
        {
            usage.insert("output_tokens".into(), out);
        }
        let e = json!({"type": "message_delta", "delta": delta, "usage": usage});
        vec![
            Self::event("message_delta", &e),
            Self::event("message_stop", &json!({"type": "message_stop"})),
        ]
    }
}

/// Whether a block is one the writer passes through whole (neither text
/// nor a tool call the chain governs).
fn passes_through(block: &Value) -> bool {
    !matches!(block_type(block), "text" | "tool_use")
}

impl EventWriter for MessagesWriter {
    type Assembler = MessagesAssembler;

    fn new(seen: &MessagesAssembler) -> Self {
        let lead: Vec<Value> = seen
            .blocks
            .iter()
            .zip(&seen.state)
            .take_while(|(b, (_, open))| !open && passes_through(b))
            .map(|(b, _)| b.clone())
            .collect();
        Self {
            start: seen.start_message(),
            next: 0,
            text_open: None,
            looked_at: lead.len(),
            lead,
        }
    }

    /// `message_start` with the upstream's id, model and usage, then the
    /// blocks that came whole before the first text (thinking must stay
    /// first).
    fn opening(&mut self) -> Vec<Bytes> {
        let e = json!({"type": "message_start", "message": self.start});
        let mut out = vec![Self::event("message_start", &e)];
        for b in std::mem::take(&mut self.lead) {
            out.extend(self.whole_block(&b));
        }
        out
    }

    fn text(&mut self, delta: &str) -> Bytes {
        let mut out = Vec::new();
        let index = match self.text_open {
            Some(i) => i,
            None => {
                let (i, start) = self.block_start(&json!({"type": "text", "text": ""}));
                out.extend_from_slice(&start);
                self.text_open = Some(i);
                i
            }
        };
        let delta = json!({"type": "text_delta", "text": delta});
        out.extend_from_slice(&Self::block_delta(index, delta));
        Bytes::from(out)
    }

    /// The text block's stop, the pass-through blocks not yet written
    /// (none for a withheld answer), the permitted calls' `tool_use`
    /// blocks, `message_delta` and `message_stop`.
    fn closing(&mut self, seen: &MessagesAssembler, settled: &Settled) -> Vec<Bytes> {
        let mut out = Vec::new();
        if let Some(i) = self.text_open.take() {
            out.push(Self::block_stop(i));
        }
        if !settled.drops_copies() {
            let rest: Vec<Value> = seen.blocks[self.looked_at.min(seen.blocks.len())..]
                .iter()
                .filter(|b| passes_through(b))
                .cloned()
                .collect();
            for b in &rest {
                out.extend(self.whole_block(b));
            }
        }
        self.looked_at = seen.blocks.len();
        for call in &settled.tool_calls {
            out.extend(self.whole_block(&tool_use_block(call)));
        }
        out.extend(Self::ending(seen, settled));
        out
    }

    fn error(error: &Error) -> Bytes {
        Self::event("error", &error_body(error).1)
    }

    /// The whole stream of a buffered answer, block for block the content
    /// [`settle`](crate::api::model::ApiResponse::settle) gives.
    fn replay(seen: &MessagesAssembler, settled: &Settled) -> Vec<Bytes> {
        let mut w = Self::new(seen);
        w.lead.clear();
        let mut out = w.opening();
        for block in settled_content(&seen.blocks, settled) {
            out.extend(w.whole_block(&block));
        }
        out.extend(Self::ending(seen, settled));
        out
    }
}
