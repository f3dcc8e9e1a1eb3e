//! One MCP session over one hookwire [`Session`] and one upstream
//! [`Link`], whatever the downstream transport: `initialize` (the
//! upstream's, its tool list, then `agent_startup`), the relays in both
//! directions with the ids mapped, cancellations, and the end
//! (`agent_shutdown`) exactly once. `tools/call` is in `call`.
//!
//! The tool calls of an MCP session are emitted on the raw path
//! ([`Session::emit`]): the proxy sees no agent turns (no `input`, no
//! `output`), so §3.1's turn rule cannot apply; the pre/post pairs are
//! still booked, and each call's `tool_call.id` is its JSON-RPC id.

mod call;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hookwire_client::{Host, Session, ShutdownReason};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::config::McpConfig;
use crate::core::{self, MAX_TOOL_PAGES, MAX_TOOLS, ServerRequest};
use crate::jsonrpc::{self, Id, Message};
use crate::upstream::{Failure, HttpClient, Link, UpstreamSpec};

/// Where a message to the client goes: the stdio writer, or one HTTP
/// request's event stream.
pub type Notifier = mpsc::Sender<Value>;

/// A request of the client in flight.
struct InFlight {
    /// Set to cancel it.
    cancel: watch::Sender<bool>,
    /// Its id upstream, once sent.
    upstream: Option<i64>,
    /// Its progress token and where its notifications go.
    progress: Option<(Value, Notifier)>,
}

#[derive(Default)]
struct State {
    initialized: bool,
    in_flight: HashMap<Id, InFlight>,
    /// Server requests relayed to the client: the proxy's id → the
    /// upstream's.
    relayed: HashMap<i64, Id>,
}

