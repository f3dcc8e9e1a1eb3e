//! The daemon's HTTP side (`hookwire hooks serve`): `POST
//! /v1/hooks/{agent}` takes one hook payload of that agent and answers
//! with the agent's own output, so agents with HTTP hooks call it
//! directly and `hookwire hook` relays for the others. On TCP, callers
//! present the daemon's bearer token (compared in constant time over its
//! SHA-256); without it the answer is 401, since a local process must not
//! forge another session's events. On a Unix socket (`socket`), the
//! socket's permissions and its peer check authenticate the caller, and
//! a token is optional (required when configured). A server serving
//! these routes beside its own may accept its own principals' tokens too
//! ([`router_with`]): each call is then governed as its principal's
//! ([`Owner`]), whose sessions no other principal's call touches.
//!
//! A payload that cannot be read (too large, not JSON, an event hookwire
//! does not govern) is answered 200 with the agent's "stop" output and
//! the [`FAILED_CLOSED_HEADER`] naming why: an HTTP hook that got a
//! non-2xx status would let the step through, and `hookwire hook` turns
//! the header into its blocking exit status.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hookwire_edge::token;
use serde_json::Value;

use crate::agents::Agent;
use crate::error::Error;
use crate::event::Outcome;
use crate::host::{HooksHost, Owner};
use crate::metrics::{HooksMetrics, outcome_label};
use crate::socket::UnixSocket;

/// The largest hook payload accepted, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// The response header that marks an answer as failed closed (the payload
/// could not be governed), with the reason.
pub const FAILED_CLOSED_HEADER: &str = "hookwire-failed-closed";

/// What every route shares.
struct Shared {
    hooks: Arc<HooksHost>,
    /// The token's hash, when callers must present one.
    token: Option<[u8; 32]>,
    /// The other principals' tokens accepted, when any.
    others: Option<Authenticate>,
}

/// The principal a bearer token other than the daemon's own
/// authenticates (`None`: nobody), so that a server serving the routes
/// beside its own (`hookwire gateway --clients-file`) admits its own
/// clients to them, each owning its agent sessions.
pub type Authenticate = Arc<dyn Fn(&str) -> Option<Owner> + Send + Sync>;

/// Where the daemon listens: loopback TCP, or a Unix socket.
#[derive(Debug)]
pub enum Listener {
    /// A TCP listener (a bearer token is required).
    Tcp(tokio::net::TcpListener),
    /// A Unix socket whose permissions authenticate callers.
    Unix(UnixSocket),
}

impl From<tokio::net::TcpListener> for Listener {
    fn from(l: tokio::net::TcpListener) -> Self {
        Self::Tcp(l)
    }
}

impl From<UnixSocket> for Listener {
    fn from(s: UnixSocket) -> Self {
        Self::Unix(s)
    }
}

/// The daemon's routes, with what they require of callers.
pub struct Routes {
    router: Router,
    token_required: bool,
    metrics: Option<HooksMetrics>,
}

impl Routes {
    /// The routes as a plain router, for a server that serves them beside
    /// its own on TCP (`hookwire gateway --hooks-token-file`): refused
    /// unless they require a token, as [`serve`] refuses them on TCP.
    pub fn into_router(self) -> Result<Router, Error> {
        if !self.token_required {
            return Err(Error::Config(
                "hook routes served beside another server need a bearer token".into(),
            ));
        }
        Ok(self.router)
    }
}

/// The daemon's routes over `hooks`, open to callers presenting `token`
/// (non-empty).
pub fn router(hooks: Arc<HooksHost>, token: &str) -> Result<Routes, Error> {
    routes(hooks, Some(token), None)
}

/// The daemon's routes over `hooks`, open to callers presenting `token`
/// (the [`Owner::TOKEN_HOLDER`]) or a token `others` authenticates (that
/// principal).
pub fn router_with(
    hooks: Arc<HooksHost>,
    token: &str,
    others: Authenticate,
) -> Result<Routes, Error> {
    routes(hooks, Some(token), Some(others))
}

