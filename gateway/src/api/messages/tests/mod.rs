//! Unit tests of the Messages adapter: request decoding, rewrites and
//! overrides; whole answers and their settling; stream assembly and the
//! events written back; error bodies.

mod request;
mod response;
mod stream;

use axum::http::StatusCode;
use hookwire::InterceptionPoint;
use serde_json::json;

use super::Messages;
use crate::api::model::Api;
use crate::error::Error;

#[test]
fn error_bodies_take_the_anthropic_shape_and_types() {
    let cases = [
        (
            Error::BadRequest("nope".into()),
            400,
            "invalid_request_error",
        ),
        (
            Error::CallbackRefused("forged"),
            401,
            "authentication_error",
        ),
        (Error::BodyTooLarge { limit: 10 }, 413, "request_too_large"),
        (Error::Overloaded(3), 503, "overloaded_error"),
        (Error::Upstream("reset".into()), 502, "api_error"),
        (Error::Config("x".into()), 500, "api_error"),
    ];
    for (error, status, kind) in cases {
        let (s, body) = Messages::error_body(&error);
        assert_eq!(s.as_u16(), status, "{error}");
        assert_eq!(
            body,
            json!({"type": "error", "error": {"type": kind, "message": error.to_string()}})
        );
    }
}

#[test]
fn a_deny_is_a_permission_error_naming_the_point_and_reason() {
    let error = Error::Denied {
        point: InterceptionPoint::PreModelCall,
        reason: "pii_detected".into(),
        message: None,
    };
    let (status, body) = Messages::error_body(&error);
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "permission_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("pre_model_call"), "{message}");
    assert!(message.contains("pii_detected"), "{message}");
}

#[test]
fn a_pooled_key_goes_in_x_api_key() {
    assert_eq!(Messages::pooled_credential_header(), "x-api-key");
}

#[test]
fn every_status_maps_to_its_anthropic_error_type() {
    for (status, kind) in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (503, "overloaded_error"),
        (529, "overloaded_error"),
    ] {
        let status = StatusCode::from_u16(status).unwrap();
        assert_eq!(super::error::error_type(status), kind, "{status}");
    }
}
