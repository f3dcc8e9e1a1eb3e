//! What the upstream sends unasked (its requests: answered, refused or
//! relayed to the client with the proxy's own id; its notifications:
//! relayed when the mediation table calls them inert, a call's progress
//! to where that call's answer goes, the rest dropped), and the
//! end of a session whose upstream connection broke.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hookwire_client::ShutdownReason;
use tokio::sync::mpsc;

use super::state::McpSession;
use crate::core::{self, ServerRequest};
use crate::jsonrpc::{self, Id, Message};
use crate::mediation::{Class, Direction, Kind};

/// Handles what the upstream sends unasked, until the session is gone.
pub(super) async fn serve_inbound(session: Weak<McpSession>, mut inbound: mpsc::Receiver<Message>) {
    while let Some(message) = inbound.recv().await {
        let Some(s) = session.upgrade() else { return };
        let count = |outcome| {
            if let Some(m) = &s.config.metrics {
                m.message("upstream", message.kind(), outcome);
            }
        };
        match &message {
            Message::Request { id, method, params } => {
                match core::server_request(&s.config.mediation, method, s.to_client.is_some()) {
                    ServerRequest::Answer(result) => {
                        count("governed");
                        let _ = s
                            .link
                            .send(Message::Response {
                                id: id.clone(),
                                outcome: Ok(result),
                            })
                            .await;
                    }
                    ServerRequest::Refuse(why) => {
                        count("refused");
                        let error = jsonrpc::error_object(jsonrpc::METHOD_NOT_FOUND, why);
                        let _ = s
                            .link
                            .send(Message::Response {
                                id: id.clone(),
                                outcome: Err(error),
                            })
                            .await;
                    }
                    ServerRequest::Relay => {
                        let down = s.next_down.fetch_add(1, Ordering::Relaxed);
                        let room = {
                            let mut st = s.state();
                            let room = st.relayed.len() < s.config.max_in_flight;
                            if room {
                                st.relayed.insert(down, id.clone());
                            }
                            room
                        };
                        if !room {
                            // A client that does not answer cannot make the
                            // proxy remember without bound.
                            count("refused");
                            let why = format!(
                                "refused by hookwire mcp: {} requests to the client are unanswered",
                                s.config.max_in_flight
                            );
                            let error = jsonrpc::error_object(jsonrpc::OVERLOADED, why);
                            let refusal = Message::Response {
                                id: id.clone(),
                                outcome: Err(error),
                            };
                            let _ = s.link.send(refusal).await;
                            continue;
                        }
                        count("relayed");
                        if let Some(tx) = &s.to_client {
                            let relayed = Message::Request {
                                id: Id::Num(down),
                                method: method.clone(),
                                params: params.clone(),
                            };
                            let _ = tx.send(relayed.to_value()).await;
                        }
                    }
                }
            }
            Message::Notification { method, params } => {
                let class =
                    s.config
                        .mediation
                        .method(Direction::ToClient, Kind::Notification, method);
                if !matches!(class, Class::Inert(_)) {
                    count("refused");
                    tracing::info!(target: "hookwire_mcp::access", session = %s.key, method = %core::bounded_name(method), "upstream notification refused by the mediation table (not relayed)");
                    continue;
                }
                // A call's progress goes where that call's answer goes.
                let target = if method == "notifications/progress" {
                    let token = params.get("progressToken");
                    s.state().in_flight.values().find_map(|f| {
                        f.progress
                            .as_ref()
                            .filter(|(t, _)| Some(t) == token)
                            .map(|(_, n)| n.clone())
                    })
                } else {
                    None
                };
                match target.or_else(|| s.to_client.clone()) {
                    Some(tx) => {
                        count("relayed");
                        let _ = tx.send(message.to_value()).await;
                    }
                    None => count("dropped"),
                }
            }
            Message::Response { .. } => {}
        }
    }
}

/// Ends the session once its upstream connection broke and its calls in
/// flight have answered (so their `post_tool_call` comes before
/// `agent_shutdown`), within a bound.
pub(super) async fn watch_link(session: Weak<McpSession>) {
    let (reason, mut drained) = {
        let Some(s) = session.upgrade() else { return };
        let link_broken = async { s.link.broken().await };
        let reason = link_broken.await;
        (reason, s.drained.subscribe())
    };
    let _ = tokio::time::timeout(Duration::from_secs(30), drained.wait_for(|n| *n == 0)).await;
    if let Some(s) = session.upgrade() {
        if !s.is_ended() {
            tracing::warn!(session = %s.key, reason = %reason, "mcp session ends: its upstream broke");
        }
        s.end(ShutdownReason::Error).await;
    }
}
