//! The queue's own memory, and the transitions every path goes through.
//!
//! [`Inner`] is what the clones of an [`ApprovalQueue`] share: the store,
//! the mirror of the pending set (what this instance shows its approvers
//! and answers for to its hosts), the host links, the ids it saw close,
//! the change feed its subscribers read, and the order of its store
//! writes. The transitions here (a request seen, decided, failed or
//! closed) change only that memory and tell the host and the subscribers;
//! the store has taken the change already. This module writes to no store
//! and starts no task: the other parts of the queue stand on it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use hookwire::approval::{ApprovalOutcome, StreamResolution};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::error::{Error, Refusal};
use crate::events::{ApproverIdentity, CloseReason, HostDelivery, PendingApproval, QueueEvent};
use crate::metrics::ApprovalCounters;
use crate::store::{ApprovalStore, StoreChange};

/// How many closed request ids the queue remembers, to tell a late
/// approver *why* its decision was refused.
const CLOSED_MEMORY: usize = 10_000;

/// The queue of pending approvals of one service instance. Cheap to
/// clone; clones share it.
#[derive(Debug, Clone)]
pub struct ApprovalQueue {
    pub(super) inner: Arc<Inner>,
}

/// What the clones of a queue share.
#[derive(Debug)]
pub(super) struct Inner {
    /// Where the requests, decisions and audit log are kept.
    pub(super) store: Arc<dyn ApprovalStore>,
    pub(super) state: Mutex<State>,
    pub(super) events: broadcast::Sender<QueueEvent>,
    /// Set once metrics are registered ([`ApprovalQueue::register_metrics`]).
    pub(super) metrics: OnceLock<ApprovalCounters>,
    pub(super) writes: Writes,
    /// Subscribers inside the service (the page's trail, the notifier),
    /// not counted as approvers.
    pub(super) internal: Arc<AtomicUsize>,
}

/// A store write its store could not finish at once, for the background
/// task to finish.
pub(super) type Background = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The order of the writes a host's link makes without waiting (see
/// `writes`).
#[derive(Debug)]
pub(super) struct Writes {
    /// The background task's inbox. Held while a write is tried at once,
    /// so that writes apply in the order they were made.
    pub(super) to_task: Mutex<mpsc::UnboundedSender<Background>>,
    /// How many writes the task has yet to finish.
    pub(super) backlog: Arc<AtomicUsize>,
    /// What the background task starts with, until it is started.
    pub(super) idle: Mutex<Option<Idle>>,
}

/// The background task's inputs before it runs.
#[derive(Debug)]
pub(super) struct Idle {
    pub(super) writes: mpsc::UnboundedReceiver<Background>,
    pub(super) changes: broadcast::Receiver<StoreChange>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    /// Arrival order of the entries.
    pub(super) next_seq: u64,
    pub(super) next_host: u64,
    pub(super) pending: HashMap<String, Entry>,
    pub(super) hosts: HashMap<u64, HostState>,
    closed: HashMap<String, Refusal>,
    closed_order: VecDeque<String>,
}

#[derive(Debug)]
pub(super) struct Entry {
    pub(super) seq: u64,
    /// The link of this instance that answers for it; `None` while its
    /// host is away, or attached to another instance.
    pub(super) host: Option<u64>,
    pub(super) host_request_id: String,
    pub(super) approval: PendingApproval,
    pub(super) timer: Option<AbortHandle>,
    /// When it was queued here, for the wait and age metrics.
    pub(super) queued: Instant,
    /// Whether the store has it yet (`None` while the write is under way),
    /// for a request submitted here; `None` for one read from the store.
    pub(super) stored: Option<watch::Receiver<Option<bool>>>,
    /// Whether this instance counts it in its metrics when it leaves: it
    /// was submitted or re-attached here and has not moved to another
    /// instance since (so that the sum over instances counts it once).
    pub(super) counted: bool,
}

#[derive(Debug)]
pub(super) struct HostState {
    pub(super) name: String,
    pub(super) deliver: mpsc::UnboundedSender<HostDelivery>,
    /// Host request id -> queue id, for the pending ones it answers for.
    pub(super) requests: HashMap<String, String>,
}

