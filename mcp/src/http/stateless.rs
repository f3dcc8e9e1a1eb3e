//! Stateless (2026-07-28) messages over Streamable HTTP: no
//! `initialize`, no `Mcp-Session-Id`. Every POST is self-contained: its
//! routing headers must agree with its body (`-32020` otherwise), and the
//! client's credential, with the conversation its `_meta` may name
//! (`dev.hookwire/conversation`), names the one hookwire session it
//! belongs to, opened by its first request within the same bounded
//! table as handshake sessions and ended by the same idle-out. A
//! notification is acknowledged and dropped: the revision defines none
//! from the client, and nothing is relayed that no point saw.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hookwire_client::ShutdownReason;
use serde_json::{Value, json};

use hookwire_edge::sessions::Found;

use super::proxy::{HttpProxy, json_response, refusal, table_refusal};
use crate::core::stateless as sl;
use crate::jsonrpc::{self, Message};
use crate::mediation::STATELESS_VERSIONS;
use crate::session::McpSession;

/// Whether a message without a session is stateless: a request carrying
/// the envelope (or `server/discover`), or a notification sent under a
/// stateless version's header.
pub(super) fn is_stateless(headers: &HeaderMap, message: &Message) -> bool {
    match message {
        Message::Request { method, params, .. } => sl::stateless_version(method, params).is_some(),
        _ => headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| STATELESS_VERSIONS.contains(&v)),
    }
}

/// Serves one stateless message of `client`.
pub(super) async fn post(
    proxy: &Arc<HttpProxy>,
    client: String,
    headers: &HeaderMap,
    message: Message,
) -> Response {
    let Message::Request { id, method, params } = &message else {
        tracing::info!(target: "hookwire_mcp::access", client = %client, "stateless notification acknowledged, not relayed");
        return StatusCode::ACCEPTED.into_response();
    };
    let id = id.to_value();
    let with_error = |error: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
        let mut r = json_response(&body, None);
        *r.status_mut() = StatusCode::BAD_REQUEST;
        r
    };
    let envelope = match sl::envelope(params) {
        Ok(e) => e,
        Err(e) => return with_error(e),
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(why) = sl::routing_headers(header, method, params, &envelope.version) {
        return with_error(json!({"code": sl::HEADER_MISMATCH, "message": why}));
    }
    let key = session_key(&client, envelope.conversation.as_deref());
    drop(envelope);
    let session = match session_for(proxy, &client, &key).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let answer = session.handle(message, None).await;
    // A start that failed leaves nothing behind: the next request starts
    // afresh (or the client falls back to the handshake).
    if !session.is_stateless_started() {
        remove(proxy, &key, &session).await;
    }
    match answer {
        Some(a) if a.get("error").is_some() => with_error(a["error"].clone()),
        Some(a) => json_response(&a, None),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// The session a credential's conversation names: `s-` and the SHA-256
/// of both, so that neither appears in a record or a log.
fn session_key(client: &str, conversation: Option<&str>) -> String {
    let digest = hookwire_edge::token::sha256_hex(&format!(
        "{client}\0{}",
        conversation.unwrap_or_default()
    ));
    format!("s-{}", &digest[..32])
}

/// The open session `key` of `client`, or a new one in a place booked
/// for it. A request that finds the session still starting (another
/// request of the same conversation is starting it) waits for that start,
/// within the call timeout, rather than starting a second one.
async fn session_for(
    proxy: &Arc<HttpProxy>,
    client: &str,
    key: &str,
) -> Result<Arc<McpSession>, Response> {
    let deadline = Instant::now() + proxy.config.call_timeout;
    loop {
        let found = proxy
            .sessions
            .lock()
            .find(key, &client.to_owned(), Instant::now());
        match found {
            Ok(Found::Open(s)) if s.is_ended() => {
                proxy.sessions.lock().remove_if_same(key, &s);
            }
            Ok(Found::Open(s)) => return Ok(s),
            Ok(Found::Starting) if Instant::now() < deadline => {
                tokio::time::sleep(STARTING_POLL).await;
            }
            Ok(Found::Starting) => {
                return Err(refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    jsonrpc::OVERLOADED,
                    "the session is still starting: send the request again",
                ));
            }
            Ok(Found::Absent) => match proxy.sessions.book(key, client.to_owned()).await {
                Ok(()) => return start(proxy, client, key).await,
                // Booked by a request of the same conversation meanwhile.
                Err(hookwire_edge::Error::SessionNotOwned) => {}
                Err(_) => {
                    proxy.book(key, client).await?;
                    return start(proxy, client, key).await;
                }
            },
            Err(e) => return Err(table_refusal(&e)),
        }
    }
}

/// How often a request waiting for its session's start looks again.
const STARTING_POLL: Duration = Duration::from_millis(10);

/// Opens the session `key` in the place booked for it.
async fn start(
    proxy: &Arc<HttpProxy>,
    client: &str,
    key: &str,
) -> Result<Arc<McpSession>, Response> {
    let opened = McpSession::open(
        &proxy.host,
        key.to_owned(),
        &proxy.spec,
        &proxy.client,
        proxy.config.clone(),
        None,
    )
    .await;
    let session = match opened {
        Ok(s) => s,
        Err(e) => {
            proxy.sessions.cancel(key);
            return Err(refusal(
                StatusCode::BAD_GATEWAY,
                jsonrpc::UPSTREAM_FAILED,
                &e.to_string(),
            ));
        }
    };
    proxy.sessions.fill(key, session.clone()).await;
    tracing::info!(target: "hookwire_mcp::access", client = %client, session = %key, "mcp stateless session opened");
    Ok(session)
}

/// Takes out and ends `session` (its stateless start failed), unless
/// the table holds another under its key by now.
async fn remove(proxy: &HttpProxy, key: &str, session: &Arc<McpSession>) {
    let mine = proxy.sessions.lock().remove_if_same(key, session);
    if mine {
        session.end(ShutdownReason::Error).await;
    }
}
