//! One MCP session over one hookwire [`Session`] and one upstream
//! [`Link`], whatever the downstream transport: `initialize` (the
//! upstream's, its tool list, then `agent_startup`), the relays in both
//! directions with the ids mapped, cancellations, and the end
//! (`agent_shutdown`) exactly once. `tools/call` is in `call`.
//!
//! The proxy sees no agent turns (no `input`, no `output`), so §3.1's
//! turn rule cannot apply: its hookwire session is opened
//! [`tool_calls_only`](hookwire_client::SessionBuilder::tool_calls_only),
//! and the tool calls go through the typed, checked
//! `pre_tool_call`/`post_tool_call`: a post needs its own permitted pre,
//! and each call's `tool_call.id` is its JSON-RPC id.

mod call;
mod inbound;
mod park;
mod start;
mod state;
mod stateless;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookwire_client::{Host, ShutdownReason};
use hookwire_edge::sessions::{EdgeSession, Ending, InUse};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::config::McpConfig;
use crate::core;
use crate::jsonrpc::{self, Id, Message};
use crate::mediation::{Class, Direction, Kind};
use crate::upstream::{HttpClient, Link, UpstreamSpec};

use state::{InFlight, State};
pub use state::{McpSession, Notifier};

impl McpSession {
    /// Opens a session `key`: connects to the upstream; nothing is
    /// emitted until `initialize`.
    pub async fn open(
        host: &Host,
        key: String,
        spec: &UpstreamSpec,
        client: &HttpClient,
        config: Arc<McpConfig>,
        to_client: Option<Notifier>,
    ) -> Result<Arc<Self>, crate::error::Error> {
        let hw = host.session_builder(key.clone()).tool_calls_only().open()?;
        let (inbound_tx, inbound) = mpsc::channel(64);
        let link = Link::open(
            spec,
            client,
            inbound_tx,
            config.call_timeout,
            config.max_message_bytes,
        )
        .await
        .map_err(crate::error::Error::Upstream)?;
        let session = Arc::new(Self {
            key,
            hw,
            link,
            config,
            to_client,
            state: Mutex::default(),
            stateless: tokio::sync::OnceCell::new(),
            tools: Mutex::default(),
            next_down: AtomicI64::new(1),
            ended: AtomicBool::new(false),
            drained: watch::channel(0).0,
        });
        if let Some(m) = &session.config.metrics {
            m.sessions(1);
        }
        tokio::spawn(inbound::serve_inbound(Arc::downgrade(&session), inbound));
        tokio::spawn(inbound::watch_link(Arc::downgrade(&session)));
        Ok(session)
    }

