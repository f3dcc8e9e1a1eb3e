//! Hosts' links to the queue: a [`HostLink`] submits and cancels its
//! host's requests, and ends either by being dropped (its host went away:
//! its requests are withdrawn, on every instance) or by being detached
//! (the service is going away: its requests wait for their host to
//! re-attach them, on a new link of any instance sharing the store).

use std::collections::HashMap;
use std::time::Duration;

use hookwire::approval::ApprovalRequest;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::state::{ApprovalQueue, HostState, refused};
use super::writes::Write;
use crate::error::{Error, Refusal};
use crate::events::{CloseReason, HostDelivery, Reattached};
use crate::store::ReattachFound;

/// A host attached to the queue: submits and cancels its requests under
/// ids of its own choosing. Dropping it withdraws every request it still
/// has pending (approvers see [`CloseReason::HostGone`]).
#[derive(Debug)]
pub struct HostLink {
    queue: ApprovalQueue,
    id: u64,
}

impl ApprovalQueue {
    /// Attaches a host. Its deliveries (resolutions, notices) arrive on the
    /// returned receiver; dropping the [`HostLink`] withdraws its pending
    /// requests. `name` identifies the host on approvers' screens and, for
    /// [`HostLink::reattach`], across links: give it the host's verified
    /// principal (or its hello) rather than its network peer.
    pub fn connect_host(
        &self,
        name: impl Into<String>,
    ) -> (HostLink, mpsc::UnboundedReceiver<HostDelivery>) {
        self.start_background();
        let (deliver, deliveries) = mpsc::unbounded_channel();
        let mut state = self.state();
        state.next_host += 1;
        let id = state.next_host;
        state.hosts.insert(
            id,
            HostState {
                name: name.into(),
                deliver,
                requests: HashMap::new(),
            },
        );
        drop(state);
        (
            HostLink {
                queue: self.clone(),
                id,
            },
            deliveries,
        )
    }
}

impl HostLink {
    /// Renames the host on approvers' screens (for requests submitted
    /// from now on) and for [`reattach`](Self::reattach).
    pub fn set_name(&self, name: impl Into<String>) {
        if let Some(h) = self.queue.state().hosts.get_mut(&self.id) {
            h.name = name.into();
        }
    }

    /// Queues a request for approvers. `request_id` must not be pending
    /// already on this link; `deadline` is the time the host waits (cut
    /// to [`MAX_DEADLINE`](super::MAX_DEADLINE)). Returns the queue's id
    /// for it. Must be called within a tokio runtime (the deadline is a
    /// timer). The store gets it at once when it answers at once, else in
    /// the background; if that fails, the host is told the request failed.
    pub fn submit(
        &self,
        request_id: impl Into<String>,
        request: ApprovalRequest,
        deadline: Duration,
    ) -> Result<String, Error> {
        self.queue.start_background();
        self.queue
            .submit(self.id, request_id.into(), request, deadline)
    }

    /// Withdraws a request the host no longer waits for. Unknown ids are
    /// ignored (the request may just have been resolved).
    pub fn cancel(&self, request_id: &str) {
        let id = {
            let mut state = self.queue.state();
            let id = state
                .hosts
                .get(&self.id)
                .and_then(|h| h.requests.get(request_id))
                .cloned();
            id.filter(|id| state.unlink(self.id, id))
        };
        if let Some(id) = id {
            self.queue.write(Write::Close {
                id,
                reason: CloseReason::Cancelled,
            });
        }
    }

    /// Ends the link *without* withdrawing its requests: for the service
    /// ending a host's stream because the instance is going away, not
    /// because the host did. Its pending requests stay pending and
    /// decidable for [`REATTACH_GRACE`](crate::REATTACH_GRACE) (or until
    /// their deadline), for the host to [re-attach](Self::reattach) on
    /// another link (of any instance, when the queue is shared).
    pub fn detach(self) {
        let away = self.unlink_all();
        if !away.is_empty() {
            // The store withdraws what is not taken back in time.
            self.queue.write(Write::Detach(away));
        }
        // Already removed from the hosts: dropping withdraws nothing.
    }

