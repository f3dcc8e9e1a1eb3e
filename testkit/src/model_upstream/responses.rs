//! An OpenAI Responses upstream: `POST /v1/responses` whole (a
//! `response` object) and streamed (typed events, each named by an
//! `event:` line and carrying its `sequence_number`, in the documented
//! order: `response.created`, `response.in_progress`, then per output
//! item `response.output_item.added`, its content part or argument
//! events, `response.output_item.done`, and `response.completed`).
//! Requests without a bearer key or a model are refused as OpenAI does;
//! errors are `{"error": {"message", "type", "param", "code"}}`. Each
//! answer is stored (unless `store: false`) so that a request may continue
//! it with `previous_response_id`: the script then sees the stored items
//! before the new ones, and, as OpenAI requires, every function call of
//! the continued answer must have its output in the new input. A stored
//! answer is read back as OpenAI serves it (`responses_stored.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::chat::error;
use super::serve::{Recorder, Reply, Upstream, event_stream, named, pieces};

/// The route.
pub const PATH: &str = "/v1/responses";

/// Serves the Responses API on `127.0.0.1:0`; any other route answers
/// OpenAI's 404.
pub async fn serve(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Upstream {
    Upstream::serve(script, |r| routes().fallback(unknown).with_state(r)).await
}

/// The API's routes, for an upstream that serves more than one API.
pub fn routes() -> Router<Recorder> {
    Router::new()
        .route(PATH, post(create))
        .route("/v1/responses/{id}", get(super::responses_stored::retrieve))
        .route(
            "/v1/responses/{id}/input_items",
            get(super::responses_stored::input_items),
        )
}

/// The text of a message's `content`: a string, or its text parts
/// (`input_text`, `output_text`) joined.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "input_text" || p["type"] == "output_text")
            .filter_map(|p| p["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// The request's input as items (a string input is one user message).
pub fn items(body: &Value) -> Vec<Value> {
    match &body["input"] {
        Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    }
}

/// The conversation the tests script over Responses input items: function
/// call outputs are answered with every output so far, a user message as
/// [`super::script::answer_user`] says.
pub fn conversation(body: &Value) -> Reply {
    let items = items(body);
    let last = items.last().cloned().unwrap_or(Value::Null);
    if last["type"] == "function_call_output" {
        let results: Vec<String> = items
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| text_of(&i["output"]))
            .collect();
        return super::script::done(&results);
    }
    super::script::answer_user(&text_of(&last["content"]), ["call_1", "call_2"], || {
        error(
            "Rate limit reached for test-model.",
            "requests",
            Some("rate_limit_exceeded"),
        )
    })
}

/// OpenAI's answer to a route it does not have.
pub async fn unknown(
    State(r): State<Recorder>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    r.record(uri.path(), &headers, Value::Null);
    let message = format!("Invalid URL ({}).", uri.path());
    (
        StatusCode::NOT_FOUND,
        axum::Json(error(&message, "invalid_request_error", None)),
    )
        .into_response()
}

fn refuse(status: StatusCode, message: &str, code: Option<&str>) -> Response {
    (
        status,
        axum::Json(error(message, "invalid_request_error", code)),
    )
        .into_response()
}

/// Each response gets its own id (`resp_N`), unique in the process.
static NEXT: AtomicU64 = AtomicU64::new(1);

async fn create(State(r): State<Recorder>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed = super::serve::json_body(&body);
    r.record(PATH, &headers, parsed.clone().unwrap_or(Value::Null));
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|k| !k.is_empty());
    if !bearer {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "You didn't provide an API key.",
            None,
        );
    }
    let Some(body) = parsed else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "We could not parse the JSON body of your request.",
            None,
        );
    };
    if !body["model"].is_string() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'model'.",
            Some("missing_required_parameter"),
        );
    }
    // A continued conversation: the stored items, then the new ones, each
    // call of the continued answer answered.
    let mut body = body;
    let mut transcript = Vec::new();
    if let Some(previous) = body["previous_response_id"].as_str() {
        let Some(stored) = r.stored(previous) else {
            let message = format!("Previous response with id '{previous}' not found.");
            let mut e = error(
                &message,
                "invalid_request_error",
                Some("previous_response_not_found"),
            );
            e["error"]["param"] = json!("previous_response_id");
            return (StatusCode::NOT_FOUND, axum::Json(e)).into_response();
        };
        let new = items(&body);
        let answered = |id: &Value| {
            new.iter()
                .any(|i| i["type"] == "function_call_output" && &i["call_id"] == id)
        };
        let open = stored
            .iter()
            .rev()
            // The continued answer's output: what follows its input.
            .take_while(|i| i["role"] != "user" && i["type"] != "function_call_output")
            .find(|i| i["type"] == "function_call" && !answered(&i["call_id"]));
        if let Some(call) = open {
            let message = format!(
                "No tool output found for function call {}.",
                call["call_id"].as_str().unwrap_or("")
            );
            let mut e = error(&message, "invalid_request_error", None);
            e["error"]["param"] = json!("input");
            return (StatusCode::BAD_REQUEST, axum::Json(e)).into_response();
        }
        transcript = stored;
    }
    transcript.extend(items(&body));
    body["input"] = Value::Array(transcript.clone());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let output = match r.reply(&body) {
        Reply::Error(status, err) => {
            return (StatusCode::from_u16(status).unwrap(), axum::Json(err)).into_response();
        }
        Reply::Answer(text) => vec![Out::Text(format!("msg_{n}"), text)],
        Reply::Calls(calls) => calls
            .into_iter()
            .enumerate()
            .map(|(i, (id, name, args))| Out::Call {
                item: format!("fc_{n}_{i}"),
                call_id: id.into(),
                name: name.into(),
                arguments: args.to_string(),
            })
            .collect(),
    };
    let id = format!("resp_{n}");
    if body["store"] != json!(false) {
        let answer = response(
            &id,
            &body,
            "completed",
            output.iter().map(Out::done).collect(),
            usage(),
        );
        super::responses_stored::keep(&r, &id, &answer, &transcript);
        transcript.extend(output.iter().map(Out::done));
        r.store(id.clone(), transcript);
    }
    if body["stream"] != json!(true) {
        let items = output.iter().map(Out::done).collect();
        return axum::Json(response(&id, &body, "completed", items, usage())).into_response();
    }
    event_stream(stream(&id, &body, &output))
}

