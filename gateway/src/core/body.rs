//! The bodies of a request and of the gateway's own answers: a request
//! body read up to its bound, an error in the API's shape, an upstream
//! error passed through with its content type, and an event-stream
//! response.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};

use crate::api::Api;
use crate::error::Error;

/// An upstream answer passed through as it is, with its content type.
pub(crate) fn passthrough(
    status: StatusCode,
    content_type: Option<HeaderValue>,
    body: Bytes,
) -> Response {
    let mut r = Response::builder().status(status);
    if let Some(ct) = content_type {
        r = r.header(header::CONTENT_TYPE, ct);
    }
    r.body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

/// The request body, at most `limit` bytes (a longer one is refused).
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<Bytes, Error> {
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Error::BodyTooLarge { limit }),
        Err(_) => Err(Error::BadRequest(
            "the request body could not be read".into(),
        )),
    }
}

/// A `text/event-stream` response.
pub(crate) fn event_stream(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// An error in API `A`'s own shape (server errors logged, never with a
/// payload or a key).
pub(crate) fn error_response<A: Api>(e: &Error) -> Response {
    if e.status().is_server_error() {
        tracing::warn!(api = A::NAME, error = %e, "request failed");
    }
    let (status, body) = A::error_body(e);
    (status, axum::Json(body)).into_response()
}
