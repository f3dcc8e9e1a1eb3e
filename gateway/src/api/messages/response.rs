//! A whole Messages answer (`{"type": "message", "content": [blocks],
//! "stop_reason", "usage", …}`): its neutral reading, and the answer the
//! client receives once the chain has settled it.

use hookwire_client::ModelResponse;
use serde_json::{Map, Value};

use super::blocks::{MAX_BLOCKS, block_type, settled_content};
use super::request::tool_use;
use super::stop::{neutral_finish, stop_reason};
use crate::api::model::{ApiResponse, Settled};
use crate::bounds::MAX_TOOL_CALLS;
use crate::error::Error;

/// A decoded whole answer, keeping every member it does not govern
/// (`id`, `model`, `usage`, `container`, …) as the upstream sent it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MessagesResponse {
    message: Map<String, Value>,
}

fn unusable(message: impl Into<String>) -> Error {
    Error::UpstreamResponse(message.into())
}

impl MessagesResponse {
    /// Decodes an upstream's whole answer.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Error> {
        let message: Map<String, Value> = serde_json::from_slice(body)
            .map_err(|_| unusable("the upstream's message is not a JSON object"))?;
        Self::from_message(message)
    }

    /// Checks a message (whole, or assembled from a stream): content
    /// bounded, blocks typed, `tool_use` blocks well formed, a
    /// `stop_reason` (never null in a whole message).
    pub(crate) fn from_message(message: Map<String, Value>) -> Result<Self, Error> {
        let Some(Value::Array(blocks)) = message.get("content") else {
            return Err(unusable("the upstream's message has no content array"));
        };
        if blocks.len() > MAX_BLOCKS {
            return Err(unusable(format!(
                "the upstream's message has more than {MAX_BLOCKS} blocks"
            )));
        }
        let mut calls = 0;
        for (b, block) in blocks.iter().enumerate() {
            match block.get("type") {
                Some(Value::String(t)) if t == "tool_use" => {
                    calls += 1;
                    if calls > MAX_TOOL_CALLS {
                        return Err(unusable(format!(
                            "the upstream's message proposes more than {MAX_TOOL_CALLS} tool calls"
                        )));
                    }
                    tool_use(block, &|| format!("content[{b}]"))
                        .map_err(|e| unusable(format!("the upstream's {e}")))?;
                }
                Some(Value::String(t)) if t == "text" => {
                    if !block.get("text").is_some_and(Value::is_string) {
                        return Err(unusable(format!(
                            "the upstream's content[{b}] is a text block without text"
                        )));
                    }
                }
                Some(Value::String(_)) => {}
                _ => {
                    return Err(unusable(format!(
                        "the upstream's content[{b}] is not a block with a type"
                    )));
                }
            }
        }
        if !message.get("stop_reason").is_some_and(Value::is_string) {
            return Err(unusable("the upstream's message has no stop_reason"));
        }
        Ok(Self { message })
    }

    /// The content blocks (checked at decoding).
    pub(crate) fn blocks(&self) -> &[Value] {
        self.message
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The upstream's `stop_reason`.
    pub(crate) fn stop_reason(&self) -> Option<&str> {
        self.message.get("stop_reason").and_then(Value::as_str)
    }
}

impl ApiResponse for MessagesResponse {
    /// The text blocks joined (`null` when there is none), the `tool_use`
    /// blocks as calls, and `stop_reason` in neutral terms (`tool_use` →
    /// `tool_calls`, `max_tokens` → `length`, `end_turn` and
    /// `stop_sequence` → `stop`, any other word as it is).
    fn answer(&self) -> Result<ModelResponse, Error> {
        let mut text: Option<String> = None;
        let mut tool_calls = Vec::new();
        for (b, block) in self.blocks().iter().enumerate() {
            match block_type(block) {
                "text" => text.get_or_insert_default().push_str(
                    block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                "tool_use" => tool_calls.push(
                    tool_use(block, &|| format!("content[{b}]"))
                        .map_err(|e| unusable(format!("the upstream's {e}")))?,
                ),
                _ => {}
            }
        }
        Ok(ModelResponse {
            content: text.map_or(Value::Null, Value::String),
            tool_calls,
            finish_reason: neutral_finish(self.stop_reason().unwrap_or_default()),
        })
    }

    /// The types of the blocks that are neither text nor `tool_use`:
    /// `thinking`, `redacted_thinking`, `server_tool_use`,
    /// `web_search_tool_result`, ….
    fn other_outputs(&self) -> Vec<String> {
        self.blocks()
            .iter()
            .map(block_type)
            .filter(|t| *t != "text" && *t != "tool_use")
            .map(str::to_owned)
            .collect()
    }

    /// The blocks that are neither text nor `tool_use`, when the answer
    /// was withheld or rewritten: [`settle`](Self::settle) drops them.
    fn removed(&self, settled: &Settled) -> Vec<String> {
        if !settled.drops_copies() {
            return Vec::new();
        }
        self.blocks()
            .iter()
            .enumerate()
            .map(|(i, b)| (i, block_type(b)))
            .filter(|(_, t)| *t != "text" && *t != "tool_use")
            .map(|(i, t)| format!("content[{i}]({t})"))
            .collect()
    }

    /// The message with its content settled (see [`settled_content`]) and
    /// the settled `stop_reason` (`stop_sequence` kept only while the
    /// reason is the upstream's `stop_sequence`).
    fn settle(mut self, settled: &Settled) -> Value {
        let reason = stop_reason(&settled.finish, self.stop_reason());
        let content = settled_content(self.blocks(), settled);
        self.message.insert("content".into(), Value::Array(content));
        let sequence = match self.message.remove("stop_sequence") {
            Some(s) if reason == "stop_sequence" => s,
            _ => Value::Null,
        };
        self.message.insert("stop_sequence".into(), sequence);
        self.message
            .insert("stop_reason".into(), Value::String(reason));
        Value::Object(self.message)
    }
}
