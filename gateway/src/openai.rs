//! The OpenAI Chat Completions shapes the gateway reads and writes: tool
//! calls to and from hookwire's [`ToolCall`], the notice a blocked call
//! leaves, server-sent events parsed from the upstream (bounded) and
//! assembled, and the events written back to the client.

use bytes::Bytes;
use hookwire_client::ToolCall;
use serde_json::{Map, Value, json};

/// The most bytes one server-sent event may hold.
pub const MAX_EVENT_BYTES: usize = 1 << 20;
/// How many tool calls one response may propose.
pub const MAX_TOOL_CALLS: usize = 128;

/// hookwire's [`ToolCall`] for each OpenAI tool call of `message`
/// (`arguments` decoded; text that is not JSON stays a string).
pub(crate) fn tool_calls_of(message: &Value) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    if calls.len() > MAX_TOOL_CALLS {
        return Err(format!("more than {MAX_TOOL_CALLS} tool calls"));
    }
    calls
        .iter()
        .map(|c| {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .ok_or("a tool call has no id")?;
            let f = c.get("function").ok_or("a tool call has no function")?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool call has no function name")?;
            let args = f.get("arguments").and_then(Value::as_str).unwrap_or("{}");
            let args = serde_json::from_str(args).unwrap_or_else(|_| Value::from(args));
            Ok(ToolCall::new(id, name, args))
        })
        .collect()
}

/// The OpenAI tool call for hookwire's [`ToolCall`].
pub(crate) fn openai_tool_call(call: &ToolCall) -> Value {
    let arguments = match &call.args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    json!({"id": call.id, "type": "function",
           "function": {"name": call.name, "arguments": arguments}})
}

/// The tool-message content the model sees for a result a verdict
/// withheld: the point and the machine reason, never the verdict's message.
pub(crate) fn blocked_result(point: &str, reason: Option<&str>) -> String {
    json!({"error": "blocked", "interception_point": point, "reason": reason}).to_string()
}

/// The line the assistant message carries for a proposed tool call that
/// `pre_tool_call` denied (the call itself is removed).
pub(crate) fn blocked_call_notice(call: &ToolCall, reason: Option<&str>) -> String {
    format!(
        "[hookwire] tool call {:?} ({}) was blocked: {}",
        call.name,
        call.id,
        reason.unwrap_or("denied")
    )
}

/// The content an `output` deny leaves (with `finish_reason:
/// "content_filter"`).
pub(crate) fn withheld_notice(reason: Option<&str>) -> String {
    format!(
        "[hookwire] the response was withheld: {}",
        reason.unwrap_or("denied")
    )
}

/// Text content as a string (`null` and non-text parts read as empty; an
/// array of text parts is joined).
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Splits a server-sent event stream into the `data` of each event,
/// bounded per event.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, sep)) = find_blank_line(&self.buf) {
            let event: Vec<u8> = self.buf.drain(..end + sep).take(end).collect();
            let text = String::from_utf8(event).map_err(|_| "an event is not UTF-8")?;
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                events.push(data.join("\n"));
            }
        }
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(format!("an event exceeds {MAX_EVENT_BYTES} bytes"));
        }
        Ok(events)
    }
}

fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// A streamed completion assembled from its chunks.
#[derive(Debug, Default, Clone)]
pub(crate) struct Assembled {
    pub(crate) id: Option<Value>,
    pub(crate) created: Option<Value>,
    pub(crate) model: Option<Value>,
    pub(crate) system_fingerprint: Option<Value>,
    pub(crate) content: String,
    /// `(id, name, arguments text)` by index.
    pub(crate) tool_calls: Vec<(String, String, String)>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<Value>,
}

