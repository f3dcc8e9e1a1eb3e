//! The Anthropic Messages API (`POST /v1/messages`): requests, whole
//! answers and streamed events translated to and from the neutral turn.
//!
//! The tool seams are content blocks: an assistant's `tool_use` blocks are
//! the calls it proposes, a user message's `tool_result` blocks answer
//! them. `system` is the instructions; `thinking`, `redacted_thinking`
//! and the server tools' blocks (`server_tool_use`,
//! `web_search_tool_result`, …) pass through untouched. Errors take the
//! API's own shape, `{"type": "error", "error": {"type", "message"}}`.
//! `docs/gateway-messages.md` maps every block and event to the points.

pub(crate) mod members;
mod request;
mod response;
mod stream;
#[cfg(test)]
mod tests;
mod writer;

use axum::http::StatusCode;
use hookwire_client::ToolCall;
use serde_json::{Map, Value, json};

use super::{Api, Finish, Settled, Text};
use crate::error::Error;

pub(crate) use request::MessagesRequest;
pub(crate) use response::MessagesResponse;
pub(crate) use stream::MessagesAssembler;
pub(crate) use writer::MessagesWriter;

/// How many content blocks one message (or `system`, or a tool result's
/// content) may carry.
pub(crate) const MAX_BLOCKS: usize = 1024;
/// How many tools one request may declare.
pub(crate) const MAX_TOOLS: usize = 1024;
/// The header the Anthropic SDKs send their key in.
pub(crate) const API_KEY_HEADER: &str = "x-api-key";

/// The Anthropic Messages API.
pub(crate) struct Messages;

impl Api for Messages {
    const NAME: &'static str = "messages";
    const ROUTE: &'static str = "/v1/messages";
    const UPSTREAM_PATH: &'static str = "/messages";
    type Request = MessagesRequest;
    type Response = MessagesResponse;
    type Assembler = MessagesAssembler;
    type Writer = MessagesWriter;

    fn decode_request(body: &[u8]) -> Result<Self::Request, Error> {
        MessagesRequest::decode(body)
    }

    fn decode_response(body: &[u8]) -> Result<Self::Response, Error> {
        MessagesResponse::decode(body)
    }

    fn error_body(error: &Error) -> (StatusCode, Value) {
        error_body(error)
    }

    fn pooled_credential_header() -> &'static str {
        API_KEY_HEADER
    }
}

/// The Anthropic error `type` for a status, as the SDKs map them to their
/// exception classes.
fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The status and body of `error` in the Messages shape; a deny is a
/// `permission_error` whose message names the point and the reason.
pub(crate) fn error_body(error: &Error) -> (StatusCode, Value) {
    let status = error.status();
    if let Error::UpstreamRefused { body, .. } = error {
        return (status, body.clone());
    }
    let body = json!({
        "type": "error",
        "error": {"type": error_type(status), "message": error.to_string()},
    });
    (status, body)
}

/// The `type` of a content block (`""` when it has none).
pub(crate) fn block_type(block: &Value) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The text of a message's content as the chain sees it: a string is its
/// one text part; of an array, the `text` blocks joined, and the types of
/// the other blocks `is_part` accepts (the rest are entries of their own,
/// or tool calls).
pub(crate) fn text_of(content: &Value, is_part: impl Fn(&str) -> bool) -> Text {
    match content {
        Value::String(s) => Text {
            text: s.clone(),
            other_parts: Vec::new(),
        },
        Value::Array(blocks) => {
            let mut text = Text::default();
            for b in blocks {
                match block_type(b) {
                    "text" => text
                        .text
                        .push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                    t if is_part(t) => text.other_parts.push(t.to_owned()),
                    _ => {}
                }
            }
            text
        }
        _ => Text::default(),
    }
}

