//! `pre_model_call`'s `messages`: one neutral rendering of a request's
//! entries, the same for every API, so that interceptors see one shape.
//!
//! Each entry is a Chat-like message: `{"role", "content"}` with the text
//! as the chain sees it (`system` for instructions, `user`, `assistant`
//! with its `tool_calls` in the Chat Completions shape when it proposed
//! any, `tool` with the `tool_call_id` it answers and the result as
//! text). Entries the API carries that are none of these (reasoning,
//! hosted-tool items) are not rendered; the types of content parts that
//! are not text are named in `extensions.hookwire.content_parts`
//! (`[{"message": index, "types": [...]}]`).
//!
//! A transform of `messages` is written back by index, text only: a
//! message whose `content` changed becomes that entry's rewrite. A
//! transform that changes anything the gateway cannot write back (the
//! number of messages, a role, tool calls, an id, content that is not
//! text) fails the request closed: nothing goes upstream.

use serde_json::{Map, Value, json};

use crate::api::{Entry, Rewrite};
use crate::error::Error;

/// The rendered messages, which entry each one is, and the non-text
/// parts by rendered message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    /// The `messages` member.
    pub(crate) messages: Value,
    /// `index[k]` is the entry message `k` renders.
    pub(crate) index: Vec<usize>,
    /// `extensions.hookwire.content_parts`, when any entry has them.
    pub(crate) content_parts: Option<Value>,
}

/// Renders `entries` (see the module docs).
pub(crate) fn render(entries: &[Entry]) -> Rendered {
    let mut messages = Vec::with_capacity(entries.len());
    let mut index = Vec::with_capacity(entries.len());
    let mut parts = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let (message, other) = match entry {
            Entry::Instructions(t) => {
                (json!({"role": "system", "content": t.text}), &t.other_parts)
            }
            Entry::User(t) => (json!({"role": "user", "content": t.text}), &t.other_parts),
            Entry::Assistant { text, tool_calls } => {
                let mut m = json!({"role": "assistant", "content": text.text});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(crate::api::chat::chat_tool_call)
                        .collect();
                }
                (m, &text.other_parts)
            }
            Entry::ToolResult {
                call_id, result, ..
            } => (
                json!({"role": "tool", "tool_call_id": call_id, "content": result_text(result)}),
                &Vec::new(),
            ),
            Entry::Other(_) => continue,
        };
        if !other.is_empty() {
            parts.push(json!({"message": messages.len(), "types": other}));
        }
        messages.push(message);
        index.push(i);
    }
    Rendered {
        messages: Value::Array(messages),
        index,
        content_parts: (!parts.is_empty()).then_some(Value::Array(parts)),
    }
}

/// A tool result as text: a string as it is, content blocks by their
/// text joined, anything else as JSON text.
pub(crate) fn result_text(result: &Value) -> String {
    match result {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(parts)
            if parts
                .iter()
                .all(|p| p.get("text").is_some_and(Value::is_string)) =>
        {
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        }
        other => other.to_string(),
    }
}

/// The rewrites a transformed `messages` member asks for (see the module
/// docs): `sent` is what was rendered, `got` what the chain returned.
pub(crate) fn write_back(
    rendered: &Rendered,
    got: &Value,
    entries: &[Entry],
) -> Result<Vec<(usize, Rewrite)>, Error> {
    let cannot = |what: String| Err(Error::Transform(format!("pre_model_call: {what}")));
    let (Some(sent), Some(got)) = (rendered.messages.as_array(), got.as_array()) else {
        return cannot("the transform left messages something other than an array".into());
    };
    if sent.len() != got.len() {
        return cannot(format!(
            "the transform changed the number of messages ({} to {}); only their text can be written back",
            sent.len(),
            got.len()
        ));
    }
    let mut out = Vec::new();
    for (k, (s, g)) in sent.iter().zip(got).enumerate() {
        if s == g {
            continue;
        }
        let (Some(s), Some(g)) = (s.as_object(), g.as_object()) else {
            return cannot(format!("message {k} is no longer an object"));
        };
        if let Some(key) = changed_besides_content(s, g) {
            return cannot(format!(
                "the transform changed {key:?} of message {k}; only its content can be written back"
            ));
        }
        let Some(Value::String(text)) = g.get("content") else {
            return cannot(format!("the content of message {k} is no longer text"));
        };
        let i = rendered.index[k];
        let rewrite = match &entries[i] {
            Entry::ToolResult { is_error, .. } => Rewrite::ToolResult {
                text: text.clone(),
                is_error: *is_error,
            },
            _ => Rewrite::Text(text.clone()),
        };
        out.push((i, rewrite));
    }
    Ok(out)
}

