//! Streamed Chat Completions: `chat.completion.chunk` events (`data:`
//! lines, ended by `data: [DONE]`) assembled into a whole answer, and the
//! chunks the client receives written from what the chain released.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::calls::chat_tool_call;
use super::response::{ChatResponse, finish_reason};
use crate::api::model::{EventAssembler, EventWriter, Settled};
use crate::bounds::MAX_TOOL_CALLS;
use crate::error::Error;
use crate::sse::{self, SseEvent};

/// A streamed completion assembled from its chunks (`choices[0]` only;
/// the gateway refuses `n > 1`).
#[derive(Debug, Default, Clone)]
pub(crate) struct ChatAssembler {
    id: Option<Value>,
    created: Option<Value>,
    model: Option<Value>,
    system_fingerprint: Option<Value>,
    content: String,
    /// The refusal's text (`delta.refusal`), governed as the answer's
    /// text when there is no content.
    refusal: String,
    /// The members of the upstream's chunks the writer never relays
    /// (`logprobs`, a legacy `function_call`), each named once.
    dropped: Vec<String>,
    /// `(id, name, arguments text)` by index.
    tool_calls: Vec<(String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    done: bool,
}

impl ChatAssembler {
    fn add_chunk(&mut self, chunk: &Value) -> Result<String, String> {
        if !chunk.is_object() {
            return Err("an upstream chunk is not an object".into());
        }
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
            return Ok(String::new());
        };
        let mut text = String::new();
        if choice.get("logprobs").is_some_and(|l| !l.is_null()) {
            self.drop_member("choices[0].logprobs");
        }
        if chunk["choices"].as_array().is_some_and(|c| c.len() > 1) {
            self.drop_member("choices[1..]");
        }
        if let Some(delta) = choice.get("delta") {
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                self.content.push_str(t);
                text.push_str(t);
            }
            if let Some(t) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.push_str(t);
                text.push_str(t);
            }
            if delta.get("function_call").is_some_and(|f| !f.is_null()) {
                self.drop_member("choices[0].delta.function_call");
            }
            for tc in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                let index = usize::try_from(index).unwrap_or(usize::MAX);
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
        Ok(text)
    }

    fn drop_member(&mut self, name: &str) {
        if !self.dropped.iter().any(|d| d == name) {
            self.dropped.push(name.to_owned());
        }
    }

    /// Whether the answer is a refusal alone (its text is the refusal's).
    fn refusal_only(&self) -> bool {
        self.content.is_empty() && !self.refusal.is_empty()
    }

    /// The assembled message, in the whole answer's shape: a message of
    /// tool calls alone (or a refusal alone) has `content: null`, as a
    /// whole answer (and [`ChatResponse`]'s settle) gives it.
    fn message(&self) -> Value {
        let content = if self.content.is_empty()
            && (!self.tool_calls.is_empty() || !self.refusal.is_empty())
        {
            Value::Null
        } else {
            Value::from(self.content.as_str())
        };
        let mut m = json!({"role": "assistant", "content": content});
        if !self.refusal.is_empty() {
            m["refusal"] = Value::from(self.refusal.as_str());
        }
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

impl EventAssembler for ChatAssembler {
    type Response = ChatResponse;

    fn add(&mut self, event: &SseEvent) -> Result<String, String> {
        if self.done {
            return Ok(String::new());
        }
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        self.add_chunk(&event.json()?)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn dropped(&self) -> Vec<String> {
        self.dropped.clone()
    }

    fn finish(&self) -> Result<ChatResponse, String> {
        let finish = self
            .finish_reason
            .clone()
            .ok_or("the stream ended before its finish reason")?;
        if let Some(i) = self
            .tool_calls
            .iter()
            .position(|(id, name, _)| id.is_empty() || name.is_empty())
        {
            // A gap in the indexes, or a call never named: nothing the
            // chain could judge by its name.
            return Err(format!(
                "the stream left tool call {i} without an id or a name"
            ));
        }
        let mut body = Map::new();
        body.insert(
            "id".into(),
            self.id.clone().unwrap_or(Value::from("chatcmpl-hookwire")),
        );
        body.insert("object".into(), Value::from("chat.completion"));
        body.insert(
            "created".into(),
            self.created.clone().unwrap_or(Value::from(0)),
        );
        body.insert(
            "model".into(),
            self.model.clone().unwrap_or(Value::from("")),
        );
        if let Some(f) = &self.system_fingerprint {
            body.insert("system_fingerprint".into(), f.clone());
        }
        body.insert(
            "choices".into(),
            json!([{"index": 0, "message": self.message(), "finish_reason": finish}]),
        );
        if let Some(u) = &self.usage {
            body.insert("usage".into(), u.clone());
        }
        ChatResponse::from_value(Value::Object(body)).map_err(|e| e.to_string())
    }
}

/// Writes `chat.completion.chunk` events with the upstream's id, creation
/// time, model and fingerprint.
#[derive(Debug)]
pub(crate) struct ChatWriter {
    meta: ChatAssembler,
    /// Whether the released text goes out as `refusal` deltas: the
    /// upstream refused, and the chain released the refusal unchanged
    /// (or, streamed incrementally, is releasing it).
    as_refusal: bool,
}

impl ChatWriter {
    fn chunk(&self, delta: Value, finish: Value) -> Value {
        let a = &self.meta;
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
}

impl EventWriter for ChatWriter {
    type Assembler = ChatAssembler;

    fn new(seen: &ChatAssembler) -> Self {
        let meta = ChatAssembler {
            id: seen.id.clone(),
            created: seen.created.clone(),
            model: seen.model.clone(),
            system_fingerprint: seen.system_fingerprint.clone(),
            ..ChatAssembler::default()
        };
        Self {
            meta,
            as_refusal: seen.refusal_only(),
        }
    }

    fn opening(&mut self) -> Vec<Bytes> {
        let role = json!({"role": "assistant", "content": ""});
        vec![sse::data(&self.chunk(role, Value::Null))]
    }

    fn text(&mut self, delta: &str) -> Bytes {
        let member = if self.as_refusal {
            "refusal"
        } else {
            "content"
        };
        sse::data(&self.chunk(json!({member: delta}), Value::Null))
    }

    /// As the default, with a refusal released unchanged written as
    /// `refusal` deltas and a rewritten one as content, like the whole
    /// answer's settle.
    fn replay(seen: &ChatAssembler, settled: &Settled) -> Vec<Bytes> {
        let mut w = Self::new(seen);
        w.as_refusal = seen.refusal_only() && !settled.drops_copies();
        let mut out = w.opening();
        if !settled.text.is_empty() {
            out.push(w.text(&settled.text));
        }
        out.extend(w.closing(seen, settled));
        out
    }

    fn closing(&mut self, seen: &ChatAssembler, settled: &Settled) -> Vec<Bytes> {
        let mut events = Vec::new();
        for (i, call) in settled.tool_calls.iter().enumerate() {
            let mut tc = chat_tool_call(call);
            tc["index"] = Value::from(i);
            events.push(self.chunk(json!({"tool_calls": [tc]}), Value::Null));
        }
        events.push(self.chunk(json!({}), Value::from(finish_reason(&settled.finish))));
        if let Some(usage) = &seen.usage {
            let mut u = self.chunk(json!({}), Value::Null);
            u["choices"] = json!([]);
            u["usage"] = usage.clone();
            events.push(u);
        }
        let mut out: Vec<Bytes> = events.iter().map(sse::data).collect();
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        out
    }

    fn error(error: &Error) -> Bytes {
        sse::data(&error.to_openai_json())
    }
}
