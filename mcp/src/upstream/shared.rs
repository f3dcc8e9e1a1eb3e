//! What both upstream transports share: the pending requests by id,
//! the id counter, the broken state, and why a request got no answer
//! ([`Failure`]). A leaf: the link and each transport hold it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::jsonrpc::{Id, Message};

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
    /// Why the connection broke, once it did (the link watches it).
    pub(super) broken: watch::Sender<Option<String>>,
    /// Where the server's own requests and notifications go.
    inbound: mpsc::Sender<Message>,
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
}

impl Shared {
    pub(super) fn new(inbound: mpsc::Sender<Message>, timeout: Duration, max_bytes: usize) -> Self {
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

    pub(super) fn register(&self) -> (i64, oneshot::Receiver<Result<Answer, Failure>>) {
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

    pub(super) fn forget(&self, id: i64) {
        self.pending().remove(&id);
    }
}