    /// Removes this link from the queue; the ids of the requests it held,
    /// oldest first.
    fn unlink_all(&self) -> Vec<String> {
        let mut state = self.queue.state();
        let Some(host) = state.hosts.remove(&self.id) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = host.requests.into_values().collect();
        ids.retain(|id| state.unlink(self.id, id));
        ids.sort_by_key(|id| state.pending.get(id).map(|e| e.seq));
        ids
    }

    /// Takes back a request this host submitted on a link that has gone
    /// away with its instance: the same host (by name, as set at connect
    /// or by [`set_name`](Self::set_name)), the same `request_id`, and the
    /// same request (its `context_identity` and point). The request keeps
    /// its queue id and original deadline; the host's new deadline is not
    /// taken. If it was decided meanwhile, the decision is delivered on
    /// this link at once. A request that is unknown, closed, past its
    /// deadline or does not match is refused ([`Refusal::UnknownRequest`]):
    /// the host then fails it; one still pending on this link is a
    /// duplicate ([`Error::DuplicateRequest`]). The request may have been
    /// submitted on any instance sharing the store; one attached to a live
    /// link (here or elsewhere) moves to this one (the host says it is here
    /// now).
    pub async fn reattach(
        &self,
        request_id: &str,
        request: &ApprovalRequest,
    ) -> Result<Reattached, Error> {
        let name = match self.queue.state().hosts.get(&self.id) {
            None => return Err(refused(request_id, Refusal::Withdrawn)),
            // Pending on this very link: nothing to take back.
            Some(h) if h.requests.contains_key(request_id) => {
                return Err(Error::DuplicateRequest(request_id.to_owned()));
            }
            Some(h) => h.name.clone(),
        };
        let found = self
            .queue
            .inner
            .store
            .reattach(
                &name,
                request_id,
                request.context_identity.as_deref(),
                request.interception_point,
            )
            .await?;
        self.adopt(request_id, found)
    }

    /// Attaches what the store found for a re-attach to this link.
    fn adopt(&self, request_id: &str, found: Option<ReattachFound>) -> Result<Reattached, Error> {
        let queue = &self.queue;
        let mut state = queue.state();
        match found {
            Some(ReattachFound::Pending(row)) => {
                queue.mirror_add(&mut state, &row);
                let Some(entry) = state.pending.get_mut(&row.id) else {
                    // Closed here meanwhile (its deadline passed): nothing
                    // to take back.
                    return Err(refused(request_id, Refusal::UnknownRequest));
                };
                entry.counted = true;
                // The deadline as this instance has known it all along.
                let deadline = entry.approval.deadline;
                let before = entry.host.replace(self.id);
                // Moved from another link of this instance.
                if let Some(old) = before.filter(|old| *old != self.id)
                    && let Some(h) = state.hosts.get_mut(&old)
                {
                    h.requests.remove(request_id);
                }
                if let Some(h) = state.hosts.get_mut(&self.id) {
                    h.requests.insert(request_id.to_owned(), row.id.clone());
                }
                tracing::info!(id = %row.id, "approval request re-attached");
                Ok(Reattached {
                    id: row.id,
                    deadline,
                    decided: false,
                })
            }
            Some(ReattachFound::Decided {
                id,
                resolution,
                remaining,
            }) => {
                if let Some(h) = state.hosts.get(&self.id) {
                    let _ = h
                        .deliver
                        .send(HostDelivery::Resolution(Box::new(resolution)));
                }
                tracing::info!(id = %id, "approval request re-attached after its decision");
                Ok(Reattached {
                    id,
                    deadline: Instant::now() + remaining,
                    decided: true,
                })
            }
            None => Err(refused(request_id, Refusal::UnknownRequest)),
        }
    }
}

impl Drop for HostLink {
    fn drop(&mut self) {
        for id in self.unlink_all() {
            self.queue.write(Write::Close {
                id,
                reason: CloseReason::HostGone,
            });
        }
    }
}
