//! A session in the stateless revision (2026-07-28): started by its
//! first request that carries the envelope, not by `initialize`. The
//! start asks the upstream's `server/discover` (only a version both ends
//! speak goes on), lists its tools with the same envelope, then emits
//! `agent_startup`; every later request's envelope must name the same
//! version. `server/discover` is answered from the upstream's, filtered.

use std::sync::{Arc, PoisonError};

use hookwire_client::ShutdownReason;
use serde_json::{Value, json};

use super::state::{McpSession, Started};
use crate::core::stateless::{self as sl, Envelope};
use crate::jsonrpc::{self, Id};

/// What the gate lets through.
pub(super) enum Gate {
    /// The proxy answers the request itself.
    Answer(Value),
    /// The request goes on, its envelope checked.
    Pass,
}

impl McpSession {
    /// Whether the session speaks the stateless revision and started.
    pub fn is_stateless_started(&self) -> bool {
        self.stateless.get().is_some_and(Result::is_ok)
    }

    /// Checks a stateless request's envelope, starts the session on the
    /// first one, and answers `server/discover`.
    pub(super) async fn stateless_gate(
        self: &Arc<Self>,
        id: &Id,
        method: &str,
        params: &Value,
    ) -> Gate {
        let error =
            |e: Value| Gate::Answer(json!({"jsonrpc": "2.0", "id": id.to_value(), "error": e}));
        if self.state().initialized {
            return Gate::Answer(jsonrpc::error_response(
                Some(id),
                jsonrpc::INVALID_REQUEST,
                "this session was initialized with the handshake: a stateless (2026-07-28) request is not accepted on it",
            ));
        }
        let envelope: Envelope = match sl::envelope(params) {
            Ok(e) => e,
            Err(e) => {
                self.count("request", "refused");
                return error(e);
            }
        };
        let started = self
            .stateless
            .get_or_init(|| self.start_stateless(envelope.version.clone()))
            .await;
        let started = match started {
            Ok(s) => s,
            Err(e) => return error(e.clone()),
        };
        if started.version != envelope.version {
            return error(sl::unsupported_version(
                &[started.version.as_str()],
                &Value::String(envelope.version),
            ));
        }
        if method == "server/discover" {
            self.count("request", "governed");
            return Gate::Answer(jsonrpc::result_response(id, started.discover.clone()));
        }
        Gate::Pass
    }

    /// The start: the upstream's discover, its tools, `agent_startup`.
    /// `Err` is the error object every request then gets; an upstream
    /// that does not speak `version` leaves the session unstarted, so a
    /// dual-era client can still `initialize` on it (stdio).
    async fn start_stateless(&self, version: String) -> Result<Started, Value> {
        let requested = Value::String(version.clone());
        let failed = |code: i64, m: String| json!({"code": code, "message": m});
        let answer = self
            .link
            .request("server/discover", json!({"_meta": sl::own_meta(&version)}))
            .await;
        let result = match answer {
            Ok(Ok(r)) => r,
            // A handshake-only server: the client is told what it may
            // speak instead.
            Ok(Err(_)) => return Err(sl::unsupported_version(&sl::speakable(&[]), &requested)),
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return Err(failed(f.code(), f.to_string()));
            }
        };
        let both = match sl::discovered(&result) {
            Ok(b) => b,
            Err(why) => {
                self.end(ShutdownReason::Error).await;
                return Err(failed(jsonrpc::UPSTREAM_FAILED, why));
            }
        };
        if !both.contains(&version) {
            return Err(sl::unsupported_version(&sl::speakable(&both), &requested));
        }
        let tools = match self.list_tools(Some(&version)).await {
            Ok(t) => t,
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return Err(failed(f.code(), f.to_string()));
            }
        };
        match self.hw.start(tools.iter().cloned()).await {
            Ok(e) if e.proceeds() => {
                *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
                Ok(Started {
                    discover: sl::offered_discover(&result, &both),
                    version,
                })
            }
            Ok(e) => {
                let reason = e.reason().unwrap_or("no reason given").to_owned();
                self.end(ShutdownReason::Error).await;
                Err(failed(
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup denied: {reason}"),
                ))
            }
            Err(e) => {
                self.end(ShutdownReason::Error).await;
                Err(failed(
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup failed closed: {e}"),
                ))
            }
        }
    }
}
