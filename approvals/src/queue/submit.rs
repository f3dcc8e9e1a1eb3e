//! A request submitted by a host: its entry in the pending set, its write
//! to the store, and its deadline, the timer every pending entry has
//! (submitted here or read from the store), which closes the request as
//! expired here and in the store.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hookwire::approval::ApprovalRequest;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::state::{ApprovalQueue, Entry, refused};
use super::writes::Write;
use crate::error::{Error, Refusal};
use crate::events::{CloseReason, PendingApproval, QueueEvent};
use crate::store::StoredRequest;

/// Longest deadline the queue honours; longer ones are cut to this.
pub const MAX_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

impl ApprovalQueue {
    /// Queues `request` of link `host` under the host's `request_id`; see
    /// [`HostLink::submit`](super::HostLink::submit).
    pub(super) fn submit(
        &self,
        host: u64,
        request_id: String,
        request: ApprovalRequest,
        deadline: Duration,
    ) -> Result<String, Error> {
        let (id, insert) = {
            let mut state = self.state();
            let Some(h) = state.hosts.get(&host) else {
                return Err(refused(&request_id, Refusal::Withdrawn));
            };
            if h.requests.contains_key(&request_id) {
                return Err(Error::DuplicateRequest(request_id));
            }
            let host_name = h.name.clone();
            let id = self.inner.store.next_id();
            let wait = deadline.min(MAX_DEADLINE);
            let deadline = Instant::now() + wait;
            let (stored, stored_rx) = watch::channel(None);
            let row = StoredRequest {
                id: id.clone(),
                host: host_name.clone(),
                host_request_id: request_id.clone(),
                request: request.clone(),
                remaining: wait,
                seen_by: Vec::new(),
            };
            let approval = PendingApproval {
                id: id.clone(),
                host: host_name,
                request,
                deadline,
                seen_by: Vec::new(),
            };
            if let Some(h) = state.hosts.get_mut(&host) {
                h.requests.insert(request_id.clone(), id.clone());
            }
            state.next_seq += 1;
            let entry = Entry {
                seq: state.next_seq,
                host: Some(host),
                host_request_id: request_id,
                approval: approval.clone(),
                timer: Some(self.deadline_timer(&id, deadline)),
                queued: Instant::now(),
                stored: Some(stored_rx),
                counted: true,
            };
            state.pending.insert(id.clone(), entry);
            tracing::info!(
                id = %id,
                point = %approval.request.interception_point,
                session = approval.session_id(),
                "approval requested"
            );
            if let Some(m) = self.inner.metrics.get() {
                m.submitted.inc();
            }
            self.emit(QueueEvent::Added(Box::new(approval)));
            let insert = Write::Insert {
                row: Box::new(row),
                deadline,
                stored,
            };
            (id, insert)
        };
        self.write(insert);
        Ok(id)
    }

    /// A timer closing `id` as expired at `deadline`.
    pub(super) fn deadline_timer(&self, id: &str, deadline: Instant) -> AbortHandle {
        let queue = Arc::downgrade(&self.inner);
        let id = id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            if let Some(inner) = Weak::upgrade(&queue) {
                ApprovalQueue { inner }.expire(&id);
            }
        })
        .abort_handle()
    }

    /// Closes `id`, here and in the store, if it is still pending and past
    /// its deadline.
    fn expire(&self, id: &str) {
        let expired = {
            let mut state = self.state();
            let due = state
                .pending
                .get(id)
                .is_some_and(|e| e.approval.deadline <= Instant::now());
            if due {
                self.close(&mut state, id, CloseReason::Expired);
            }
            due
        };
        if expired {
            self.write(Write::Close {
                id: id.to_owned(),
                reason: CloseReason::Expired,
            });
        }
    }
}
