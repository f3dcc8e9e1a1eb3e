//! The Messages error shape, `{"type": "error", "error": {"type",
//! "message"}}`: the body and status of a whole answer's error, and the
//! `error` event of a stream that fails.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::error::Error;

/// The Anthropic error `type` for a status, as the SDKs map them to their
/// exception classes.
pub(super) fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The status and body of `error` in the Messages shape; a deny is a
/// `permission_error` whose message names the point and the reason.
pub(crate) fn error_body(error: &Error) -> (StatusCode, Value) {
    let status = error.status();
    if let Error::UpstreamRefused { body, .. } = error {
        return (status, body.clone());
    }
    let body = json!({
        "type": "error",
        "error": {"type": error_type(status), "message": error.to_string()},
    });
    (status, body)
}