/// The routes of a Unix socket: with `None`, any caller the socket lets
/// in (its owner) is served; with a token, it is required as on TCP.
/// [`serve`] refuses these routes without a token on a TCP listener.
pub fn socket_router(hooks: Arc<HooksHost>, token: Option<&str>) -> Result<Routes, Error> {
    routes(hooks, token, None)
}

fn routes(
    hooks: Arc<HooksHost>,
    token: Option<&str>,
    others: Option<Authenticate>,
) -> Result<Routes, Error> {
    let token = match token {
        Some(t) if t.trim().is_empty() => {
            return Err(Error::Config("the hook token is empty".into()));
        }
        Some(t) if !token::is_token68(t.trim()) || t.trim().len() > token::MAX_TOKEN_BYTES => {
            return Err(Error::Config(format!(
                "the hook token must be at most {} bytes of letters, digits, -._~+/ and trailing = (an Authorization header's token68)",
                token::MAX_TOKEN_BYTES
            )));
        }
        Some(t) => Some(token::sha256(t.trim())),
        None => None,
    };
    let metrics = hooks.metrics().cloned();
    let shared = Arc::new(Shared {
        hooks,
        token,
        others,
    });
    Ok(Routes {
        token_required: shared.token.is_some(),
        metrics,
        router: Router::new()
            .route("/v1/hooks/{agent}", post(hook))
            .with_state(shared),
    })
}

/// Serves `routes` on `listener` until `shutdown` completes; a Unix
/// socket is removed when serving ends.
pub async fn serve(
    listener: impl Into<Listener>,
    routes: Routes,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    match listener.into() {
        Listener::Tcp(listener) => {
            if !routes.token_required {
                return Err(Error::Config(
                    "a TCP listener needs a bearer token: only a Unix socket's permissions can stand in for one"
                        .into(),
                ));
            }
            axum::serve(listener, routes.router)
                .with_graceful_shutdown(shutdown)
                .await
        }
        Listener::Unix(mut socket) => {
            socket.set_metrics(routes.metrics);
            axum::serve(socket, routes.router)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
    .map_err(Error::Serve)
}

/// The principal the request authenticates as, or `None` (refused).
fn authorized(shared: &Shared, headers: &HeaderMap) -> Option<Owner> {
    let Some(expected) = &shared.token else {
        return Some(Owner::TOKEN_HOLDER);
    };
    // A missing or malformed header (RFC 6750's rules, `token::bearer`)
    // is refused like a wrong token.
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| token::bearer(v).ok())?;
    if token::constant_time_eq(&token::sha256(presented), expected) {
        return Some(Owner::TOKEN_HOLDER);
    }
    shared.others.as_ref().and_then(|others| others(presented))
}

async fn hook(
    State(shared): State<Arc<Shared>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let arrived = Instant::now();
    let agent = match Agent::from_name(&agent) {
        Ok(a) => a,
        Err(e) => return (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    let metrics = shared.hooks.metrics();
    let Some(owner) = authorized(&shared, &headers) else {
        if let Some(m) = metrics {
            m.refused(Some(agent), "token");
        }
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "hookwire hooks: a valid bearer token is required",
        )
            .into_response();
    };
    let call = match axum::body::to_bytes(body, MAX_PAYLOAD_BYTES).await {
        Ok(payload) => agent.decode(&payload),
        Err(_) => Err(Error::PayloadTooLarge(MAX_PAYLOAD_BYTES)),
    };
    let call = match call {
        Ok(c) => c,
        Err(e) => {
            let reason = format!("hookwire: {e}");
            tracing::warn!(agent = agent.name(), reason = %reason, "hook payload failed closed");
            if let Some(m) = metrics {
                m.failed_closed(agent, &e);
                let stop = Outcome::Stop {
                    reason: String::new(),
                };
                m.answered(agent, "other", &stop, arrived.elapsed());
            }
            return json(&agent.fail_closed(&reason), Some(&reason));
        }
    };
    let outcome = shared.hooks.handle_as(agent, &call, owner).await;
    let answer = json(&agent.encode(&call.event, &outcome), None);
    if let Some(m) = metrics {
        m.answered(agent, &call.event_name, &outcome, arrived.elapsed());
    }
    tracing::debug!(agent = agent.name(), event = %call.event_name, outcome = outcome_label(&outcome), "hook answered");
    answer
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
