//! What the Responses upstream keeps of each stored answer, read back as
//! OpenAI serves it: `GET /v1/responses/{id}` (the `response` object, its
//! `metadata` and `output` included) and `GET
//! /v1/responses/{id}/input_items` (a cursor page of the items the answer
//! was made from, earlier turns of a continued conversation included,
//! `order`, `limit` 1-100, `after`). An unknown id is OpenAI's 404;
//! requests without a bearer key are refused as on `POST`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::chat::error;
use super::serve::Recorder;

/// Where the answer object of `id` is kept in the recorder's store.
pub fn answer_key(id: &str) -> String {
    format!("{id}#answer")
}

/// Where the input items of `id` are kept.
pub fn input_key(id: &str) -> String {
    format!("{id}#input")
}

/// Keeps answer `id`: the object returned, and the items it was made from
/// (each given an id when it has none, as the API lists them).
pub fn keep(r: &Recorder, id: &str, answer: &Value, input: &[Value]) {
    let input = input
        .iter()
        .enumerate()
        .map(|(n, item)| {
            let mut item = item.clone();
            if item.get("id").is_none_or(Value::is_null) {
                item["id"] = json!(format!("{id}_in_{n}"));
            }
            item
        })
        .collect();
    r.store(answer_key(id), vec![answer.clone()]);
    r.store(input_key(id), input);
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|k| !k.is_empty())
}

fn not_found(id: &str) -> Response {
    let message = format!("No response found with id '{id}'.");
    (
        StatusCode::NOT_FOUND,
        axum::Json(error(&message, "invalid_request_error", None)),
    )
        .into_response()
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(error(
            "You didn't provide an API key.",
            "invalid_request_error",
            None,
        )),
    )
        .into_response()
}

/// `GET /v1/responses/{id}`.
pub async fn retrieve(
    State(r): State<Recorder>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    r.record(&format!("/v1/responses/{id}"), &headers, Value::Null);
    if !authorized(&headers) {
        return unauthorized();
    }
    match r.stored(&answer_key(&id)) {
        Some(answer) => axum::Json(answer[0].clone()).into_response(),
        None => not_found(&id),
    }
}

/// The query of `input_items`.
struct Page {
    order: Option<String>,
    limit: Option<usize>,
    after: Option<String>,
}

impl Page {
    fn of(uri: &Uri) -> Self {
        let pairs: Vec<(&str, &str)> = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter_map(|p| p.split_once('='))
            .collect();
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        };
        Self {
            order: get("order"),
            limit: get("limit").and_then(|l| l.parse().ok()),
            after: get("after"),
        }
    }
}

/// `GET /v1/responses/{id}/input_items`.
pub async fn input_items(
    State(r): State<Recorder>,
    Path(id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let page = Page::of(&uri);
    r.record(
        &format!("/v1/responses/{id}/input_items"),
        &headers,
        Value::Null,
    );
    if !authorized(&headers) {
        return unauthorized();
    }
    let Some(mut items) = r.stored(&input_key(&id)) else {
        return not_found(&id);
    };
    // The API's default order is newest first.
    if page.order.as_deref() != Some("asc") {
        items.reverse();
    }
    let start = match &page.after {
        Some(after) => match items.iter().position(|i| i["id"] == json!(after)) {
            Some(p) => p + 1,
            None => items.len(),
        },
        None => 0,
    };
    let limit = page.limit.unwrap_or(20).clamp(1, 100);
    let data: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let has_more = start + data.len() < items.len();
    axum::Json(json!({
        "object": "list",
        "data": data,
        "first_id": data.first().map(|i| i["id"].clone()),
        "last_id": data.last().map(|i| i["id"].clone()),
        "has_more": has_more,
    }))
    .into_response()
}