/// One output item of an answer.
enum Out {
    /// A message with one `output_text` part: item id, text.
    Text(String, String),
    /// A function call.
    Call {
        item: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

impl Out {
    fn id(&self) -> &str {
        match self {
            Out::Text(id, _) => id,
            Out::Call { item, .. } => item,
        }
    }

    /// The item as `response.output_item.added` carries it.
    fn added(&self) -> Value {
        match self {
            Out::Text(id, _) => json!({"id": id, "type": "message", "status": "in_progress",
                                       "role": "assistant", "content": []}),
            Out::Call {
                item,
                call_id,
                name,
                ..
            } => json!({"id": item, "type": "function_call", "status": "in_progress",
                        "call_id": call_id, "name": name, "arguments": ""}),
        }
    }

    /// The finished item, as `response.output_item.done` and the whole
    /// response carry it.
    fn done(&self) -> Value {
        match self {
            Out::Text(id, text) => json!({"id": id, "type": "message", "status": "completed",
                                          "role": "assistant", "content": [part(text)]}),
            Out::Call {
                item,
                call_id,
                name,
                arguments,
            } => json!({"id": item, "type": "function_call", "status": "completed",
                        "call_id": call_id, "name": name, "arguments": arguments}),
        }
    }
}

fn part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn usage() -> Value {
    json!({"input_tokens": 7, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": 10})
}

/// The `response` object: the request's settings echoed, the output, the
/// status.
fn response(id: &str, req: &Value, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let or = |key: &str, default: Value| {
        let v = &req[key];
        if v.is_null() { default } else { v.clone() }
    };
    json!({
        "id": id, "object": "response", "created_at": 1_700_000_000, "status": status,
        "background": false, "error": null, "incomplete_details": null,
        "instructions": req["instructions"].clone(),
        "max_output_tokens": req["max_output_tokens"].clone(),
        "model": req["model"].clone(), "output": output,
        "parallel_tool_calls": or("parallel_tool_calls", json!(true)),
        "previous_response_id": req["previous_response_id"].clone(),
        "reasoning": {"effort": null, "summary": null},
        "store": or("store", json!(true)),
        "temperature": or("temperature", json!(1.0)),
        "text": {"format": {"type": "text"}},
        "tool_choice": or("tool_choice", json!("auto")),
        "tools": or("tools", json!([])),
        "top_p": or("top_p", json!(1.0)),
        "truncation": "disabled", "usage": usage, "user": null,
        "metadata": or("metadata", json!({})),
    })
}

/// The events of a streamed answer, numbered from 0.
fn stream(id: &str, req: &Value, output: &[Out]) -> Vec<Bytes> {
    let mut seq = 0u64;
    let mut frames = Vec::new();
    let mut emit = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        frames.push(named(kind, &data));
    };
    let open = response(id, req, "in_progress", Vec::new(), Value::Null);
    emit("response.created", json!({"response": open}));
    emit("response.in_progress", json!({"response": open}));
    for (index, out) in output.iter().enumerate() {
        let item_id = out.id();
        emit(
            "response.output_item.added",
            json!({"output_index": index, "item": out.added()}),
        );
        match out {
            Out::Text(_, text) => {
                let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
                let with = |extra: Value| {
                    let mut v = at.clone();
                    v.as_object_mut()
                        .unwrap()
                        .extend(extra.as_object().unwrap().clone());
                    v
                };
                emit(
                    "response.content_part.added",
                    with(json!({"part": part("")})),
                );
                for piece in pieces(text, 4) {
                    emit(
                        "response.output_text.delta",
                        with(json!({"delta": piece, "logprobs": []})),
                    );
                }
                emit(
                    "response.output_text.done",
                    with(json!({"text": text, "logprobs": []})),
                );
                emit(
                    "response.content_part.done",
                    with(json!({"part": part(text)})),
                );
            }
            Out::Call {
                name, arguments, ..
            } => {
                let (a, b) = arguments.split_at(arguments.len() / 2);
                for delta in [a, b] {
                    emit(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": index, "delta": delta}),
                    );
                }
                emit(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index,
                           "name": name, "arguments": arguments}),
                );
            }
        }
        emit(
            "response.output_item.done",
            json!({"output_index": index, "item": out.done()}),
        );
    }
    let items = output.iter().map(Out::done).collect();
    emit(
        "response.completed",
        json!({"response": response(id, req, "completed", items, usage())}),
    );
    frames
}
