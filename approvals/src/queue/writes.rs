//! The store writes a host's link makes without waiting for them: a
//! request submitted, cancelled, withdrawn with its link, detached, or
//! expired. Each is applied in the order it was made: at once, in the
//! caller, when the store answers at once and nothing is queued before it
//! (a [`MemoryStore`](crate::store::memory::MemoryStore): the embedded queue is
//! synchronous); otherwise by the background task. Either way, what the
//! store did is then applied here: a request the store closed closes, one
//! it could not store fails to its host at once (fail closed).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Context, Waker};

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::state::{ApprovalQueue, Background, Inner, lock};
use crate::events::CloseReason;
use crate::store::{ApprovalStore, StoredRequest};

/// A store write a link makes without waiting.
#[derive(Debug)]
pub(super) enum Write {
    /// A new request, due at `deadline`; `stored` turns `Some(true)` once
    /// the store has it, `Some(false)` if it never will.
    Insert {
        row: Box<StoredRequest>,
        deadline: Instant,
        stored: watch::Sender<Option<bool>>,
    },
    /// Close a request (see [`ApprovalStore::close`]); closed here too
    /// once the store did.
    Close { id: String, reason: CloseReason },
    /// Leave requests for their hosts to re-attach.
    Detach(Vec<String>),
}

impl ApprovalQueue {
    /// Applies `write` after every write made before it. Never called with
    /// the state locked: applying a write locks it.
    pub(super) fn write(&self, write: Write) {
        let work = apply(
            Arc::downgrade(&self.inner),
            Arc::clone(&self.inner.store),
            write,
        );
        self.order(Box::pin(work));
    }

    /// Runs `work` at once if the store answers at once and nothing waits
    /// before it, else queues it for the background task.
    fn order(&self, mut work: Background) {
        let writes = &self.inner.writes;
        let to_task = lock(&writes.to_task);
        if writes.backlog.load(Ordering::Acquire) == 0 && self.inner.store.answers_at_once() {
            let mut cx = Context::from_waker(Waker::noop());
            if work.as_mut().poll(&mut cx).is_ready() {
                return;
            }
            // Not ready after all: the task finishes it (polling it again
            // with its own waker).
        }
        writes.backlog.fetch_add(1, Ordering::AcqRel);
        if to_task.send(work).is_err() {
            // The task ended with its runtime (the instance is gone):
            // nothing more reaches the store from here.
            writes.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Waits until every store write queued so far by hosts' links
    /// (submits, cancels, detaches, expiries) has been applied, so that a
    /// process shutting down leaves the store as its links left it. A
    /// queue whose store answers at once has nothing to wait for.
    pub async fn flush(&self) {
        let (done, applied) = oneshot::channel();
        self.order(Box::pin(async move {
            let _ = done.send(());
        }));
        let _ = applied.await;
    }
}

async fn apply(queue: Weak<Inner>, store: Arc<dyn ApprovalStore>, write: Write) {
    let here = || queue.upgrade().map(|inner| ApprovalQueue { inner });
    match write {
        Write::Insert {
            mut row,
            deadline,
            stored,
        } => {
            // Measured now, so that a write that waited does not lengthen
            // the deadline.
            row.remaining = deadline.saturating_duration_since(Instant::now());
            let id = row.id.clone();
            match store.insert(*row).await {
                Ok(()) => {
                    let _ = stored.send(Some(true));
                }
                Err(e) => {
                    tracing::warn!(%id, error = %e, "approval request not stored; failing it");
                    let _ = stored.send(Some(false));
                    if let Some(q) = here() {
                        q.apply_failed(&mut q.state(), &id, "the approval store is unavailable");
                    }
                }
            }
        }
        Write::Close { id, reason } => match store.close(&id, reason, None).await {
            Ok(true) => {
                if let Some(q) = here() {
                    q.close(&mut q.state(), &id, reason);
                }
            }
            // Not pending any more, or its host moved to another instance.
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(%id, reason = reason.as_str(), error = %e, "approval close not stored");
            }
        },
        Write::Detach(ids) => {
            if let Err(e) = store.detach(&ids).await {
                tracing::warn!(count = ids.len(), error = %e, "approval detach not stored");
            }
        }
    }
}
