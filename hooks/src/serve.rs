//! The daemon's HTTP side (`hookwire hooks serve`): `POST
//! /v1/hooks/{agent}` takes one hook payload of that agent and answers
//! with the agent's own output, so agents with HTTP hooks call it
//! directly and `hookwire hook` relays for the others. Callers present
//! the daemon's bearer token (compared in constant time over its
//! SHA-256); without it the answer is 401, since a local process must not
//! forge another session's events.
//!
//! A payload that cannot be read (too large, not JSON, an event hookwire
//! does not govern) is answered 200 with the agent's "stop" output and
//! the [`FAILED_CLOSED_HEADER`] naming why: an HTTP hook that got a
//! non-2xx status would let the step through, and `hookwire hook` turns
//! the header into its blocking exit status.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::agents::Agent;
use crate::error::Error;
use crate::host::HooksHost;

/// The largest hook payload accepted, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// The response header that marks an answer as failed closed (the payload
/// could not be governed), with the reason.
pub const FAILED_CLOSED_HEADER: &str = "hookwire-failed-closed";

/// What every route shares.
struct Shared {
    hooks: Arc<HooksHost>,
    token: [u8; 32],
}

/// The daemon's routes over `hooks`, open to callers presenting `token`
/// (non-empty).
pub fn router(hooks: Arc<HooksHost>, token: &str) -> Result<Router, Error> {
    if token.trim().is_empty() {
        return Err(Error::Config("the hook token is empty".into()));
    }
    let shared = Arc::new(Shared {
        hooks,
        token: Sha256::digest(token.trim().as_bytes()).into(),
    });
    Ok(Router::new()
        .route("/v1/hooks/{agent}", post(hook))
        .with_state(shared))
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(Error::Serve)
}

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let Some(presented) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let hash: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
    hash.ct_eq(&shared.token).into()
}

async fn hook(
    State(shared): State<Arc<Shared>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let agent = match Agent::from_name(&agent) {
        Ok(a) => a,
        Err(e) => return (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    if !authorized(&shared, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "hookwire hooks: a valid bearer token is required",
        )
            .into_response();
    }
    let payload = match axum::body::to_bytes(body, MAX_PAYLOAD_BYTES).await {
        Ok(b) => b,
        Err(_) => return failed_closed(agent, &Error::PayloadTooLarge(MAX_PAYLOAD_BYTES)),
    };
    let call = match agent.decode(&payload) {
        Ok(c) => c,
        Err(e) => return failed_closed(agent, &e),
    };
    let outcome = shared.hooks.handle(agent, &call).await;
    json(&agent.encode(&call.event, &outcome), None)
}

/// The agent's stop output for a payload that could not be governed.
fn failed_closed(agent: Agent, e: &Error) -> Response {
    let reason = format!("hookwire: {e}");
    tracing::warn!(agent = agent.name(), reason = %reason, "hook payload failed closed");
    json(&agent.fail_closed(&reason), Some(&reason))
}

fn json(body: &Value, failed: Option<&str>) -> Response {
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(reason) = failed {
        let printable: String = reason
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() || c == ' ' {
                    c
                } else {
                    '?'
                }
            })
            .take(512)
            .collect();
        if let Ok(v) = HeaderValue::from_str(&printable) {
            response.headers_mut().insert(FAILED_CLOSED_HEADER, v);
        }
    }
    response
}
