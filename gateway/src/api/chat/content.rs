//! A Chat message's `content`: a string, `null`, or an array of parts.
//! The chain governs its text (the `text` parts joined) and sees the
//! other parts (`image_url`, `input_audio`, `file`) by their type only;
//! a rewrite replaces the text parts and leaves the others in place.
//! Read from requests and answers alike.

use serde_json::{Value, json};

use crate::api::model::Text;

/// How many content parts one message may carry.
pub const MAX_PARTS: usize = 256;

/// The text of a `content`: a string, `null`, or an array of parts whose
/// `text` parts are joined and whose other parts are named.
pub(crate) fn text_of(content: Option<&Value>) -> Result<Text, String> {
    match content {
        None | Some(Value::Null) => Ok(Text::default()),
        Some(Value::String(s)) => Ok(Text {
            text: s.clone(),
            other_parts: Vec::new(),
        }),
        Some(Value::Array(parts)) => {
            if parts.len() > MAX_PARTS {
                return Err(format!("more than {MAX_PARTS} content parts"));
            }
            let mut text = Text::default();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => text.text.push_str(
                        part.get("text")
                            .and_then(Value::as_str)
                            .ok_or("a text part needs a string text")?,
                    ),
                    Some(other) => text.other_parts.push(other.to_owned()),
                    None => return Err("a content part needs a string type".into()),
                }
            }
            Ok(text)
        }
        Some(_) => Err("content must be a string, null or an array of parts".into()),
    }
}

/// `content` with its text replaced by `text`: a string (or none) becomes
/// `text`; in an array the text parts become one text part where the
/// first was (at the front when there was none), other parts untouched.
pub(super) fn replace_text(content: Option<&Value>, text: &str) -> Value {
    let Some(Value::Array(parts)) = content else {
        return Value::from(text);
    };
    let part = json!({"type": "text", "text": text});
    let first = parts.iter().position(is_text_part).unwrap_or(0);
    let mut out: Vec<Value> = Vec::with_capacity(parts.len() + 1);
    for (i, p) in parts.iter().enumerate() {
        if i == first {
            out.push(part.clone());
        }
        if !is_text_part(p) {
            out.push(p.clone());
        }
    }
    if parts.is_empty() {
        out.push(part);
    }
    Value::Array(out)
}

fn is_text_part(p: &Value) -> bool {
    p.get("type").and_then(Value::as_str) == Some("text")
}
