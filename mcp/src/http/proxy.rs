//! The HTTP downstream's shared state: the proxy (host, upstream,
//! clients) and its sessions in the edge's one bounded table
//! ([`Sessions`]: each session bound to the client that opened it, at
//! most `--max-sessions` places and `--max-sessions-per-client` of them
//! one client's, a place booked before the upstream starts, idle-out and
//! the reaper), and the answers every route gives (a JSON-RPC error with
//! an HTTP status, a JSON answer, the message counter).

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookwire_client::Host;
use hookwire_edge::clients::WatchedClients;
use hookwire_edge::sessions::{Bounds, Sessions, WhenFull};
use serde_json::Value;

use crate::config::McpConfig;
use crate::jsonrpc;
use crate::session::McpSession;
use crate::upstream::{HttpClient, UpstreamSpec};

/// The session id header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// The shared state of the HTTP downstream.
pub struct HttpProxy {
    pub(crate) host: Host,
    pub(crate) spec: UpstreamSpec,
    pub(crate) client: HttpClient,
    pub(crate) config: Arc<McpConfig>,
    pub(crate) clients: WatchedClients,
    /// The open sessions by id, each with the client that opened it.
    pub(crate) sessions: Arc<Sessions<McpSession, String>>,
}

impl HttpProxy {
    /// A proxy for `spec` governed by `host`, open to `clients`.
    pub fn new(
        host: Host,
        spec: UpstreamSpec,
        config: Arc<McpConfig>,
        clients: impl Into<WatchedClients>,
    ) -> Arc<Self> {
        let bounds = Bounds::new(
            config.max_sessions,
            config.max_sessions_per_client,
            WhenFull::Refuse,
        );
        Arc::new(Self {
            host,
            spec,
            client: HttpClient::new(&config.upstream_tls),
            sessions: Arc::new(Sessions::new(bounds, config.idle_timeout)),
            config,
            clients: clients.into(),
        })
    }

    /// How many places the session table holds (open sessions and those
    /// still starting).
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Books the place of session `key` for `client` before its upstream
    /// starts; when a bound is reached the idle sessions are ended first
    /// and the booking tried once more. The refusal is the answer to give.
    pub(crate) async fn book(&self, key: &str, client: &str) -> Result<(), Response> {
        let first = self.sessions.book(key, client.to_owned()).await;
        let booked = match first {
            Err(hookwire_edge::Error::SessionsFull(_) | hookwire_edge::Error::SessionQuota(_)) => {
                self.sessions.reap_idle().await;
                self.sessions.book(key, client.to_owned()).await
            }
            other => other,
        };
        booked.map_err(|e| table_refusal(&e))
    }

    /// Ends every session idle past the timeout (or ended on its own)
    /// that no request uses.
    pub async fn reap_idle(&self) {
        self.sessions.reap_idle().await;
    }

    /// Ends every session (the proxy is stopping).
    pub async fn shutdown_all(&self) {
        self.sessions.shutdown_all().await;
    }
}

/// The answer to a refusal of the session table.
pub(crate) fn table_refusal(e: &hookwire_edge::Error) -> Response {
    match e {
        hookwire_edge::Error::SessionNotOwned => forbidden_session(),
        hookwire_edge::Error::SessionQuota(n) => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            jsonrpc::OVERLOADED,
            &format!(
                "every one of the {n} sessions one client may hold is open (--max-sessions-per-client): end one first"
            ),
        ),
        e => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            jsonrpc::OVERLOADED,
            &e.to_string(),
        ),
    }
}

/// The answer to a request for another client's session.
pub(crate) fn forbidden_session() -> Response {
    refusal(
        StatusCode::FORBIDDEN,
        jsonrpc::INVALID_REQUEST,
        "forbidden: the session belongs to another client",
    )
}

/// A JSON-RPC error answer with an HTTP status.
pub(crate) fn refusal(status: StatusCode, code: i64, message: &str) -> Response {
    let body = jsonrpc::error_response(None, code, message).to_string();
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

pub(crate) fn json_response(v: &Value, session: Option<&str>) -> Response {
    let mut r = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        hookwire::json::encode(v),
    )
        .into_response();
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        r.headers_mut().insert(SESSION_HEADER, id);
    }
    r
}

pub(crate) fn count(proxy: &HttpProxy, outcome: &'static str) {
    if let Some(m) = &proxy.config.metrics {
        m.message("client", "unknown", outcome);
    }
}
