//! The queue of pending approvals that hosts fill and approvers drain.
//!
//! One [`ApprovalQueue`] is shared by every front end of an approval
//! service: the gRPC streams ([`super::grpc`]), the web page
//! ([`super::web`]) and any in-process approver. Hosts attach through a
//! [`HostLink`] and submit requests; approvers read
//! [`ApprovalQueue::pending`] or [`ApprovalQueue::subscribe`] to a
//! snapshot plus every change, and answer with [`ApprovalQueue::resolve`].
//!
//! The rules it keeps:
//!
//! - every approver sees every pending request, under one id the queue
//!   assigns (`q-1`, `q-2`, ...), whatever id its host chose;
//! - the first decision for a request that is pending and within its
//!   deadline wins and goes to the host; every later one is refused with a
//!   [`Refusal`], and every subscriber sees [`QueueEvent::Resolved`];
//! - a request whose deadline passes is closed as expired; the queue sends
//!   the host nothing then (the host's own deadline, which comes first,
//!   fails the request as `host_error:approval_resolver_failed`);
//! - when a [`HostLink`] is dropped (its stream ended) its pending
//!   requests are withdrawn.
//!
//! The queue never judges a decision's content: the host validates it in
//! the §9 order, so a malformed decision is forwarded as made.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use hookwire::approval::{ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamResolution};
use tokio::sync::{broadcast, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::error::{Error, Refusal};
use crate::metrics::ApprovalCounters;

pub use super::events::{CloseReason, HostDelivery, PendingApproval, QueueEvent};

/// Longest deadline the queue honours; longer ones are cut to this.
pub const MAX_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// How many closed request ids the queue remembers, to tell a late
/// approver *why* its decision was refused.
const CLOSED_MEMORY: usize = 10_000;

/// Capacity of the change feed; a subscriber further behind is told it
/// lagged and should re-read [`ApprovalQueue::pending`].
const EVENT_CAPACITY: usize = 1024;

/// A snapshot of the pending set and the feed of every later change, taken
/// atomically: no change is missed or seen twice.
#[derive(Debug)]
pub struct Subscription {
    /// Every pending request when the subscription was taken, oldest first.
    pub pending: Vec<PendingApproval>,
    /// Every change after that. On `RecvError::Lagged`, re-read
    /// [`ApprovalQueue::pending`].
    pub events: broadcast::Receiver<QueueEvent>,
}

/// The shared queue of pending approvals. Cheap to clone; clones share it.
#[derive(Debug, Clone)]
pub struct ApprovalQueue {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    events: broadcast::Sender<QueueEvent>,
    /// Set once metrics are registered ([`ApprovalQueue::register_metrics`]).
    metrics: OnceLock<ApprovalCounters>,
}

#[derive(Debug, Default)]
struct State {
    next_request: u64,
    next_host: u64,
    pending: HashMap<String, Entry>,
    hosts: HashMap<u64, HostState>,
    closed: HashMap<String, Refusal>,
    closed_order: VecDeque<String>,
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    host: u64,
    host_request_id: String,
    approval: PendingApproval,
    timer: Option<AbortHandle>,
    /// When it was queued, for the wait and age metrics.
    queued: Instant,
}

#[derive(Debug)]
struct HostState {
    name: String,
    deliver: mpsc::UnboundedSender<HostDelivery>,
    /// Host request id -> queue id, for the pending ones.
    requests: HashMap<String, String>,
}

impl Default for ApprovalQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                events,
                metrics: OnceLock::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the maps consistent (every
        // update is a single insert or remove), so poisoning is ignored.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Attaches a host. Its deliveries (resolutions, notices) arrive on the
    /// returned receiver; dropping the [`HostLink`] withdraws its pending
    /// requests.
    pub fn connect_host(
        &self,
        name: impl Into<String>,
    ) -> (HostLink, mpsc::UnboundedReceiver<HostDelivery>) {
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

    /// Counts requests and how they left the queue in `registry`, and
    /// exposes the queue's gauges (pending, oldest age, connected hosts
    /// and approvers), read at scrape time: the `hookwire_approval_*`
    /// families of docs/operating.md. Registering in a second registry
    /// shares the same counters.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.inner
            .metrics
            .get_or_init(ApprovalCounters::default)
            .register(registry);
        registry.register_collector(Box::new(QueueGauges(self.clone())));
    }

    /// Every pending request, oldest first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        sorted(&self.state())
    }

    /// One pending request.
    pub fn get(&self, id: &str) -> Option<PendingApproval> {
        self.state().pending.get(id).map(|e| e.approval.clone())
    }

    /// How many requests are pending.
    pub fn len(&self) -> usize {
        self.state().pending.len()
    }

    /// Whether no request is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pending set and every later change (see [`Subscription`]).
    pub fn subscribe(&self) -> Subscription {
        let state = self.state();
        Subscription {
            pending: sorted(&state),
            events: self.inner.events.subscribe(),
        }
    }

    /// Records that `approver` is looking at request `id`, and tells its
    /// host and the other approvers.
    pub fn seen(&self, id: &str, approver: &str) -> Result<(), Error> {
        let mut state = self.state();
        let entry = match state.pending.get_mut(id) {
            Some(e) => e,
            None => return Err(refused(&state, id)),
        };
        if entry.approval.seen_by.iter().any(|a| a == approver) {
            return Ok(());
        }
        entry.approval.seen_by.push(approver.to_owned());
        let (host, request_id) = (entry.host, entry.host_request_id.clone());
        if let Some(h) = state.hosts.get(&host) {
            let _ = h.deliver.send(HostDelivery::Seen {
                request_id,
                approver: approver.to_owned(),
            });
        }
        self.emit(QueueEvent::Seen {
            id: id.to_owned(),
            approver: approver.to_owned(),
        });
        Ok(())
    }

    /// Decides request `id`: the first decision for a pending request
    /// within its deadline goes to the host, unchanged. Later ones are
    /// refused ([`Error::Refused`]).
    pub fn resolve(
        &self,
        id: &str,
        approver: &str,
        resolution: ApprovalResolution,
    ) -> Result<(), Error> {
        let mut state = self.state();
        let Some(entry) = state.pending.get(id) else {
            return Err(refused(&state, id));
        };
        if entry.approval.deadline <= Instant::now() {
            self.close(&mut state, id, CloseReason::Expired);
            return Err(Error::Refused {
                request_id: id.to_owned(),
                refusal: Refusal::Expired,
            });
        }
        let Some(entry) = self.take(&mut state, id, Refusal::AlreadyResolved) else {
            return Err(refused(&state, id));
        };
        let outcome = resolution.outcome;
        if let Some(m) = self.inner.metrics.get() {
            let label = match outcome {
                Some(ApprovalOutcome::Approve) => "approved",
                Some(ApprovalOutcome::Reject) => "rejected",
                _ => "unresolved",
            };
            m.left(label, entry.queued.elapsed());
        }
        if let Some(h) = state.hosts.get(&entry.host) {
            let _ = h
                .deliver
                .send(HostDelivery::Resolution(Box::new(StreamResolution {
                    request_id: entry.host_request_id,
                    approver: approver.to_owned(),
                    resolution,
                })));
        }
        tracing::info!(id, approver, outcome = ?outcome, "approval resolved");
        self.emit(QueueEvent::Resolved {
            id: id.to_owned(),
            approver: approver.to_owned(),
            outcome,
        });
        Ok(())
    }

    /// Gives up on request `id`: its host fails it at once (as
    /// `host_error:approval_resolver_failed`) and approvers see it closed.
    /// For approvers that cannot decide and will not wait (a ticket system
    /// that is down, a bridge that crashed).
    pub fn fail(&self, id: &str, reason: &str) -> Result<(), Error> {
        let mut state = self.state();
        let Some(entry) = state.pending.get(id) else {
            return Err(refused(&state, id));
        };
        let (host, request_id) = (entry.host, entry.host_request_id.clone());
        if let Some(h) = state.hosts.get(&host) {
            let _ = h.deliver.send(HostDelivery::Failed {
                request_id,
                reason: reason.to_owned(),
            });
        }
        self.close(&mut state, id, CloseReason::Failed);
        Ok(())
    }

    /// Closes `id` if it is still pending and past its deadline.
    fn expire(&self, id: &str) {
        let mut state = self.state();
        if state
            .pending
            .get(id)
            .is_some_and(|e| e.approval.deadline <= Instant::now())
        {
            self.close(&mut state, id, CloseReason::Expired);
        }
    }

    /// Removes `id` undecided and tells the subscribers why.
    fn close(&self, state: &mut State, id: &str, reason: CloseReason) {
        if let Some(entry) = self.take(state, id, Refusal::from(reason)) {
            if let Some(m) = self.inner.metrics.get() {
                m.left(reason.as_str(), entry.queued.elapsed());
            }
            tracing::info!(id, reason = reason.as_str(), "approval closed");
            self.emit(QueueEvent::Closed {
                id: id.to_owned(),
                reason,
            });
        }
    }

    /// Removes a pending entry, stops its timer, unlinks it from its host
    /// and remembers how it ended.
    fn take(&self, state: &mut State, id: &str, refusal: Refusal) -> Option<Entry> {
        let mut entry = state.pending.remove(id)?;
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        if let Some(h) = state.hosts.get_mut(&entry.host) {
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

    fn emit(&self, event: QueueEvent) {
        // No subscriber is not an error.
        let _ = self.inner.events.send(event);
    }

    fn submit(
        &self,
        host: u64,
        request_id: String,
        request: ApprovalRequest,
        deadline: Duration,
    ) -> Result<String, Error> {
        let mut state = self.state();
        let Some(h) = state.hosts.get(&host) else {
            return Err(Error::Refused {
                request_id,
                refusal: Refusal::Withdrawn,
            });
        };
        if h.requests.contains_key(&request_id) {
            return Err(Error::DuplicateRequest(request_id));
        }
        let host_name = h.name.clone();
        state.next_request += 1;
        let seq = state.next_request;
        let id = format!("q-{seq}");
        let deadline = Instant::now() + deadline.min(MAX_DEADLINE);
        let approval = PendingApproval {
            id: id.clone(),
            host: host_name,
            request,
            deadline,
            seen_by: Vec::new(),
        };
        let timer = {
            let queue = Arc::downgrade(&self.inner);
            let id = id.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                if let Some(inner) = Weak::upgrade(&queue) {
                    ApprovalQueue { inner }.expire(&id);
                }
            })
            .abort_handle()
        };
        if let Some(h) = state.hosts.get_mut(&host) {
            h.requests.insert(request_id.clone(), id.clone());
        }
        state.pending.insert(
            id.clone(),
            Entry {
                seq,
                host,
                host_request_id: request_id,
                approval: approval.clone(),
                timer: Some(timer),
                queued: Instant::now(),
            },
        );
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
        Ok(id)
    }
}

