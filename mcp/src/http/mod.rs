//! The Streamable HTTP downstream at `/mcp`: every request's `Origin`
//! validated ([`Origins`]) and authenticated by bearer token
//! ([`Clients`]), each session bound to the client that opened it, a
//! bounded table of sessions (a place booked before the upstream is
//! started, so concurrent `initialize`s cannot overrun it) with an
//! idle-out. `POST`
//! carries one message (a request's answer is JSON, or an event stream
//! of its progress then its answer when it asked for progress), `DELETE`
//! ends a session, `GET` is 405: the proxy opens no server-initiated
//! stream (docs/mcp.md says what that leaves out).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hookwire_client::ShutdownReason;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::mpsc;

mod proxy;
mod stateless;

use hookwire_edge::sessions::Found;
pub use proxy::HttpProxy;
use proxy::{SESSION_HEADER, count, forbidden_session, json_response, refusal};

use crate::error::Error;
use crate::jsonrpc::{self, Message};
use crate::session::McpSession;

/// Serves `/mcp` on `listener` until `stop`, then ends every session.
pub async fn serve_http(
    proxy: Arc<HttpProxy>,
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let router = axum::Router::new()
        .route("/mcp", post(post_mcp).delete(delete_mcp).get(get_mcp))
        .with_state(proxy.clone());
    let reaper = proxy.sessions.spawn_reaper();
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
        .map_err(Error::Serve);
    reaper.abort();
    proxy.shutdown_all().await;
    served
}

/// Refuses a request from a browser origin the proxy does not accept.
fn check_origin(proxy: &HttpProxy, headers: &HeaderMap) -> Result<(), Box<Response>> {
    // A value that is not visible ASCII is no origin the proxy accepts.
    let origin = headers
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    if proxy.config.origins.permits(origin) {
        return Ok(());
    }
    tracing::warn!(target: "hookwire_mcp::access", "mcp request refused: Origin not allowed");
    count(proxy, "refused");
    Err(Box::new(refusal(
        StatusCode::FORBIDDEN,
        jsonrpc::INVALID_REQUEST,
        "forbidden: this Origin may not use the proxy (--allow-origin)",
    )))
}

/// The client the request's bearer token names.
fn authenticate(proxy: &HttpProxy, headers: &HeaderMap) -> Result<String, Box<Response>> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        tracing::info!(target: "hookwire_mcp::access", "mcp request refused: no bearer token");
        return Err(Box::new(refusal(
            StatusCode::UNAUTHORIZED,
            jsonrpc::INVALID_REQUEST,
            "unauthorized: no bearer token",
        )));
    };
    let token = match value.to_str().map(hookwire_edge::token::bearer) {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::info!(target: "hookwire_mcp::access", "mcp request refused: {e}");
            return Err(Box::new(refusal(
                StatusCode::UNAUTHORIZED,
                jsonrpc::INVALID_REQUEST,
                &format!("unauthorized: {e}"),
            )));
        }
        Err(_) => {
            tracing::info!(target: "hookwire_mcp::access", "mcp request refused: authorization is not visible ASCII");
            return Err(Box::new(refusal(
                StatusCode::UNAUTHORIZED,
                jsonrpc::INVALID_REQUEST,
                "unauthorized: invalid authorization header: not visible ASCII",
            )));
        }
    };
    match proxy.clients.authenticate(token) {
        Ok(Some(name)) => Ok(name),
        Err(e) => {
            tracing::error!(target: "hookwire_mcp::access", "mcp request refused: {e}");
            Err(Box::new(refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                jsonrpc::OVERLOADED,
                "unavailable: the proxy's clients file cannot be read; its log says why",
            )))
        }
        Ok(None) => {
            tracing::info!(target: "hookwire_mcp::access", "mcp request refused: unknown token");
            Err(Box::new(refusal(
                StatusCode::UNAUTHORIZED,
                jsonrpc::INVALID_REQUEST,
                "unauthorized: unknown token",
            )))
        }
    }
}

/// The session the request names, if its client owns it.
fn owned_session(
    proxy: &HttpProxy,
    headers: &HeaderMap,
    client: &str,
) -> Result<(String, Arc<McpSession>), Box<Response>> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err(Box::new(refusal(
            StatusCode::BAD_REQUEST,
            jsonrpc::INVALID_REQUEST,
            "no Mcp-Session-Id: initialize first",
        )));
    };
    let gone = || {
        Box::new(refusal(
            StatusCode::NOT_FOUND,
            jsonrpc::INVALID_REQUEST,
            "unknown or ended session: initialize again",
        ))
    };
    let mut t = proxy.sessions.lock();
    match t.find(id, &client.to_owned(), Instant::now()) {
        Ok(Found::Open(session)) if session.is_ended() => {
            t.remove_if_same(id, &session);
            Err(gone())
        }
        Ok(Found::Open(session)) => Ok((id.to_owned(), session)),
        Ok(Found::Starting | Found::Absent) => Err(gone()),
        Err(_) => {
            tracing::warn!(target: "hookwire_mcp::access", client = %client, "mcp request refused: another client's session");
            Err(Box::new(forbidden_session()))
        }
    }
}

