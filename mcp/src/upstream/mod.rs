//! The real MCP server, one connection per MCP session: a child process
//! spoken to over stdio (`stdio`) or a Streamable HTTP endpoint (`http`).
//! The proxy numbers its own requests (so that its startup `tools/list`
//! and the client's requests never collide), bounds every request by the
//! call timeout and every message by the size bound, and reports what the
//! server sends unasked (its requests and notifications) to the session.
//! Once the connection breaks (the child exits, a write fails, a
//! malformed or oversized message arrives, an HTTP session is lost) every
//! pending and later request fails with the reason: nothing waits on a
//! dead server.

mod http;
mod stdio;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::jsonrpc::{Id, Message};

/// Where the upstream is.
#[derive(Debug, Clone)]
pub enum UpstreamSpec {
    /// A command spawned per session, spoken to over its stdin/stdout.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Its URL, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request (e.g. its own credentials).
        headers: Vec<(String, String)>,
    },
}

/// Why an upstream request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The connection failed or is broken.
    #[error("the upstream failed: {0}")]
    Failed(String),
    /// No answer within the call timeout.
    #[error("the upstream did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
}

impl Failure {
    /// The JSON-RPC code a client answer carries.
    pub fn code(&self) -> i64 {
        match self {
            Self::Failed(_) => crate::jsonrpc::UPSTREAM_FAILED,
            Self::Timeout(_) => crate::jsonrpc::UPSTREAM_TIMEOUT,
        }
    }
}

/// The upstream's answer: its result, or its error object.
pub type Answer = Result<Value, Value>;

type Waiter = oneshot::Sender<Result<Answer, Failure>>;

/// What both transports share: the pending requests, the id counter and
/// the broken state.
pub(crate) struct Shared {
    pending: Mutex<HashMap<i64, Waiter>>,
    next_id: AtomicI64,
    broken: watch::Sender<Option<String>>,
    /// Where the server's own requests and notifications go.
    inbound: mpsc::Sender<Message>,
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
}

impl Shared {
    fn new(inbound: mpsc::Sender<Message>, timeout: Duration, max_bytes: usize) -> Self {
        Self {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            broken: watch::channel(None).0,
            inbound,
            timeout,
            max_bytes,
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Waiter>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection broken (the first reason stays) and fails
    /// every pending request.
    pub(crate) fn break_with(&self, reason: String) {
        self.broken.send_if_modified(|b| {
            if b.is_none() {
                *b = Some(reason.clone());
                true
            } else {
                false
            }
        });
        let reason = self.broken_reason().unwrap_or(reason);
        for (_, w) in self.pending().drain() {
            let _ = w.send(Err(Failure::Failed(reason.clone())));
        }
    }

    /// Why the connection broke, once it did.
    pub(crate) fn broken_reason(&self) -> Option<String> {
        self.broken.borrow().clone()
    }

    /// Routes a message from the server: an answer to its waiter, the
    /// rest to the session.
    pub(crate) async fn route(&self, message: Message) {
        match message {
            Message::Response {
                id: Id::Num(n),
                outcome,
            } => {
                if let Some(w) = self.pending().remove(&n) {
                    let _ = w.send(Ok(outcome));
                }
                // An answer to nothing pending (late, after a timeout or
                // a cancellation) is dropped.
            }
            Message::Response { .. } => {}
            other => {
                let _ = self.inbound.send(other).await;
            }
        }
    }

    fn register(&self) -> (i64, oneshot::Receiver<Result<Answer, Failure>>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending().insert(id, tx);
        (id, rx)
    }

    /// Fails the request `id` with `failure`.
    pub(crate) fn fail(&self, id: i64, failure: Failure) {
        if let Some(w) = self.pending().remove(&id) {
            let _ = w.send(Err(failure));
        }
    }

    fn forget(&self, id: i64) {
        self.pending().remove(&id);
    }
}

enum Transport {
    Stdio(stdio::Stdio),
    Http(Box<http::Http>),
}

/// One session's connection to the upstream.
pub struct Link {
    shared: Arc<Shared>,
    transport: Transport,
}

/// A request sent upstream, awaiting its answer.
pub(crate) struct Pending {
    /// The proxy's id of it upstream (what a cancellation names).
    pub(crate) id: i64,
    rx: oneshot::Receiver<Result<Answer, Failure>>,
    shared: Arc<Shared>,
}

impl Pending {
    /// The answer, within the call timeout.
    pub(crate) async fn answer(self) -> Result<Answer, Failure> {
        let timeout = self.shared.timeout;
        match tokio::time::timeout(timeout, self.rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(Failure::Failed(
                self.shared
                    .broken_reason()
                    .unwrap_or_else(|| "the connection closed".into()),
            )),
            Err(_) => {
                self.shared.forget(self.id);
                Err(Failure::Timeout(timeout))
            }
        }
    }
}

impl Link {
    /// Connects to the upstream (spawns the command); the server's own
    /// messages go to `inbound`.
    pub async fn open(
        spec: &UpstreamSpec,
        client: &http::Client,
        inbound: mpsc::Sender<Message>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Self, Failure> {
        let shared = Arc::new(Shared::new(inbound, timeout, max_bytes));
        let transport = match spec {
            UpstreamSpec::Command { program, args } => {
                Transport::Stdio(stdio::Stdio::spawn(program, args, shared.clone())?)
            }
            UpstreamSpec::Http { url, headers } => Transport::Http(Box::new(http::Http::new(
                client.clone(),
                url.clone(),
                headers.clone(),
                shared.clone(),
            )?)),
        };
        Ok(Self { shared, transport })
    }

    /// Sends a request; its answer is awaited on the returned [`Pending`].
    pub(crate) async fn start(&self, method: &str, params: Value) -> Result<Pending, Failure> {
        if let Some(reason) = self.shared.broken_reason() {
            return Err(Failure::Failed(reason));
        }
        let (id, rx) = self.shared.register();
        let message = Message::Request {
            id: Id::Num(id),
            method: method.to_owned(),
            params,
        };
        let sent = match &self.transport {
            Transport::Stdio(s) => s.send(&message).await,
            Transport::Http(h) => {
                h.send_request(message);
                Ok(())
            }
        };
        if let Err(e) = sent {
            self.shared.forget(id);
            return Err(e);
        }
        Ok(Pending {
            id,
            rx,
            shared: self.shared.clone(),
        })
    }

    /// Sends a request and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Answer, Failure> {
        self.start(method, params).await?.answer().await
    }

    /// Sends a notification or an answer to a server request.
    pub async fn send(&self, message: Message) -> Result<(), Failure> {
        if let Some(reason) = self.shared.broken_reason() {
            return Err(Failure::Failed(reason));
        }
        match &self.transport {
            Transport::Stdio(s) => s.send(&message).await,
            Transport::Http(h) => h.send_other(message).await,
        }
    }

    /// Why the connection broke, once it did.
    pub fn broken_reason(&self) -> Option<String> {
        self.shared.broken_reason()
    }

    /// Resolves once the connection broke, with the reason.
    pub async fn broken(&self) -> String {
        let mut rx = self.shared.broken.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone().unwrap_or_default(),
            Err(_) => "the connection closed".into(),
        }
    }

    /// Ends the connection: closes the child's stdin and waits for it a
    /// bounded time before killing it, or ends the HTTP session.
    pub async fn close(&self) {
        match &self.transport {
            Transport::Stdio(s) => s.close().await,
            Transport::Http(h) => h.close().await,
        }
        self.shared.break_with("the session ended".into());
    }
}

pub use http::Client as HttpClient;