fn sorted(state: &State) -> Vec<PendingApproval> {
    let mut entries: Vec<&Entry> = state.pending.values().collect();
    entries.sort_by_key(|e| e.seq);
    entries.into_iter().map(|e| e.approval.clone()).collect()
}

fn refused(state: &State, id: &str) -> Error {
    Error::Refused {
        request_id: id.to_owned(),
        refusal: state
            .closed
            .get(id)
            .copied()
            .unwrap_or(Refusal::UnknownRequest),
    }
}

/// The queue's gauges, read at scrape time.
#[derive(Debug)]
struct QueueGauges(ApprovalQueue);

impl prometheus_client::collector::Collector for QueueGauges {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::gauge::ConstGauge;
        let (pending, oldest, hosts) = {
            let state = self.0.state();
            let oldest = state.pending.values().map(|e| e.queued.elapsed()).max();
            (state.pending.len(), oldest, state.hosts.len())
        };
        let approvers = self.0.inner.events.receiver_count();
        let count = |n: usize| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
        for (name, help, gauge) in [
            (
                "hookwire_approval_pending",
                "Requests waiting for a decision",
                count(pending),
            ),
            (
                "hookwire_approval_hosts_connected",
                "Hosts with an open Resolve stream (or an in-process link)",
                count(hosts),
            ),
            (
                "hookwire_approval_approvers_connected",
                "Approvers watching the queue (Watch streams and open approval pages)",
                count(approvers),
            ),
        ] {
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        let age = ConstGauge::new(oldest.map_or(0.0, |d| d.as_secs_f64()));
        let metric = encoder.encode_descriptor(
            "hookwire_approval_oldest_pending_age_seconds",
            "How long the oldest pending request has waited (0 when none waits)",
            None,
            age.metric_type(),
        )?;
        age.encode(metric)
    }
}