async fn post_mcp(State(proxy): State<Arc<HttpProxy>>, headers: HeaderMap, body: Body) -> Response {
    if let Err(r) = check_origin(&proxy, &headers) {
        return *r;
    }
    let client = match authenticate(&proxy, &headers) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let max = proxy.config.max_message_bytes;
    let bytes: Bytes = match http_body_util::Limited::new(body, max).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            count(&proxy, "oversized");
            let m = jsonrpc::Malformed::Oversized(max).to_string();
            return refusal(StatusCode::PAYLOAD_TOO_LARGE, jsonrpc::INVALID_REQUEST, &m);
        }
    };
    let message = match jsonrpc::decode(&bytes, max) {
        Ok(m) => m,
        Err(e) => {
            count(&proxy, "malformed");
            tracing::info!(target: "hookwire_mcp::access", client = %client, error = %e, "malformed message from the client");
            return refusal(StatusCode::BAD_REQUEST, e.code(), &e.to_string());
        }
    };
    if matches!(&message, Message::Request { method, .. } if method == "initialize") {
        return initialize(&proxy, client, message).await;
    }
    // A stateless (2026-07-28) message carries no session: its client's
    // credential (and conversation) names one.
    if headers.get(SESSION_HEADER).is_none() && stateless::is_stateless(&headers, &message) {
        return stateless::post(&proxy, client, &headers, message).await;
    }
    let (key, session) = match owned_session(&proxy, &headers, &client) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let progress = match &message {
        Message::Request { method, params, .. } => {
            method == "tools/call"
                && params
                    .get("_meta")
                    .and_then(|m| m.get("progressToken"))
                    .is_some()
        }
        _ => false,
    };
    if !matches!(message, Message::Request { .. }) {
        // A notification the mediation table refuses is not accepted:
        // 400 with the error (no id), as Streamable HTTP answers input it
        // cannot accept.
        return match session.handle(message, None).await {
            Some(refusal) => {
                let body = hookwire::json::encode(&refusal);
                (
                    StatusCode::BAD_REQUEST,
                    [(header::CONTENT_TYPE, "application/json")],
                    body,
                )
                    .into_response()
            }
            None => StatusCode::ACCEPTED.into_response(),
        };
    }
    if !progress {
        return match session.handle(message, None).await {
            Some(answer) => json_response(&answer, Some(&key)),
            // Cancelled: MCP gives it no answer.
            None => StatusCode::ACCEPTED.into_response(),
        };
    }
    // The progress notifications, then the answer, as events.
    let (tx, rx) = mpsc::channel::<Value>(64);
    let answer_tx = tx.clone();
    tokio::spawn(async move {
        if let Some(answer) = session.handle(message, Some(tx)).await {
            let _ = answer_tx.send(answer).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let v = rx.recv().await?;
        let event = format!("event: message\ndata: {}\n\n", hookwire::json::encode(&v));
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(event)), rx))
    });
    let mut r = Response::new(Body::from_stream(stream));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&key) {
        h.insert(SESSION_HEADER, v);
    }
    r
}

async fn initialize(proxy: &Arc<HttpProxy>, client: String, message: Message) -> Response {
    // A version the proxy does not mediate is answered before anything
    // starts.
    if let Message::Request { id, params, .. } = &message
        && let Err(error) = crate::core::negotiate(params)
    {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
        return json_response(&body, None);
    }
    let key = match crate::ids::random_id() {
        Ok(k) => k,
        Err(e) => {
            return refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                jsonrpc::UPSTREAM_FAILED,
                &e.to_string(),
            );
        }
    };
    // The place is booked before the upstream starts (which is slow), so
    // that concurrent initializes cannot all pass the bounds.
    if let Err(r) = proxy.book(&key, &client).await {
        return r;
    }
    let session = match McpSession::open(
        &proxy.host,
        key.clone(),
        &proxy.spec,
        &proxy.client,
        proxy.config.clone(),
        None,
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            proxy.sessions.cancel(&key);
            return refusal(
                StatusCode::BAD_GATEWAY,
                jsonrpc::UPSTREAM_FAILED,
                &e.to_string(),
            );
        }
    };
    let answer = session.handle(message, None).await.unwrap_or(Value::Null);
    if answer.get("result").is_none() || session.is_ended() {
        proxy.sessions.cancel(&key);
        session.end(ShutdownReason::Error).await;
        return json_response(&answer, None);
    }
    proxy.sessions.fill(&key, session).await;
    tracing::info!(target: "hookwire_mcp::access", client = %client, session = %key, "mcp session opened");
    json_response(&answer, Some(&key))
}

async fn delete_mcp(State(proxy): State<Arc<HttpProxy>>, headers: HeaderMap) -> Response {
    if let Err(r) = check_origin(&proxy, &headers) {
        return *r;
    }
    let client = match authenticate(&proxy, &headers) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let (key, session) = match owned_session(&proxy, &headers, &client) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    proxy.sessions.lock().remove_if_same(&key, &session);
    session.end(ShutdownReason::Completed).await;
    StatusCode::NO_CONTENT.into_response()
}

async fn get_mcp(State(proxy): State<Arc<HttpProxy>>, headers: HeaderMap) -> Response {
    if let Err(r) = check_origin(&proxy, &headers) {
        return *r;
    }
    if let Err(r) = authenticate(&proxy, &headers) {
        return *r;
    }
    let mut r = StatusCode::METHOD_NOT_ALLOWED.into_response();
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    r
}
