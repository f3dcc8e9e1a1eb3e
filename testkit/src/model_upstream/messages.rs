//! An Anthropic Messages upstream: `POST /v1/messages` whole (a
//! `message` object) and streamed (named events in the documented order:
//! `message_start`, per content block `content_block_start`, its
//! `content_block_delta`s (`text_delta`, `input_json_delta`),
//! `content_block_stop`, with a `ping` after the first start, then
//! `message_delta` with the stop reason and `message_stop`). It requires
//! a key (`x-api-key`, or the bearer `Authorization` the pinned SDK sends
//! its API key as), `anthropic-version` and `max_tokens` as Anthropic
//! does; errors are `{"type": "error", "error": {"type", "message"}}` with a
//! `request-id` header.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::serve::{Recorder, Reply, Upstream, event_stream, named, pieces};

/// The route.
pub const PATH: &str = "/v1/messages";

/// Serves the Messages API on `127.0.0.1:0`; any other route answers
/// Anthropic's 404.
pub async fn serve(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Upstream {
    Upstream::serve(script, |r| routes().fallback(unknown).with_state(r)).await
}

/// The API's routes, for an upstream that serves more than one API.
pub fn routes() -> Router<Recorder> {
    Router::new().route(PATH, post(create))
}

/// An error body in the Anthropic shape.
pub fn error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The text of a message's `content`: a string, or its `text` blocks
/// joined.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// The `tool_result` blocks of a message.
pub fn tool_results(message: &Value) -> Vec<Value> {
    message["content"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter(|b| b["type"] == "tool_result")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The conversation the tests script over Messages: a user turn of tool
/// results is answered with every result so far, a user's text as
/// [`super::script::answer_user`] says.
pub fn conversation(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if !tool_results(&last).is_empty() {
        let results: Vec<String> = messages
            .iter()
            .flat_map(tool_results)
            .map(|b| text_of(&b["content"]))
            .collect();
        return super::script::done(&results);
    }
    super::script::answer_user(&text_of(&last["content"]), ["toolu_01", "toolu_02"], || {
        error(
            "rate_limit_error",
            "Number of requests has exceeded your rate limit.",
        )
    })
}

/// The key a request carries: `x-api-key`, or a bearer `Authorization`
/// (how the pinned SDK sends an API key).
pub fn credential(headers: &HeaderMap) -> Option<&str> {
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    key.or(bearer).filter(|k| !k.is_empty())
}

/// Each message gets its own id, unique in the process.
static NEXT: AtomicU64 = AtomicU64::new(1);

fn refuse(status: StatusCode, body: Value) -> Response {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (
        status,
        [("request-id", format!("req_up{n}"))],
        axum::Json(body),
    )
        .into_response()
}

async fn unknown(State(r): State<Recorder>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    r.record(uri.path(), &headers, Value::Null);
    refuse(StatusCode::NOT_FOUND, error("not_found_error", "Not Found"))
}

async fn create(State(r): State<Recorder>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed = super::serve::json_body(&body);
    r.record(PATH, &headers, parsed.clone().unwrap_or(Value::Null));
    let invalid = |message: &str| {
        refuse(
            StatusCode::BAD_REQUEST,
            error("invalid_request_error", message),
        )
    };
    if credential(&headers).is_none() {
        return refuse(
            StatusCode::UNAUTHORIZED,
            error("authentication_error", "x-api-key header is required"),
        );
    }
    if headers.get("anthropic-version").is_none() {
        return invalid("anthropic-version: header is required");
    }
    let Some(body) = parsed else {
        return invalid("The request body is not valid JSON.");
    };
    for field in ["model", "max_tokens", "messages"] {
        if body[field].is_null() {
            return invalid(&format!("{field}: Field required"));
        }
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let (text, calls) = match r.reply(&body) {
        Reply::Error(status, err) => return refuse(StatusCode::from_u16(status).unwrap(), err),
        Reply::Answer(text) => (Some(text), Vec::new()),
        Reply::Calls(calls) => (None, calls),
    };
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut blocks: Vec<Value> = text
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    blocks.extend(calls.iter().map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    ));
    let message = |content: Vec<Value>, stop: Value, output_tokens: u64| {
        json!({"id": format!("msg_up{n}"), "type": "message", "role": "assistant",
               "model": body["model"].clone(), "content": content,
               "stop_reason": stop, "stop_sequence": null,
               "usage": {"input_tokens": 7, "output_tokens": output_tokens,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
    };
    let request_id = [("request-id", format!("req_up{n}"))];
    if body["stream"] != json!(true) {
        return (request_id, axum::Json(message(blocks, json!(stop), 3))).into_response();
    }
    let mut frames = vec![named(
        "message_start",
        &json!({"type": "message_start", "message": message(Vec::new(), Value::Null, 1)}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let (start, deltas) = if block["type"] == "text" {
            let deltas = pieces(block["text"].as_str().unwrap_or(""), 4)
                .into_iter()
                .map(|t| json!({"type": "text_delta", "text": t}))
                .collect::<Vec<_>>();
            (json!({"type": "text", "text": ""}), deltas)
        } else {
            let input = block["input"].to_string();
            let (a, b) = input.split_at(input.len() / 2);
            let deltas = ["", a, b]
                .iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            let mut start = block.clone();
            start["input"] = json!({});
            (start, deltas)
        };
        frames.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            frames.push(named("ping", &json!({"type": "ping"})));
        }
        for delta in deltas {
            frames.push(named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(named(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    frames.push(named(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 3}}),
    ));
    frames.push(named("message_stop", &json!({"type": "message_stop"})));
    let mut response = event_stream(frames);
    response
        .headers_mut()
        .insert("request-id", format!("req_up{n}").parse().unwrap());
    response
}
