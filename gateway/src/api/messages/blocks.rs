//! Messages content blocks, as requests and answers carry them: a
//! block's type, the text the chain sees in a content and the text it
//! writes back, a call's `tool_use` block, and the blocks of a settled
//! answer. Bounded by [`MAX_BLOCKS`].

use hookwire_client::ToolCall;
use serde_json::{Map, Value, json};

use crate::api::model::{Finish, Settled, Text};

/// How many content blocks one message (or `system`, or a tool result's
/// content) may carry.
pub(crate) const MAX_BLOCKS: usize = 1024;

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
