//! The background task of a shared queue: it applies, in order, the store
//! writes that hosts' links queue without waiting (inserts, closes,
//! detaches), and keeps the instance's mirror of the pending set in step
//! with the store's change feed — requests added, seen, decided or closed
//! on any instance — delivering decisions and failures to the hosts
//! attached here.
//!
//! It holds the queue weakly and ends when the last clone of the queue is
//! dropped. A write that fails fails closed: a request the store never
//! got is failed to its host at once.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use tokio::sync::{broadcast, mpsc};

use super::{ApprovalQueue, Inner, Write};
use crate::store::{ApprovalStore, StoreChange, StoredState};

/// Starts the task.
pub(super) fn spawn(
    queue: Weak<Inner>,
    store: Arc<dyn ApprovalStore>,
    mut writes: mpsc::UnboundedReceiver<Write>,
    mut changes: broadcast::Receiver<StoreChange>,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                write = writes.recv() => {
                    let Some(write) = write else { break };
                    apply_write(&queue, &*store, write).await;
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
    });
}

async fn apply_write(queue: &Weak<Inner>, store: &dyn ApprovalStore, write: Write) {
    match write {
        Write::Insert(row, done) => {
            let id = row.id.clone();
            match store.insert(*row).await {
                Ok(()) => {
                    let _ = done.send(Some(true));
                }
                Err(e) => {
                    tracing::warn!(%id, error = %e, "approval request not stored; failing it");
                    let _ = done.send(Some(false));
                    if let Some(inner) = queue.upgrade() {
                        let q = ApprovalQueue { inner };
                        let mut state = q.state();
                        q.apply_failed(&mut state, &id, "the approval store is unavailable");
                    }
                }
            }
        }
        Write::Close(id, reason) => {
            if let Err(e) = store.close(&id, reason, None).await {
                tracing::warn!(%id, reason = reason.as_str(), error = %e, "approval close not stored");
            }
        }
        Write::Detach(ids) => {
            if let Err(e) = store.detach(&ids).await {
                tracing::warn!(count = ids.len(), error = %e, "approval detach not stored");
            }
        }
        Write::Flush(done) => {
            let _ = done.send(());
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
            // Re-attached on another instance: the old link here no longer
            // answers for it (and must not withdraw it when it drops).
            if host_instance.as_deref() != Some(queue.instance())
                && let Some(entry) = state.pending.get_mut(id)
                && let Some(link) = entry.host.take()
            {
                let host_request_id = entry.host_request_id.clone();
                if let Some(h) = state.hosts.get_mut(&link) {
                    h.requests.remove(&host_request_id);
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
                (crate::events::CloseReason::Failed, Some(note)) if attached_here => {
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
    let live: HashSet<String> = rows.iter().map(|r| r.id.clone()).collect();
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
                !live.contains(*id) && e.stored.as_ref().is_none_or(|s| s.borrow().is_some())
            })
            .map(|(id, _)| id.clone())
            .collect()
    };
    for id in gone {
        refresh(queue, store, &id).await;
    }
    tracing::debug!(pending = live.len(), "approval mirror resynchronised");
}