/// Takes a lock whatever a panicking holder left: every update of the
/// queue's maps is a single insert, remove or assignment, so they stay
/// consistent.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ApprovalQueue {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    pub(super) fn emit(&self, event: QueueEvent) {
        // No subscriber is not an error.
        let _ = self.inner.events.send(event);
    }

    /// Waits until a request this instance submitted is in the store (a
    /// decision on it must not race its insert). `false` if it never got
    /// there.
    pub(super) async fn stored(&self, id: &str) -> bool {
        let stored = self.state().pending.get(id).and_then(|e| e.stored.clone());
        match stored {
            None => true,
            Some(mut rx) => matches!(
                rx.wait_for(Option::is_some).await.as_deref(),
                Ok(Some(true))
            ),
        }
    }

    /// Adds `approver` to `id`'s viewers, once, telling its host (when
    /// attached here) and the subscribers.
    pub(super) fn apply_seen(&self, state: &mut State, id: &str, approver: &ApproverIdentity) {
        let Some(entry) = state.pending.get_mut(id) else {
            return;
        };
        if entry.approval.seen_by.iter().any(|a| a == approver.name()) {
            return;
        }
        entry.approval.seen_by.push(approver.name().to_owned());
        let (host, request_id) = (entry.host, entry.host_request_id.clone());
        if let Some(h) = host.and_then(|h| state.hosts.get(&h)) {
            let _ = h.deliver.send(HostDelivery::Seen {
                request_id,
                approver: approver.name().to_owned(),
            });
        }
        self.emit(QueueEvent::Seen {
            id: id.to_owned(),
            approver: approver.clone(),
        });
    }

    /// Takes a decided request out of the pending set: delivers the
    /// decision to its host when attached here (the store keeps it for a
    /// host that is away, to collect on re-attach), tells the subscribers.
    pub(super) fn apply_decided(
        &self,
        state: &mut State,
        id: &str,
        approver: &ApproverIdentity,
        decided: StreamResolution,
    ) {
        let Some(entry) = self.take(state, id, Refusal::AlreadyResolved) else {
            return;
        };
        let outcome = decided.resolution.outcome;
        self.count_left(
            &entry,
            match outcome {
                Some(ApprovalOutcome::Approve) => "approved",
                Some(ApprovalOutcome::Reject) => "rejected",
                _ => "unresolved",
            },
        );
        if let Some(h) = entry.host.and_then(|h| state.hosts.get(&h)) {
            let _ = h.deliver.send(HostDelivery::Resolution(Box::new(decided)));
        }
        tracing::info!(id, approver = approver.name(), outcome = ?outcome, "approval resolved");
        self.emit(QueueEvent::Resolved {
            id: id.to_owned(),
            approver: approver.clone(),
            outcome,
        });
    }

    /// Tells a failed request's host (when attached here) and closes it.
    pub(super) fn apply_failed(&self, state: &mut State, id: &str, reason: &str) {
        let Some(entry) = state.pending.get(id) else {
            return;
        };
        let (host, request_id) = (entry.host, entry.host_request_id.clone());
        if let Some(h) = host.and_then(|h| state.hosts.get(&h)) {
            let _ = h.deliver.send(HostDelivery::Failed {
                request_id,
                reason: reason.to_owned(),
            });
        }
        self.close(state, id, CloseReason::Failed);
    }

    /// Removes `id` undecided and tells the subscribers why.
    pub(super) fn close(&self, state: &mut State, id: &str, reason: CloseReason) {
        if let Some(entry) = self.take(state, id, Refusal::from(reason)) {
            self.count_left(&entry, reason.as_str());
            tracing::info!(id, reason = reason.as_str(), "approval closed");
            self.emit(QueueEvent::Closed {
                id: id.to_owned(),
                reason,
            });
        }
    }

    /// Counts a request that left the queue as `outcome`, if this
    /// instance counts it.
    fn count_left(&self, entry: &Entry, outcome: &'static str) {
        if let Some(m) = self.inner.metrics.get()
            && entry.counted
        {
            m.left(outcome, entry.queued.elapsed());
        }
    }

    /// Removes a pending entry, stops its timer, unlinks it from its host
    /// and remembers how it ended.
    fn take(&self, state: &mut State, id: &str, refusal: Refusal) -> Option<Entry> {
        let mut entry = state.pending.remove(id)?;
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        if let Some(h) = entry.host.and_then(|h| state.hosts.get_mut(&h)) {
            h.requests.remove(&entry.host_request_id);
        }
        state.closed.insert(id.to_owned(), refusal);
        state.closed_order.push_back(id.to_owned());
        while state.closed_order.len() > CLOSED_MEMORY {
            if let Some(old) = state.closed_order.pop_front() {
                state.closed.remove(&old);
            }
        }
        Some(entry)
    }
}

impl State {
    /// Every pending request, oldest first.
    pub(super) fn sorted(&self) -> Vec<PendingApproval> {
        let mut entries: Vec<&Entry> = self.pending.values().collect();
        entries.sort_by_key(|e| e.seq);
        entries.into_iter().map(|e| e.approval.clone()).collect()
    }

    /// Whether `id` closed here (or was decided) recently.
    pub(super) fn has_closed(&self, id: &str) -> bool {
        self.closed.contains_key(id)
    }

    /// Why a call about `id`, not pending here, is refused.
    pub(super) fn refusal_of(&self, id: &str) -> Refusal {
        self.closed
            .get(id)
            .copied()
            .unwrap_or(Refusal::UnknownRequest)
    }

    /// Stops link `link` answering for request `id` (its host went or is
    /// going away, or moved). Returns whether the link held it.
    pub(super) fn unlink(&mut self, link: u64, id: &str) -> bool {
        let Some(entry) = self.pending.get_mut(id) else {
            return false;
        };
        if entry.host != Some(link) {
            return false;
        }
        entry.host = None;
        if let Some(h) = self.hosts.get_mut(&link) {
            h.requests.remove(&entry.host_request_id);
        }
        true
    }
}

/// The refusal of a call about request `id`.
pub(super) fn refused(id: &str, refusal: Refusal) -> Error {
    Error::Refused {
        request_id: id.to_owned(),
        refusal,
    }
}