/// A host attached to the queue: submits and cancels its requests under
/// ids of its own choosing. Dropping it withdraws every request it still
/// has pending (approvers see [`CloseReason::HostGone`]).
#[derive(Debug)]
pub struct HostLink {
    queue: ApprovalQueue,
    id: u64,
}

impl HostLink {
    /// Renames the host on approvers' screens (for requests submitted
    /// from now on).
    pub fn set_name(&self, name: impl Into<String>) {
        if let Some(h) = self.queue.state().hosts.get_mut(&self.id) {
            h.name = name.into();
        }
    }

    /// Queues a request for approvers. `request_id` must not be pending
    /// already on this link; `deadline` is the time the host waits (cut
    /// to [`MAX_DEADLINE`]). Returns the queue's id for it. Must be called
    /// within a tokio runtime (the deadline is a timer).
    pub fn submit(
        &self,
        request_id: impl Into<String>,
        request: ApprovalRequest,
        deadline: Duration,
    ) -> Result<String, Error> {
        self.queue
            .submit(self.id, request_id.into(), request, deadline)
    }

    /// Withdraws a request the host no longer waits for. Unknown ids are
    /// ignored (the request may just have been resolved).
    pub fn cancel(&self, request_id: &str) {
        let mut state = self.queue.state();
        let id = state
            .hosts
            .get(&self.id)
            .and_then(|h| h.requests.get(request_id))
            .cloned();
        if let Some(id) = id {
            self.queue.close(&mut state, &id, CloseReason::Cancelled);
        }
    }
}

