//! The three wire APIs the `gateway_peer` section measures, as both ends
//! of the load see them: the request a client sends (whole or streamed),
//! the answer the mock upstream gives (the API's whole response, or its
//! stream events in the order the provider documents them), and what the
//! client checks before it counts a request as done.

use bytes::Bytes;
use serde_json::{Value, json};

/// The answer every upstream call gets, split in two stream deltas.
pub const ANSWER: [&str; 2] = ["The answer ", "is 42."];

/// The text a probe asks the mock upstream to answer with instead, which
/// the LiteLLM guardrail refuses at `post_call`
/// (`benches/peer/hookwire_allow_guardrail.py`).
pub const DENY_OUTPUT: &str = "hookwire-peer-deny-output";
/// The text a probe puts in its input, which the guardrail refuses at
/// `pre_call`.
pub const DENY_INPUT: &str = "hookwire-peer-deny-input";

/// The model names of `benches/peer/litellm.yaml`: every path gets the
/// same body.
const OPENAI_MODEL: &str = "mock-gpt";
const ANTHROPIC_MODEL: &str = "mock-claude";

/// One wire API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

impl Api {
    /// Every API, in the table's order.
    pub const ALL: [Api; 3] = [Api::Chat, Api::Responses, Api::Messages];

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "Chat Completions",
            Api::Responses => "Responses",
            Api::Messages => "Messages",
        }
    }

    /// A short name for session ids.
    pub fn tag(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "resp",
            Api::Messages => "msg",
        }
    }

    /// The route, the same on the upstream, the gateway and LiteLLM.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
        }
    }

    /// The API's credential headers carrying `key`.
    pub fn auth_headers(self, key: &str) -> Vec<(&'static str, String)> {
        match self {
            Api::Chat | Api::Responses => vec![("authorization", format!("Bearer {key}"))],
            Api::Messages => vec![
                ("x-api-key", key.to_owned()),
                ("anthropic-version", "2023-06-01".to_owned()),
            ],
        }
    }

    /// The body of request `n`: one user message.
    pub fn request(self, stream: bool, text: &str) -> Bytes {
        let body = match self {
            Api::Chat => json!({
                "model": OPENAI_MODEL,
                "messages": [{"role": "user", "content": text}],
                "stream": stream,
            }),
            Api::Responses => json!({
                "model": OPENAI_MODEL,
                "input": text,
                "stream": stream,
            }),
            Api::Messages => json!({
                "model": ANTHROPIC_MODEL,
                "max_tokens": 64,
                "messages": [{"role": "user", "content": text}],
                "stream": stream,
            }),
        };
        Bytes::from(body.to_string())
    }

    /// What ends a complete stream of this API.
    fn stream_end(self) -> &'static str {
        match self {
            Api::Chat => "[DONE]",
            Api::Responses => "response.completed",
            Api::Messages => "message_stop",
        }
    }

    /// Whether `body` (status 200) is a complete answer: the answer's text
    /// is in it, and a stream reached its end without an error event.
    pub fn complete(self, stream: bool, body: &[u8]) -> bool {
        let text = String::from_utf8_lossy(body);
        let answered = ANSWER.iter().all(|part| text.contains(part));
        if !stream {
            return answered && serde_json::from_slice::<Value>(body).is_ok();
        }
        // An error event carries an error object (a `"error": null` member
        // of a Responses object is no error).
        let errored = text.contains("\"error\":{") || text.contains("\"error\": {");
        answered && text.contains(self.stream_end()) && !errored
    }

    /// The mock upstream's whole answer with `text`.
    pub fn whole(self, text: &str) -> Bytes {
        let body = match self {
            Api::Chat => json!({
                "id": "chatcmpl-peer", "object": "chat.completion", "created": 1_700_000_000,
                "model": OPENAI_MODEL, "system_fingerprint": null,
                "choices": [{"index": 0, "logprobs": null, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12},
            }),
            Api::Responses => response_object("completed", Some(text)),
            Api::Messages => json!({
                "id": "msg_peer", "type": "message", "role": "assistant",
                "model": ANTHROPIC_MODEL,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 8, "output_tokens": 4},
            }),
        };
        Bytes::from(body.to_string())
    }

    /// The mock upstream's stream, one server-sent event per item, with
    /// `parts` as the text deltas.
    pub fn events(self, parts: &[&str]) -> Vec<Bytes> {
        let text: String = parts.concat();
        match self {
            Api::Chat => {
                let chunk = |delta: Value, finish: Value| {
                    json!({"id": "chatcmpl-peer", "object": "chat.completion.chunk",
                           "created": 1_700_000_000, "model": OPENAI_MODEL,
                           "system_fingerprint": null,
                           "choices": [{"index": 0, "delta": delta, "logprobs": null,
                                        "finish_reason": finish}]})
                };
                let mut out = vec![data(&chunk(
                    json!({"role": "assistant", "content": ""}),
                    Value::Null,
                ))];
                for p in parts {
                    out.push(data(&chunk(json!({"content": p}), Value::Null)));
                }
                out.push(data(&chunk(json!({}), json!("stop"))));
                out.push(Bytes::from_static(b"data: [DONE]\n\n"));
                out
            }
            Api::Responses => responses_events(parts, &text),
            Api::Messages => {
                let mut out = vec![
                    named(
                        "message_start",
                        json!({"type": "message_start", "message": {
                            "id": "msg_peer", "type": "message", "role": "assistant",
                            "model": ANTHROPIC_MODEL, "content": [], "stop_reason": null,
                            "stop_sequence": null,
                            "usage": {"input_tokens": 8, "output_tokens": 1}}}),
                    ),
                    named(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": 0,
                               "content_block": {"type": "text", "text": ""}}),
                    ),
                    named("ping", json!({"type": "ping"})),
                ];
                for p in parts {
                    out.push(named(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": p}}),
                    ));
                }
                out.push(named(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ));
                out.push(named(
                    "message_delta",
                    json!({"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                           "usage": {"output_tokens": 4}}),
                ));
                out.push(named("message_stop", json!({"type": "message_stop"})));
                out
            }
        }
    }
}