/// The first member other than `content` that differs between two
/// messages.
fn changed_besides_content(s: &Map<String, Value>, g: &Map<String, Value>) -> Option<String> {
    s.keys()
        .chain(g.keys())
        .find(|k| k.as_str() != "content" && s.get(*k) != g.get(*k))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Text;
    use hookwire_client::ToolCall;

    fn text(t: &str, parts: &[&str]) -> Text {
        Text {
            text: t.into(),
            other_parts: parts.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    fn transcript() -> Vec<Entry> {
        vec![
            Entry::Instructions(text("be brief", &[])),
            Entry::User(text("see alice@x", &["image_url"])),
            Entry::Other("reasoning".into()),
            Entry::Assistant {
                text: text("", &[]),
                tool_calls: vec![ToolCall::new("c1", "ls", json!({"p": 1}))],
            },
            Entry::ToolResult {
                call_id: "c1".into(),
                result: json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
                is_error: false,
            },
        ]
    }

    #[test]
    fn every_api_renders_one_chat_like_shape() {
        let r = render(&transcript());
        assert_eq!(
            r.messages,
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "see alice@x"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ab"},
            ])
        );
        assert_eq!(r.index, [0, 1, 3, 4]);
        assert_eq!(
            r.content_parts,
            Some(json!([{"message": 1, "types": ["image_url"]}]))
        );
    }

    #[test]
    fn a_text_transform_is_written_back_by_index() {
        let entries = transcript();
        let r = render(&entries);
        let mut got = r.messages.clone();
        got[1]["content"] = json!("see [email]");
        got[3]["content"] = json!("[redacted]");
        assert_eq!(
            write_back(&r, &got, &entries).unwrap(),
            [
                (1, Rewrite::Text("see [email]".into())),
                (
                    4,
                    Rewrite::ToolResult {
                        text: "[redacted]".into(),
                        is_error: false
                    }
                )
            ]
        );
        assert_eq!(write_back(&r, &r.messages, &entries).unwrap(), []);
    }

    #[test]
    fn a_transform_the_gateway_cannot_write_back_fails_closed() {
        let entries = transcript();
        let r = render(&entries);
        let mut fewer = r.messages.clone();
        fewer.as_array_mut().unwrap().pop();
        let mut role = r.messages.clone();
        role[1]["role"] = json!("system");
        let mut calls = r.messages.clone();
        calls[2]["tool_calls"] = json!([]);
        let mut parts = r.messages.clone();
        parts[1]["content"] = json!([{"type": "text", "text": "x"}]);
        let mut added = r.messages.clone();
        added[1]["name"] = json!("eve");
        for (got, says) in [
            (fewer, "number of messages"),
            (role, "\"role\""),
            (calls, "\"tool_calls\""),
            (parts, "no longer text"),
            (added, "\"name\""),
            (json!({}), "other than an array"),
        ] {
            let e = write_back(&r, &got, &entries).unwrap_err();
            assert!(matches!(e, Error::Transform(_)), "{e:?}");
            assert!(e.to_string().contains(says), "{e} / {says}");
        }
    }
}