impl Drop for HostLink {
    fn drop(&mut self) {
        let mut state = self.queue.state();
        let Some(host) = state.hosts.remove(&self.id) else {
            return;
        };
        let mut ids: Vec<String> = host.requests.into_values().collect();
        ids.sort_by_key(|id| state.pending.get(id).map(|e| e.seq));
        for id in ids {
            self.queue.close(&mut state, &id, CloseReason::HostGone);
        }
    }
}

#[cfg(test)]
mod tests {
    use hookwire::{AgentContext, InterceptionPoint, Verdict};
    use serde_json::json;

    use super::*;

    fn request(n: u64) -> ApprovalRequest {
        let ctx = AgentContext::from_json(json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "pre_tool_call",
            "timestamp": "2026-01-01T00:00:00Z",
            "sequence": n,
            "agent": {"id": "a", "framework": "hookwire"},
            "session": {"id": format!("s-{n}")},
            "tool_call": {"id": "tc", "name": "wire_transfer", "args": {"amount": n}},
        }))
        .expect("valid context");
        ApprovalRequest {
            context_identity: Some(format!("sha256:{n}")),
            interception_point: InterceptionPoint::PreToolCall,
            verdict: Verdict::escalate("big_transfer"),
            context: ctx,
        }
    }

    fn refusal(r: Result<(), Error>) -> Option<Refusal> {
        match r {
            Err(Error::Refused { refusal, .. }) => Some(refusal),
            _ => None,
        }
    }

    #[tokio::test]
    async fn first_decision_wins_and_the_host_gets_it() {
        let queue = ApprovalQueue::new();
        let mut sub = queue.subscribe();
        assert!(sub.pending.is_empty());
        let (link, mut deliveries) = queue.connect_host("host-a");
        let id = link
            .submit("r1", request(1), Duration::from_secs(60))
            .unwrap();
        let Ok(QueueEvent::Added(p)) = sub.events.recv().await else {
            panic!("expected Added");
        };
        assert_eq!((p.id.as_str(), p.host.as_str()), (id.as_str(), "host-a"));
        assert_eq!(p.tool_name(), Some("wire_transfer"));
        assert_eq!(p.target(), Some(&json!({"amount": 1})));
        queue.seen(&id, "ann").unwrap();
        queue.seen(&id, "ann").unwrap();
        assert_eq!(queue.get(&id).unwrap().seen_by, ["ann"]);
        let r = ApprovalResolution::approve(&p.request, Verdict::allow());
        queue.resolve(&id, "bob", r.clone()).unwrap();
        assert_eq!(
            refusal(queue.resolve(&id, "ann", r.clone())),
            Some(Refusal::AlreadyResolved)
        );
        assert_eq!(
            refusal(queue.resolve("q-999", "ann", r.clone())),
            Some(Refusal::UnknownRequest)
        );
        assert_eq!(
            deliveries.recv().await,
            Some(HostDelivery::Seen {
                request_id: "r1".into(),
                approver: "ann".into()
            })
        );
        assert_eq!(
            deliveries.recv().await,
            Some(HostDelivery::Resolution(Box::new(StreamResolution {
                request_id: "r1".into(),
                approver: "bob".into(),
                resolution: r
            })))
        );
        assert!(matches!(
            sub.events.recv().await,
            Ok(QueueEvent::Seen { .. })
        ));
        assert_eq!(
            sub.events.recv().await.ok(),
            Some(QueueEvent::Resolved {
                id,
                approver: "bob".into(),
                outcome: Some(ApprovalOutcome::Approve)
            })
        );
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_close_requests_and_refuse_late_decisions() {
        let queue = ApprovalQueue::new();
        let (link, _deliveries) = queue.connect_host("h");
        let id = link
            .submit("r1", request(1), Duration::from_secs(5))
            .unwrap();
        let mut sub = queue.subscribe();
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(
            sub.events.recv().await.ok(),
            Some(QueueEvent::Closed {
                id: id.clone(),
                reason: CloseReason::Expired
            })
        );
        let r = ApprovalResolution::unresolved(&request(1));
        assert_eq!(refusal(queue.resolve(&id, "a", r)), Some(Refusal::Expired));
    }

    #[tokio::test]
    async fn dropped_hosts_withdraw_their_requests_and_ids_stay_apart() {
        let queue = ApprovalQueue::new();
        let (a, _da) = queue.connect_host("a");
        let (b, _db) = queue.connect_host("b");
        let qa = a
            .submit("same", request(1), Duration::from_secs(60))
            .unwrap();
        let qb = b
            .submit("same", request(2), Duration::from_secs(60))
            .unwrap();
        assert_ne!(qa, qb);
        assert!(matches!(
            a.submit("same", request(3), Duration::from_secs(60)),
            Err(Error::DuplicateRequest(_))
        ));
        let mut sub = queue.subscribe();
        drop(a);
        assert_eq!(
            sub.events.recv().await.ok(),
            Some(QueueEvent::Closed {
                id: qa.clone(),
                reason: CloseReason::HostGone
            })
        );
        assert_eq!(queue.pending().len(), 1);
        b.cancel("same");
        assert_eq!(
            sub.events.recv().await.ok(),
            Some(QueueEvent::Closed {
                id: qb,
                reason: CloseReason::Cancelled
            })
        );
        let r = ApprovalResolution::unresolved(&request(1));
        assert_eq!(
            refusal(queue.resolve(&qa, "x", r)),
            Some(Refusal::Withdrawn)
        );
    }

    #[tokio::test]
    async fn failing_a_request_tells_its_host() {
        let queue = ApprovalQueue::new();
        let (link, mut deliveries) = queue.connect_host("h");
        let id = link
            .submit("r", request(1), Duration::from_secs(60))
            .unwrap();
        queue.fail(&id, "ticket system down").unwrap();
        assert!(matches!(
            deliveries.recv().await,
            Some(HostDelivery::Failed { request_id, .. }) if request_id == "r"
        ));
        assert!(queue.fail(&id, "again").is_err());
    }
}