/// One MCP session.
pub struct McpSession {
    key: String,
    hw: Session,
    link: Link,
    config: Arc<McpConfig>,
    /// The downstream's channel for messages the client did not ask for
    /// (stdio); `None` over HTTP.
    to_client: Option<Notifier>,
    state: Mutex<State>,
    tools: Mutex<BTreeSet<String>>,
    next_down: AtomicI64,
    ended: AtomicBool,
    drained: watch::Sender<usize>,
}

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
    ) -> Result<Arc<Self>, crate::Error> {
        let hw = host.session(key.clone())?;
        let (inbound_tx, inbound) = mpsc::channel(64);
        let link = Link::open(
            spec,
            client,
            inbound_tx,
            config.call_timeout,
            config.max_message_bytes,
        )
        .await
        .map_err(crate::Error::Upstream)?;
        let session = Arc::new(Self {
            key,
            hw,
            link,
            config,
            to_client,
            state: Mutex::default(),
            tools: Mutex::default(),
            next_down: AtomicI64::new(1),
            ended: AtomicBool::new(false),
            drained: watch::channel(0).0,
        });
        if let Some(m) = &session.config.metrics {
            m.sessions(1);
        }
        tokio::spawn(serve_inbound(Arc::downgrade(&session), inbound));
        tokio::spawn(watch_link(Arc::downgrade(&session)));
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
    /// (none for a cancelled one). `notify` carries the notifications
    /// that concern this message (progress).
    pub async fn handle(
        self: &Arc<Self>,
        message: Message,
        notify: Option<Notifier>,
    ) -> Option<Value> {
        match message {
            Message::Request { id, method, params } => {
                let started = std::time::Instant::now();
                let answer = self.request(id.clone(), &method, params, notify).await;
                tracing::info!(
                    target: "hookwire_mcp::access",
                    session = %self.key,
                    method = %method,
                    id = %id.as_call_id(),
                    outcome = answer.as_ref().map_or("cancelled", outcome_of),
                    ms = started.elapsed().as_millis() as u64,
                    "mcp request"
                );
                answer
            }
            Message::Notification { method, params } => {
                self.notification(&method, params).await;
                None
            }
            Message::Response { id, outcome } => {
                self.client_response(id, outcome).await;
                None
            }
        }
    }

    async fn request(
        self: &Arc<Self>,
        id: Id,
        method: &str,
        params: Value,
        notify: Option<Notifier>,
    ) -> Option<Value> {
        let refuse = |code, m: String| Some(jsonrpc::error_response(Some(&id), code, m));
        if self.is_ended() {
            let why = self
                .link_reason()
                .unwrap_or_else(|| "the session has ended".into());
            return refuse(
                jsonrpc::UPSTREAM_FAILED,
                format!("the session has ended: {why}"),
            );
        }
        let initialized = self.state().initialized;
        if method == "initialize" {
            if initialized {
                return refuse(
                    jsonrpc::INVALID_REQUEST,
                    "the session is already initialized".into(),
                );
            }
            return Some(self.initialize(&id, &params).await);
        }
        if !initialized && method != "ping" {
            self.count("request", "refused");
            return refuse(
                jsonrpc::INVALID_REQUEST,
                format!("{method} before initialize"),
            );
        }
        let progress = core::call_params(&params)
            .ok()
            .and_then(|p| p.progress_token)
            .zip(notify.clone().or_else(|| self.to_client.clone()));
        let cancel = {
            let mut st = self.state();
            if st.in_flight.contains_key(&id) {
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
            let (tx, rx) = watch::channel(false);
            st.in_flight.insert(
                id.clone(),
                InFlight {
                    cancel: tx,
                    upstream: None,
                    progress: if method == "tools/call" {
                        progress
                    } else {
                        None
                    },
                },
            );
            self.drained.send_replace(st.in_flight.len());
            rx
        };
        let answer = match method {
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
            _ => self.relay(&id, method, params, cancel).await,
        };
        let mut st = self.state();
        st.in_flight.remove(&id);
        self.drained.send_replace(st.in_flight.len());
        answer
    }

    /// `initialize`: the upstream's, its tool list, then `agent_startup`.
    async fn initialize(self: &Arc<Self>, id: &Id, params: &Value) -> Value {
        let fail = |f: &Failure| jsonrpc::error_response(Some(id), f.code(), f.to_string());
        let answer = match self
            .link
            .request("initialize", core::forwarded_initialize(params))
            .await
        {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => {
                self.end(ShutdownReason::Error).await;
                return json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
            }
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return fail(&f);
            }
        };
        let started = async {
            self.link
                .send(Message::Notification {
                    method: "notifications/initialized".into(),
                    params: Value::Null,
                })
                .await?;
            self.list_tools().await
        };
        let tools = match started.await {
            Ok(tools) => tools,
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return fail(&f);
            }
        };
        match self.hw.start(tools.iter().cloned()).await {
            Ok(e) if e.proceeds() => {
                *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
                self.state().initialized = true;
                jsonrpc::result_response(id, answer)
            }
            Ok(e) => {
                let reason = e.reason().unwrap_or("no reason given").to_owned();
                self.end(ShutdownReason::Error).await;
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup denied: {reason}"),
                )
            }
            Err(e) => {
                self.end(ShutdownReason::Error).await;
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup failed closed: {e}"),
                )
            }
        }
    }

    /// Every page of the upstream's `tools/list`, bounded.
    async fn list_tools(&self) -> Result<BTreeSet<String>, Failure> {
        let mut names = BTreeSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let result = match self.link.request("tools/list", params).await? {
                Ok(r) => r,
                Err(e) => {
                    return Err(Failure::Failed(format!(
                        "the upstream refused tools/list: {}",
                        e.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("no message")
                    )));
                }
            };
            let (page, next) = core::tool_page(&result).map_err(Failure::Failed)?;
            names.extend(page);
            if names.len() > MAX_TOOLS {
                return Err(Failure::Failed(format!(
                    "the upstream lists more than {MAX_TOOLS} tools"
                )));
            }
            match next {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(names),
            }
        }
        Err(Failure::Failed(format!(
            "the upstream's tools/list has more than {MAX_TOOL_PAGES} pages"
        )))
    }

    /// Relays a request the proxy does not govern.
    async fn relay(
        &self,
        id: &Id,
        method: &str,
        params: Value,
        mut cancel: watch::Receiver<bool>,
    ) -> Option<Value> {
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

    async fn notification(&self, method: &str, params: Value) {
        match method {
            // Sent upstream at initialize already.
            "notifications/initialized" => self.count("notification", "governed"),
            "notifications/cancelled" => {
                self.count("notification", "governed");
                let Some(id) = core::cancelled_id(&params) else {
                    return;
                };
                let upstream = {
                    let st = self.state();
                    let Some(f) = st.in_flight.get(&id) else {
                        return;
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
            _ => {
                self.count("notification", "relayed");
                let _ = self
                    .link
                    .send(Message::Notification {
                        method: method.into(),
                        params,
                    })
                    .await;
            }
        }
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
        for f in self.state().in_flight.values() {
            f.cancel.send_replace(true);
        }
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

/// Handles what the upstream sends unasked, until the session is gone.
async fn serve_inbound(session: std::sync::Weak<McpSession>, mut inbound: mpsc::Receiver<Message>) {
    while let Some(message) = inbound.recv().await {
        let Some(s) = session.upgrade() else { return };
        let count = |outcome| {
            if let Some(m) = &s.config.metrics {
                m.message("upstream", message.kind(), outcome);
            }
        };
        match &message {
            Message::Request { id, method, params } => {
                match core::server_request(method, s.to_client.is_some()) {
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
                        count("relayed");
                        let down = s.next_down.fetch_add(1, Ordering::Relaxed);
                        s.state().relayed.insert(down, id.clone());
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
async fn watch_link(session: std::sync::Weak<McpSession>) {
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