/// A Responses `response` object in `status`, with one output message
/// holding `text` (none while in progress).
fn response_object(status: &str, text: Option<&str>) -> Value {
    let output = match text {
        Some(t) => json!([message_item("completed", Some(t))]),
        None => json!([]),
    };
    json!({
        "id": "resp_peer", "object": "response", "created_at": 1_700_000_000,
        "status": status, "model": OPENAI_MODEL, "output": output,
        "error": null, "incomplete_details": null, "instructions": null,
        "metadata": {}, "parallel_tool_calls": true, "previous_response_id": null,
        "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [],
        "text": {"format": {"type": "text"}}, "truncation": "disabled",
        "usage": if text.is_some() {
            json!({"input_tokens": 8, "output_tokens": 4, "total_tokens": 12,
                   "input_tokens_details": {"cached_tokens": 0},
                   "output_tokens_details": {"reasoning_tokens": 0}})
        } else {
            Value::Null
        },
    })
}

/// A Responses output message item.
fn message_item(status: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(t) => json!([{"type": "output_text", "text": t, "annotations": []}]),
        None => json!([]),
    };
    json!({"type": "message", "id": "msg_peer", "status": status, "role": "assistant",
           "content": content})
}

/// The Responses stream's typed events, numbered in order.
fn responses_events(parts: &[&str], text: &str) -> Vec<Bytes> {
    let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": []});
    let mut events: Vec<(&str, Value)> = vec![
        (
            "response.created",
            json!({"response": response_object("in_progress", None)}),
        ),
        (
            "response.in_progress",
            json!({"response": response_object("in_progress", None)}),
        ),
        (
            "response.output_item.added",
            json!({"output_index": 0, "item": message_item("in_progress", None)}),
        ),
        (
            "response.content_part.added",
            json!({"item_id": "msg_peer", "output_index": 0, "content_index": 0,
                   "part": part("")}),
        ),
    ];
    for p in parts {
        events.push((
            "response.output_text.delta",
            json!({"item_id": "msg_peer", "output_index": 0, "content_index": 0,
                   "delta": p, "logprobs": []}),
        ));
    }
    events.extend([
        (
            "response.output_text.done",
            json!({"item_id": "msg_peer", "output_index": 0, "content_index": 0,
                   "text": text, "logprobs": []}),
        ),
        (
            "response.content_part.done",
            json!({"item_id": "msg_peer", "output_index": 0, "content_index": 0,
                   "part": part(text)}),
        ),
        (
            "response.output_item.done",
            json!({"output_index": 0, "item": message_item("completed", Some(text))}),
        ),
        (
            "response.completed",
            json!({"response": response_object("completed", Some(text))}),
        ),
    ]);
    events
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut v))| {
            v["type"] = json!(name);
            v["sequence_number"] = json!(i);
            named(name, v)
        })
        .collect()
}

/// An unnamed server-sent event (`data:` only), as Chat Completions sends.
fn data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// A named server-sent event, as Responses and Messages send.
fn named(event: &str, v: Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {v}\n\n"))
}
