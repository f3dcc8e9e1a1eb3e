//! An OpenAI Chat Completions upstream: `POST /v1/chat/completions`
//! whole (`chat.completion`) and streamed (`chat.completion.chunk` data
//! events, then `[DONE]`), `GET /v1/models`, errors as
//! `{"error": {"message", "type", "param", "code"}}`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::serve::{Recorder, Reply, Upstream, event_stream, pieces};

/// Serves Chat Completions and the model list on `127.0.0.1:0`.
pub async fn serve(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Upstream {
    Upstream::serve(script, |r| routes().fallback(unknown).with_state(r)).await
}

/// The API's routes, for an upstream that serves more than one API.
pub fn routes() -> Router<Recorder> {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
}

/// An error body in the OpenAI shape.
pub fn error(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// The conversation the tests script: tool results are answered, the
/// "List the files" request asks for two shell commands, the rest as
/// [`super::script::answer_user`] says.
pub fn conversation(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let results: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_owned())
            .collect();
        return super::script::done(&results);
    }
    super::script::answer_user(
        last["content"].as_str().unwrap_or(""),
        ["call_1", "call_2"],
        || error("slow down", "rate_limit_error", Some("rate_limited")),
    )
}

async fn unknown(State(r): State<Recorder>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    r.record(uri.path(), &headers, Value::Null);
    let message = format!("Unknown request URL: {}.", uri.path());
    (
        StatusCode::NOT_FOUND,
        axum::Json(error(
            &message,
            "invalid_request_error",
            Some("unknown_url"),
        )),
    )
        .into_response()
}

async fn completions(State(r): State<Recorder>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(body) = super::serve::json_body(&body) else {
        r.record("/v1/chat/completions", &headers, Value::Null);
        let e = error(
            "We could not parse the JSON body of your request.",
            "invalid_request_error",
            None,
        );
        return (StatusCode::BAD_REQUEST, axum::Json(e)).into_response();
    };
    r.record("/v1/chat/completions", &headers, body.clone());
    let model = body["model"].as_str().unwrap_or("?").to_owned();
    let (content, calls) = match r.reply(&body) {
        Reply::Error(status, err) => {
            return (StatusCode::from_u16(status).unwrap(), axum::Json(err)).into_response();
        }
        Reply::Answer(text) => (Some(text), Vec::new()),
        Reply::Calls(calls) => (None, calls),
    };
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    let usage = json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10});
    if body["stream"] != json!(true) {
        let mut message = json!({"role": "assistant", "content": content});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        return axum::Json(json!({
            "id": "chatcmpl-up", "object": "chat.completion", "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }))
        .into_response();
    }
    // Streamed: the content in small pieces, each tool call's arguments in
    // two, the finish reason, then [DONE].
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1_700_000_000,
               "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(&content.unwrap_or_default(), 4) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": a}}]}),
            Value::Null,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}),
            Value::Null,
        ));
    }
    events.push(chunk(json!({}), json!(finish)));
    let mut frames: Vec<Bytes> = events
        .iter()
        .map(|e| Bytes::from(format!("data: {e}\n\n")))
        .collect();
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    event_stream(frames)
}

async fn models(State(r): State<Recorder>, headers: HeaderMap) -> Response {
    r.record("/v1/models", &headers, Value::Null);
    axum::Json(json!({"object": "list", "data": [
        {"id": "test-model", "object": "model", "created": 1, "owned_by": "test"},
        {"id": "small-model", "object": "model", "created": 1, "owned_by": "test"},
    ]}))
    .into_response()
}
