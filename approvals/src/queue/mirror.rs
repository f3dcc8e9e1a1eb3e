//! The queue's background task, and the mirror it keeps: this instance's
//! copy of the store's pending set.
//!
//! The task finishes, in order, the store writes the store could not
//! answer at once (see `writes`), and follows the store's change feed:
//! requests added, seen, decided or closed by other instances or by the
//! store's own housekeeping (an abandoned request withdrawn). It brings
//! the mirror in step, delivering decisions and failures to the hosts
//! attached here. It holds the queue weakly and ends when the last clone
//! of the queue is dropped; it starts with the queue when there is a
//! runtime, else with the first host link.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::state::{ApprovalQueue, Entry, Idle, Inner, State, lock};
use crate::events::{CloseReason, QueueEvent};
use crate::store::{ApprovalStore, StoreChange, StoredRequest, StoredState};

impl ApprovalQueue {
    /// Starts the background task unless it runs already (or no runtime
    /// can run it yet).
    pub(super) fn start_background(&self) {
        let mut idle = lock(&self.inner.writes.idle);
        if idle.is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if let Some(start) = idle.take() {
            runtime.spawn(run(
                Arc::downgrade(&self.inner),
                Arc::clone(&self.inner.store),
                Arc::clone(&self.inner.writes.backlog),
                start,
            ));
        }
    }

    /// Adds a request read from the store to the mirror (unless this
    /// instance already has it, or saw it close), attached to no local
    /// link and not counted here.
    pub(super) fn mirror_add(&self, state: &mut State, row: &StoredRequest) {
        if state.pending.contains_key(&row.id) || state.has_closed(&row.id) {
            return;
        }
        state.next_seq += 1;
        let approval = row.to_pending();
        let timer = self.deadline_timer(&row.id, approval.deadline);
        state.pending.insert(
            row.id.clone(),
            Entry {
                seq: state.next_seq,
                host: None,
                host_request_id: row.host_request_id.clone(),
                approval: approval.clone(),
                timer: Some(timer),
                queued: Instant::now(),
                stored: None,
                counted: false,
            },
        );
        self.emit(QueueEvent::Added(Box::new(approval)));
    }
}

async fn run(
    queue: Weak<Inner>,
    store: Arc<dyn ApprovalStore>,
    backlog: Arc<AtomicUsize>,
    start: Idle,
) {
    let Idle {
        mut writes,
        mut changes,
    } = start;
    loop {
        tokio::select! {
            biased;
            work = writes.recv() => {
                let Some(work) = work else { break };
                work.await;
                backlog.fetch_sub(1, Ordering::AcqRel);
            }
            change = changes.recv() => {
                let change = match change {
                    Ok(c) => c,
                    Err(broadcast::error::RecvError::Lagged(_)) => StoreChange::Resync,
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let Some(inner) = queue.upgrade() else { break };
                let q = ApprovalQueue { inner };
                match change {
                    StoreChange::Request(id) => refresh(&q, &*store, &id).await,
                    StoreChange::Resync => resync(&q, &*store).await,
                }
            }
        }
    }
}

/// Brings the mirror's entry for `id` in line with the store.
async fn refresh(queue: &ApprovalQueue, store: &dyn ApprovalStore, id: &str) {
    let stored = match store.state(id).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(%id, error = %e, "approval change not read");
            return;
        }
    };
    let mut state = queue.state();
    match stored {
        None => {}
        Some(StoredState::Pending {
            request,
            host_instance,
        }) => {
            queue.mirror_add(&mut state, &request);
            for approver in &request.seen_by {
                queue.apply_seen(&mut state, id, approver);
            }
            // Re-attached on another instance: the link here no longer
            // answers for it (and must not withdraw it when it drops), and
            // the other instance counts it.
            if host_instance.as_deref() != Some(queue.inner.store.instance()) {
                let link = state.pending.get_mut(id).and_then(|entry| {
                    entry.counted = false;
                    entry.host
                });
                if let Some(link) = link {
                    state.unlink(link, id);
                }
            }
        }
        Some(StoredState::Decided {
            resolution,
            approver,
            ..
        }) => queue.apply_decided(&mut state, id, &approver, resolution),
        Some(StoredState::Closed { reason, note, .. }) => {
            let attached_here = state.pending.get(id).is_some_and(|e| e.host.is_some());
            match (reason, note) {
                (CloseReason::Failed, Some(note)) if attached_here => {
                    queue.apply_failed(&mut state, id, &note);
                }
                _ => queue.close(&mut state, id, reason),
            }
        }
    }
}

/// Reads the whole pending set again after a gap in the change feed.
async fn resync(queue: &ApprovalQueue, store: &dyn ApprovalStore) {
    let rows = match store.pending().await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "approval resync failed");
            return;
        }
    };
    let live: HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let gone: Vec<String> = {
        let mut state = queue.state();
        for row in &rows {
            queue.mirror_add(&mut state, row);
        }
        state
            .pending
            .iter()
            // Requests still being written are not in the store yet.
            .filter(|(id, e)| {
                !live.contains(id.as_str())
                    && e.stored.as_ref().is_none_or(|s| s.borrow().is_some())
            })
            .map(|(id, _)| id.clone())
            .collect()
    };
    for id in gone {
        refresh(queue, store, &id).await;
    }
    tracing::debug!(pending = live.len(), "approval mirror resynchronised");
}