/// Writes `text` into a message's content: a string stays a string; of
/// blocks, the text blocks are replaced by one holding it where the first
/// was (its `cache_control` kept, its `citations`, which pointed into the
/// old text, dropped), or appended when there was none. An empty `text`
/// removes the text blocks when other blocks remain (the API refuses an
/// empty text block).
pub(crate) fn write_text(content: &mut Value, text: &str) {
    let Value::Array(blocks) = content else {
        *content = Value::String(text.to_owned());
        return;
    };
    // Only non-text blocks precede the first text block, so its place is
    // the same once the text blocks are gone.
    let first = blocks.iter().position(|b| block_type(b) == "text");
    let at = first.unwrap_or(blocks.len());
    let kept = first.map(|i| blocks[i].clone());
    blocks.retain(|b| block_type(b) != "text");
    if text.is_empty() && !blocks.is_empty() {
        return;
    }
    let mut block = match kept {
        Some(Value::Object(mut o)) => {
            o.remove("citations");
            o
        }
        _ => Map::from_iter([("type".to_owned(), Value::from("text"))]),
    };
    block.insert("text".into(), Value::from(text));
    blocks.insert(at.min(blocks.len()), Value::Object(block));
}

/// A `tool_use` content block for a call.
pub(crate) fn tool_use_block(call: &ToolCall) -> Value {
    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.args})
}

/// The Messages `stop_reason` of a settled answer; `upstream` is the one
/// the upstream gave, kept when it said `stop_sequence` and the answer
/// still stops there.
pub(crate) fn stop_reason(finish: &Finish, upstream: Option<&str>) -> String {
    match finish {
        Finish::Stop if upstream == Some("stop_sequence") => "stop_sequence".into(),
        Finish::Stop => "end_turn".into(),
        Finish::ToolCalls => "tool_use".into(),
        Finish::Length => "max_tokens".into(),
        // The API's own stop reason when its classifiers intervene.
        Finish::Withheld => "refusal".into(),
        Finish::Upstream(word) => word.clone(),
    }
}

/// The neutral finish reason of an upstream `stop_reason`.
pub(crate) fn neutral_finish(stop_reason: &str) -> String {
    match stop_reason {
        "tool_use" => "tool_calls".into(),
        "max_tokens" => "length".into(),
        "end_turn" | "stop_sequence" => "stop".into(),
        other => other.to_owned(),
    }
}

/// The content blocks of a settled answer, from the blocks the upstream
/// answered: a withheld answer is its notice alone; a rewritten one its
/// text and permitted calls alone (thinking and server-tool blocks would
/// repeat what the chain took out); otherwise the blocks
/// that are neither text nor `tool_use` stay in place (thinking, server
/// tools), one text block holds the settled text where the first text
/// block was (before the first `tool_use` block, or last, when there was
/// none; no block when the text is empty), and the permitted calls'
/// `tool_use` blocks stand where the first proposed one was (or last).
pub(crate) fn settled_content(blocks: &[Value], settled: &Settled) -> Vec<Value> {
    let text = (!settled.text.is_empty()).then(|| json!({"type": "text", "text": settled.text}));
    if settled.finish == Finish::Withheld {
        return text.into_iter().collect();
    }
    if settled.drops_copies() {
        // Thinking and server-tool blocks repeat what the chain took out.
        let mut out: Vec<Value> = text.into_iter().collect();
        out.extend(settled.tool_calls.iter().map(tool_use_block));
        return out;
    }
    let mut text = text;
    let mut calls_placed = false;
    let mut out = Vec::with_capacity(blocks.len() + 1);
    for b in blocks {
        match block_type(b) {
            "text" => out.extend(text.take()),
            "tool_use" => {
                if !calls_placed {
                    out.extend(text.take());
                    out.extend(settled.tool_calls.iter().map(tool_use_block));
                    calls_placed = true;
                }
            }
            _ => out.push(b.clone()),
        }
    }
    out.extend(text);
    if !calls_placed {
        out.extend(settled.tool_calls.iter().map(tool_use_block));
    }
    out
}
