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
mod shared;
mod stdio;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{Id, Message};
use shared::Shared;
pub use shared::{Answer, Failure};

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