    /// The hookwire `session.id`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, kind: &'static str, outcome: &'static str) {
        if let Some(m) = &self.config.metrics {
            m.message("client", kind, outcome);
        }
    }

    /// Handles one message of the client; `Some` answer for a request
    /// (none for a cancelled one), or the refusal of a notification (an
    /// error without id, for a transport that can carry it). `notify` carries the notifications
    /// that concern this message (progress).
    pub async fn handle(
        self: &Arc<Self>,
        message: Message,
        notify: Option<Notifier>,
    ) -> Option<Value> {
        self.begin(message, notify).await
    }

    /// Admits one message of the client at once (a request is in flight,
    /// and can be cancelled, from this call on) and returns the future
    /// answering it, for the caller to run concurrently.
    pub fn begin(
        self: &Arc<Self>,
        message: Message,
        notify: Option<Notifier>,
    ) -> impl Future<Output = Option<Value>> + Send + 'static {
        let s = self.clone();
        let admitted = match &message {
            Message::Request { id, method, params } => {
                Some(s.admit(id, method, params, notify.clone()))
            }
            _ => None,
        };
        async move {
            match (message, admitted) {
                (Message::Request { id, method, params }, Some(admitted)) => {
                    let started = std::time::Instant::now();
                    let answer = match admitted {
                        Err(refusal) => Some(refusal),
                        Ok(cancel) => {
                            let a = s.request(id.clone(), &method, params, cancel).await;
                            let mut st = s.state();
                            st.in_flight.remove(&id);
                            s.drained.send_replace(st.in_flight.len());
                            a
                        }
                    };
                    tracing::info!(
                        target: "hookwire_mcp::access",
                        session = %s.key,
                        method = %method,
                        id = %id.as_call_id(),
                        outcome = answer.as_ref().map_or("cancelled", outcome_of),
                        ms = started.elapsed().as_millis() as u64,
                        "mcp request"
                    );
                    answer
                }
                // A refused notification is answered with an error
                // without id, which only Streamable HTTP carries (its
                // 400); over stdio a notification gets no answer.
                (Message::Notification { method, params }, _) => {
                    s.notification(&method, params).await.err()
                }
                (Message::Response { id, outcome }, _) => {
                    s.client_response(id, outcome).await;
                    None
                }
                (Message::Request { .. }, None) => None,
            }
        }
    }

    /// Puts a request in flight, or refuses it (the answer).
    fn admit(
        &self,
        id: &Id,
        method: &str,
        params: &Value,
        notify: Option<Notifier>,
    ) -> Result<Option<watch::Receiver<bool>>, Value> {
        let refuse = |code, m: String| Err(jsonrpc::error_response(Some(id), code, m));
        // A broken upstream ends the session: nothing more is admitted,
        // even before the end is through.
        if let Some(why) = self.link_reason() {
            return refuse(
                jsonrpc::UPSTREAM_FAILED,
                format!("the session has ended: {why}"),
            );
        }
        if self.is_ended() {
            return refuse(jsonrpc::UPSTREAM_FAILED, "the session has ended".into());
        }
        let mut st = self.state();
        let stateless = core::stateless::stateless_version(method, params).is_some();
        if method == "initialize" {
            if st.initialized || self.is_stateless_started() {
                return refuse(
                    jsonrpc::INVALID_REQUEST,
                    "the session is already initialized".into(),
                );
            }
            return Ok(None);
        }
        // A stateless (2026-07-28) request starts the session itself.
        if !st.initialized && !stateless && method != "ping" {
            drop(st);
            self.count("request", "refused");
            if self.is_stateless_started() {
                return refuse(
                    jsonrpc::INVALID_REQUEST,
                    "this session speaks 2026-07-28: every request carries io.modelcontextprotocol/protocolVersion in its _meta".into(),
                );
            }
            return refuse(
                jsonrpc::INVALID_REQUEST,
                format!("{method} before initialize"),
            );
        }
        if st.in_flight.contains_key(id) {
            drop(st);
            self.count("request", "refused");
            return refuse(
                jsonrpc::INVALID_REQUEST,
                "a request with this id is already in flight".into(),
            );
        }
        if st.in_flight.len() >= self.config.max_in_flight {
            drop(st);
            self.count("request", "refused");
            return refuse(
                jsonrpc::OVERLOADED,
                format!(
                    "{} requests are in flight in this session",
                    self.config.max_in_flight
                ),
            );
        }
        let progress = if method == "tools/call" {
            core::call_params(params)
                .ok()
                .and_then(|p| p.progress_token)
                .zip(notify.or_else(|| self.to_client.clone()))
        } else {
            None
        };
        let (tx, rx) = watch::channel(false);
        st.in_flight.insert(
            id.clone(),
            InFlight {
                cancel: tx,
                upstream: None,
                progress,
            },
        );
        self.drained.send_replace(st.in_flight.len());
        Ok(Some(rx))
    }

    async fn request(
        self: &Arc<Self>,
        id: Id,
        method: &str,
        params: Value,
        cancel: Option<watch::Receiver<bool>>,
    ) -> Option<Value> {
        let Some(cancel) = cancel else {
            // `initialize`, admitted without an in-flight entry.
            return Some(self.initialize(&id, &params).await);
        };
        if core::stateless::stateless_version(method, &params).is_some() {
            if let stateless::Gate::Answer(a) = self.stateless_gate(&id, method, &params).await {
                return Some(a);
            }
            if method == "tools/call" {
                return self.parked_call(&id, params).await;
            }
        }
        match method {
            "tools/call" => self.tools_call(&id, params, cancel).await,
            "tools/list" => self.relay(&id, method, params, cancel).await.map(|a| {
                let hidden = &self.config.hidden;
                match a.get("result") {
                    Some(r) if !hidden.is_empty() => {
                        jsonrpc::result_response(&id, core::filtered_tools(r, hidden))
                    }
                    _ => a,
                }
            }),
            _ => match self
                .config
                .mediation
                .method(Direction::ToServer, Kind::Request, method)
            {
                Class::Refused(why) => {
                    self.count("request", "refused");
                    tracing::info!(target: "hookwire_mcp::access", session = %self.key, method = %core::bounded_name(method), "mcp request refused by the mediation table");
                    Some(jsonrpc::error_response(
                        Some(&id),
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "refused by hookwire mcp: {}: {why}",
                            core::bounded_name(method)
                        ),
                    ))
                }
                Class::Inert(_) | Class::Governed(_) => {
                    self.relay(&id, method, params, cancel).await
                }
            },
        }
    }

    /// Relays a request the proxy does not govern.
    async fn relay(
        &self,
        id: &Id,
        method: &str,
        params: Value,
        mut cancel: watch::Receiver<bool>,
    ) -> Option<Value> {
        let params = core::stateless::forwarded_meta(params);
        let pending = match self.link.start(method, params).await {
            Ok(p) => p,
            Err(f) => return Some(jsonrpc::error_response(Some(id), f.code(), f.to_string())),
        };
        let upstream_id = pending.id;
        if let Some(f) = self.state().in_flight.get_mut(id) {
            f.upstream = Some(upstream_id);
        }
        self.count("request", "relayed");
        tokio::select! {
            answer = pending.answer() => Some(match answer {
                Ok(outcome) => Message::Response { id: id.clone(), outcome }.to_value(),
                Err(f) => jsonrpc::error_response(Some(id), f.code(), f.to_string()),
            }),
            _ = cancel.wait_for(|c| *c) => None,
        }
    }

    /// Handles a notification of the client; `Err` is the refusal of one
    /// the mediation table does not relay.
    async fn notification(&self, method: &str, params: Value) -> Result<(), Value> {
        match method {
            // Sent upstream at initialize already.
            "notifications/initialized" => self.count("notification", "governed"),
            "notifications/cancelled" => {
                self.count("notification", "governed");
                let Some(id) = core::cancelled_id(&params) else {
                    return Ok(());
                };
                let upstream = {
                    let st = self.state();
                    let Some(f) = st.in_flight.get(&id) else {
                        return Ok(());
                    };
                    f.cancel.send_replace(true);
                    f.upstream
                };
                if let Some(up) = upstream {
                    let mut p = params.as_object().cloned().unwrap_or_default();
                    p.insert("requestId".into(), up.into());
                    let _ = self
                        .link
                        .send(Message::Notification {
                            method: method.into(),
                            params: Value::Object(p),
                        })
                        .await;
                }
            }
            _ => match self
                .config
                .mediation
                .method(Direction::ToServer, Kind::Notification, method)
            {
                Class::Inert(_) => {
                    self.count("notification", "relayed");
                    let _ = self
                        .link
                        .send(Message::Notification {
                            method: method.into(),
                            params,
                        })
                        .await;
                }
                // A notification gets no answer (JSON-RPC), so the refusal
                // is only counted and logged: above all a `tools/call`
                // without an id, which would act at the server with no
                // pre_tool_call and no answer to carry a verdict.
                Class::Refused(why) | Class::Governed(why) => {
                    self.count("notification", "refused");
                    tracing::warn!(target: "hookwire_mcp::access", session = %self.key, method = %core::bounded_name(method), "mcp notification refused by the mediation table (not relayed)");
                    return Err(jsonrpc::error_response(
                        None,
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "refused by hookwire mcp: {} as a notification: {why}",
                            core::bounded_name(method)
                        ),
                    ));
                }
            },
        }
        Ok(())
    }

    /// The client's answer to a server request the proxy relayed.
    async fn client_response(&self, id: Id, outcome: Result<Value, Value>) {
        let upstream = match id {
            Id::Num(n) => self.state().relayed.remove(&n),
            Id::Str(_) => None,
        };
        let Some(up) = upstream else {
            self.count("response", "refused");
            return;
        };
        self.count("response", "relayed");
        let _ = self.link.send(Message::Response { id: up, outcome }).await;
    }

    fn link_reason(&self) -> Option<String> {
        self.link.broken_reason()
    }

    /// Ends the session once: `agent_shutdown` with `reason` (when it
    /// started), then the upstream connection.
    pub async fn end(&self, reason: ShutdownReason) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(m) = &self.config.metrics {
            m.sessions(-1);
        }
        for p in self.state().parked.values() {
            p.cancel();
        }
        // Requests in flight are not cancelled: their emissions finish
        // (the shutdown waits for them) and their upstream calls fail as
        // the connection closes, so each still gets its answer.
        if self.hw.is_started()
            && !self.hw.is_closed()
            && let Err(e) = self.hw.shutdown(reason).await
        {
            tracing::warn!(session = %self.key, error = %e, "agent_shutdown failed");
        }
        self.link.close().await;
        tracing::info!(target: "hookwire_mcp::access", session = %self.key, reason = reason.as_str(), "mcp session ended");
    }
}

/// A session is in use while a request of its client is in flight or a
/// parked call runs on: the table neither idles it out nor lets it go.
impl InUse for McpSession {
    fn in_use(&self) -> bool {
        let st = self.state();
        !st.in_flight.is_empty() || !st.parked.is_empty()
    }

    fn ended(&self) -> bool {
        self.is_ended()
    }
}

/// The HTTP downstream's table ends a session it takes out: idle
/// (`completed`), or at the proxy's stop (`cancelled`).
impl EdgeSession for McpSession {
    async fn end(self: Arc<Self>, why: Ending) {
        let reason = match why {
            Ending::Idle | Ending::Displaced => ShutdownReason::Completed,
            Ending::Shutdown => ShutdownReason::Cancelled,
        };
        McpSession::end(&self, reason).await;
    }
}

/// The access log's outcome of an answer.
fn outcome_of(answer: &Value) -> &'static str {
    if answer.get("error").is_some() {
        "error"
    } else if answer["result"]["isError"] == true {
        "tool_error"
    } else {
        "ok"
    }
}
