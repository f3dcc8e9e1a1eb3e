//! The HTTP downstream's shared state: the proxy (host, upstream,
//! clients), its bounded session table with the places booked by
//! sessions still starting and the idle reaper's sweep, and the answers
//! every route gives (a JSON-RPC error with an HTTP status, a JSON
//! answer, the message counter).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookwire_client::{Host, ShutdownReason};
use hookwire_edge::clients::WatchedClients;
use serde_json::Value;

use crate::config::McpConfig;
use crate::jsonrpc;
use crate::session::McpSession;
use crate::upstream::{HttpClient, UpstreamSpec};

/// The session id header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

pub(crate) struct Entry {
    pub(crate) owner: String,
    pub(crate) session: Arc<McpSession>,
    pub(crate) last: Instant,
}

/// The shared state of the HTTP downstream.
pub struct HttpProxy {
    pub(crate) host: Host,
    pub(crate) spec: UpstreamSpec,
    pub(crate) client: HttpClient,
    pub(crate) config: Arc<McpConfig>,
    pub(crate) clients: WatchedClients,
    pub(crate) table: Mutex<HashMap<String, Entry>>,
    /// Places booked by `initialize`s still starting; changed under the
    /// table's lock only, so that the bound holds across both.
    pub(crate) booked: AtomicUsize,
}

/// A place in the session table booked for a session still starting,
/// given back when dropped (the session then is in the table, or never
/// will be).
pub(crate) struct Booking<'a>(&'a AtomicUsize);

impl Drop for Booking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HttpProxy {
    /// A proxy for `spec` governed by `host`, open to `clients`.
    pub fn new(
        host: Host,
        spec: UpstreamSpec,
        config: Arc<McpConfig>,
        clients: impl Into<WatchedClients>,
    ) -> Arc<Self> {
        Arc::new(Self {
            host,
            spec,
            client: HttpClient::new(&config.upstream_tls),
            config,
            clients: clients.into(),
            table: Mutex::default(),
            booked: AtomicUsize::new(0),
        })
    }

    pub(crate) fn table(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are open.
    pub fn open_sessions(&self) -> usize {
        self.table().len()
    }

    /// Books a place for one more session, if the bound leaves one.
    pub(crate) fn book(&self) -> Option<Booking<'_>> {
        let t = self.table();
        if t.len() + self.booked.load(Ordering::Acquire) >= self.config.max_sessions {
            return None;
        }
        self.booked.fetch_add(1, Ordering::AcqRel);
        Some(Booking(&self.booked))
    }

    /// Ends every session idle past the timeout (or already ended).
    pub async fn reap_idle(&self) {
        let idle = self.config.idle_timeout;
        let gone: Vec<Arc<McpSession>> = {
            let mut t = self.table();
            let keys: Vec<String> = t
                .iter()
                .filter(|(_, e)| e.session.is_ended() || e.last.elapsed() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| t.remove(k))
                .map(|e| e.session)
                .collect()
        };
        for s in gone {
            s.end(ShutdownReason::Completed).await;
        }
    }

    /// Ends every session (the proxy is stopping).
    pub async fn shutdown_all(&self) {
        let all: Vec<Arc<McpSession>> = self.table().drain().map(|(_, e)| e.session).collect();
        for s in all {
            s.end(ShutdownReason::Cancelled).await;
        }
    }
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