impl Assembled {
    /// Adds one chunk (`choices[0]` only; the gateway refuses `n > 1`).
    pub(crate) fn add(&mut self, chunk: &Value) -> Result<(), String> {
        for (k, slot) in [
            ("id", &mut self.id),
            ("created", &mut self.created),
            ("model", &mut self.model),
            ("system_fingerprint", &mut self.system_fingerprint),
        ] {
            if slot.is_none()
                && let Some(v) = chunk.get(k).filter(|v| !v.is_null())
            {
                *slot = Some(v.clone());
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(u.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.content.push_str(text);
            }
            for tc in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                if index >= MAX_TOOL_CALLS {
                    return Err(format!("more than {MAX_TOOL_CALLS} tool calls"));
                }
                while self.tool_calls.len() <= index {
                    self.tool_calls.push(Default::default());
                }
                let slot = &mut self.tool_calls[index];
                if let Some(id) = tc.get("id").and_then(Value::as_str) {
                    slot.0.push_str(id);
                }
                if let Some(f) = tc.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        slot.1.push_str(n);
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.2.push_str(a);
                    }
                }
            }
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_owned());
        }
        Ok(())
    }

    /// The assembled message, in the non-streaming shape.
    pub(crate) fn message(&self) -> Value {
        let mut m = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            m["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function",
                           "function": {"name": name, "arguments": args}})
                })
                .collect();
        }
        m
    }
}

/// One `chat.completion.chunk` event with the upstream's id, creation
/// time, model and fingerprint.
pub(crate) fn chunk_event(a: &Assembled, delta: Value, finish: Value) -> Value {
    let mut chunk = Map::new();
    chunk.insert(
        "id".into(),
        a.id.clone().unwrap_or(Value::from("chatcmpl-hookwire")),
    );
    chunk.insert("object".into(), Value::from("chat.completion.chunk"));
    chunk.insert(
        "created".into(),
        a.created.clone().unwrap_or(Value::from(0)),
    );
    chunk.insert("model".into(), a.model.clone().unwrap_or(Value::from("")));
    if let Some(f) = &a.system_fingerprint {
        chunk.insert("system_fingerprint".into(), f.clone());
    }
    chunk.insert(
        "choices".into(),
        json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
    );
    Value::Object(chunk)
}

/// The closing events of a streamed answer: each permitted tool call, the
/// finish reason, the usage when the upstream reported it, `[DONE]`.
pub(crate) fn closing_events(
    a: &Assembled,
    tool_calls: &[Value],
    finish_reason: &str,
) -> Vec<Bytes> {
    let mut events = Vec::new();
    for (i, tc) in tool_calls.iter().enumerate() {
        let mut tc = tc.clone();
        tc["index"] = Value::from(i);
        events.push(chunk_event(a, json!({"tool_calls": [tc]}), Value::Null));
    }
    events.push(chunk_event(a, json!({}), Value::from(finish_reason)));
    if let Some(usage) = &a.usage {
        let mut u = chunk_event(a, json!({}), Value::Null);
        u["choices"] = json!([]);
        u["usage"] = usage.clone();
        events.push(u);
    }
    let mut out: Vec<Bytes> = events.iter().map(sse_data).collect();
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// The events the client receives for a (governed) streamed completion:
/// the role, the content, then [`closing_events`].
pub(crate) fn sse_events(
    a: &Assembled,
    content: Option<&str>,
    tool_calls: &[Value],
    finish_reason: &str,
) -> Vec<Bytes> {
    let mut out = vec![sse_data(&chunk_event(
        a,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ))];
    if let Some(text) = content.filter(|t| !t.is_empty()) {
        out.push(sse_data(&chunk_event(
            a,
            json!({"content": text}),
            Value::Null,
        )));
    }
    out.extend(closing_events(a, tool_calls, finish_reason));
    out
}

/// One `data:` event.
pub(crate) fn sse_data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_and_assemble() {
        let mut p = SseParser::default();
        let first = p
            .feed(b"data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"")
            .unwrap();
        assert_eq!(first.len(), 1);
        let rest = p
            .feed(b"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
            .unwrap();
        assert_eq!(rest.len(), 3);
        let mut a = Assembled::default();
        for e in first.iter().chain(&rest[..2]) {
            a.add(&serde_json::from_str(e).unwrap()).unwrap();
        }
        assert_eq!(a.content, "Hello");
        assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
        let calls = tool_calls_of(&a.message()).unwrap();
        assert_eq!(calls, [ToolCall::new("t", "ls", json!({}))]);
        assert_eq!(rest[2], "[DONE]");
    }

    #[test]
    fn an_unbounded_event_is_refused() {
        let mut p = SseParser::default();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(p.feed(&big).is_err());
    }
}
