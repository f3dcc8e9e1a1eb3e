//! The queue of pending approvals that hosts fill and approvers drain.
//!
//! One [`ApprovalQueue`] is shared by every front end of an approval
//! service instance: the gRPC streams ([`super::grpc`]), the web page
//! ([`super::web`]) and any in-process approver. Hosts attach through a
//! [`HostLink`] and submit requests; approvers read
//! [`ApprovalQueue::pending`] or [`ApprovalQueue::subscribe`] to a
//! snapshot plus every change, and answer with [`ApprovalQueue::resolve`].
//!
//! A queue is either embedded ([`ApprovalQueue::new`]: its memory is the
//! store, one process) or shared ([`ApprovalQueue::shared`]: an
//! [`ApprovalStore`] such as PostgreSQL holds the requests, decisions and
//! audit log, and several instances on one store behave as one service;
//! see [`super::store`]). The rules are the same:
//!
//! - every approver sees every pending request, under one id the queue
//!   assigns (`q-1`, `q-2`, ... when embedded), whatever id its host chose;
//! - the first decision for a request that is pending and within its
//!   deadline wins and goes to the host; every later one is refused with a
//!   [`Refusal`], and every subscriber sees [`QueueEvent::Resolved`];
//! - a request whose deadline passes is closed as expired; the queue sends
//!   the host nothing then (the host's own deadline, which comes first,
//!   fails the request as `host_error:approval_resolver_failed`);
//! - when a [`HostLink`] is dropped (its host's stream ended) its pending
//!   requests are withdrawn, on every instance;
//! - when the link is [detached](HostLink::detach) instead (the service,
//!   not the host, ended the stream: the instance is going away), or its
//!   instance dies, its requests stay pending, and decidable, for
//!   [`REATTACH_GRACE`]: the host may take them back, on a new link (of
//!   any instance sharing the store), with [`HostLink::reattach`], keeping
//!   their ids and original deadlines (a decision taken meanwhile is
//!   delivered on re-attach); after the grace they are withdrawn as
//!   [`CloseReason::HostGone`];
//! - every decision, accepted or refused, is kept in the audit log
//!   ([`ApprovalQueue::history`]): who ([`ApproverIdentity`], as verified
//!   by the front end), when, which request, which outcome, on which
//!   instance.
//!
//! The queue never judges a decision's content: the host validates it in
//! the §9 order, so a malformed decision is forwarded as made.

mod mirror;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use hookwire::approval::{ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamResolution};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::store::{ApprovalStore, ReattachFound, StoredRequest};
use crate::error::{Error, Refusal};
use crate::metrics::ApprovalCounters;

pub use super::events::{
    Acceptance, ApproverIdentity, AuthMethod, CloseReason, DecisionOutcome, DecisionRecord,
    DecisionSubject, HistoryQuery, HostDelivery, MAX_APPROVER_NAME, MAX_HISTORY, PendingApproval,
    QueueEvent, Reattached,
};

/// Longest deadline the queue honours; longer ones are cut to this.
pub const MAX_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// How many closed request ids the queue remembers, to tell a late
/// approver *why* its decision was refused.
const CLOSED_MEMORY: usize = 10_000;

/// How long a request whose host is away (its link
/// [detached](HostLink::detach), or its instance dead) stays pending for
/// its host to [re-attach](HostLink::reattach) it (its own deadline, when
/// sooner, still closes it first).
pub const REATTACH_GRACE: Duration = Duration::from_secs(30);

/// How many decisions the in-memory audit log keeps (oldest dropped
/// first).
const HISTORY_MEMORY: usize = 10_000;

/// The instance name of a queue made by [`ApprovalQueue::new`].
pub const DEFAULT_INSTANCE: &str = "local";

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

/// The queue of pending approvals of one service instance. Cheap to
/// clone; clones share it.
#[derive(Debug, Clone)]
pub struct ApprovalQueue {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// This instance's name, recorded with each decision it takes.
    instance: String,
    state: Mutex<State>,
    events: broadcast::Sender<QueueEvent>,
    /// Set once metrics are registered ([`ApprovalQueue::register_metrics`]).
    metrics: OnceLock<ApprovalCounters>,
    /// The shared store, and the writes queued for it; `None` when embedded.
    shared: Option<Shared>,
}

#[derive(Debug)]
struct Shared {
    store: Arc<dyn ApprovalStore>,
    /// Writes a host's link makes without waiting (submit, cancel, a
    /// dropped or detached link, an expiry), applied in order by the
    /// instance's mirror task.
    writes: mpsc::UnboundedSender<Write>,
}

/// A store write queued by a synchronous call.
#[derive(Debug)]
enum Write {
    /// A new request; `stored` turns `Some(true)` once it is in the store.
    Insert(Box<StoredRequest>, watch::Sender<Option<bool>>),
    /// Close a request (see [`ApprovalStore::close`]).
    Close(String, CloseReason),
    /// Leave requests for their hosts to re-attach.
    Detach(Vec<String>),
    /// Nothing to write: answered once every write before it is applied.
    Flush(oneshot::Sender<()>),
}

#[derive(Debug, Default)]
struct State {
    next_request: u64,
    next_host: u64,
    pending: HashMap<String, Entry>,
    hosts: HashMap<u64, HostState>,
    closed: HashMap<String, Refusal>,
    closed_order: VecDeque<String>,
    /// The decision audit log, oldest first (embedded queues only).
    history: VecDeque<DecisionRecord>,
    /// Decisions taken while their host was away, by (host, host request
    /// id), for it to collect on re-attach until the request's deadline
    /// (embedded queues only).
    undelivered: HashMap<(String, String), Undelivered>,
}

#[derive(Debug)]
struct Undelivered {
    id: String,
    /// The request's identity and point, which a re-attach must match.
    context_identity: Option<String>,
    point: hookwire::InterceptionPoint,
    resolution: StreamResolution,
    deadline: Instant,
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    /// The link of this instance it came on; `None` while its host is
    /// away, or (shared) attached to another instance.
    host: Option<u64>,
    host_request_id: String,
    approval: PendingApproval,
    timer: Option<AbortHandle>,
    /// When it was queued, for the wait and age metrics.
    queued: Instant,
    /// Shared: whether the store has it yet (`None` while the write is
    /// under way); `None` for entries read from the store.
    stored: Option<watch::Receiver<Option<bool>>>,
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
    /// An empty embedded queue.
    pub fn new() -> Self {
        Self::with_instance(DEFAULT_INSTANCE)
    }

    /// An empty embedded queue whose decisions are recorded as taken by
    /// `instance`.
    pub fn with_instance(instance: impl Into<String>) -> Self {
        Self::build(instance.into(), None)
    }

    /// A queue over a shared `store` (one instance of a service whose
    /// instances share it): reads the store's pending set, then follows
    /// its changes in a background task until the last clone of the queue
    /// is dropped. Must be called within a tokio runtime.
    pub async fn shared(store: Arc<dyn ApprovalStore>) -> Result<Self, Error> {
        // Subscribed before reading, so no change falls in between.
        let changes = store.subscribe();
        let pending = store.pending().await?;
        let (writes, queued) = mpsc::unbounded_channel();
        let queue = Self::build(
            store.instance().to_owned(),
            Some(Shared {
                store: Arc::clone(&store),
                writes,
            }),
        );
        {
            let mut state = queue.state();
            for row in pending {
                queue.mirror_add(&mut state, &row);
            }
        }
        mirror::spawn(Arc::downgrade(&queue.inner), store, queued, changes);
        Ok(queue)
    }

    fn build(instance: String, shared: Option<Shared>) -> Self {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                instance,
                state: Mutex::new(State::default()),
                events,
                metrics: OnceLock::new(),
                shared,
            }),
        }
    }

    /// This instance's name, as recorded with its decisions.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Whether the queue keeps its state in a shared store.
    pub fn is_shared(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// Waits until every store write queued so far by hosts' links
    /// (submits, cancels, detaches, expiries) has been applied, so that a
    /// process shutting down leaves the store as its links left it. An
    /// embedded queue has nothing to wait for.
    pub async fn flush(&self) {
        if let Some(shared) = &self.inner.shared {
            let (done, applied) = oneshot::channel();
            if shared.writes.send(Write::Flush(done)).is_ok() {
                let _ = applied.await;
            }
        }
    }

    fn store(&self) -> Option<&Arc<dyn ApprovalStore>> {
        self.inner.shared.as_ref().map(|s| &s.store)
    }

    fn write(&self, write: Write) {
        if let Some(shared) = &self.inner.shared {
            // The mirror task ends only with the queue.
            let _ = shared.writes.send(write);
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
    /// requests. `name` identifies the host on approvers' screens and, for
    /// [`HostLink::reattach`], across links: give it the host's verified
    /// principal (or its hello) rather than its network peer.
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
    /// shares the same counters. A shared queue counts the requests of
    /// the hosts attached to this instance; its gauges show the whole
    /// pending set.
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

    /// Waits until a request this instance submitted is in the store (a
    /// decision on it must not race its insert). `false` if it never got
    /// there.
    async fn stored(&self, id: &str) -> bool {
        let stored = self.state().pending.get(id).and_then(|e| e.stored.clone());
        match stored {
            None => true,
            Some(mut rx) => matches!(
                rx.wait_for(Option::is_some).await.as_deref(),
                Ok(Some(true))
            ),
        }
    }

    /// Records that `approver` opened request `id` (a person looking at
    /// it, not a page listing it), and tells its host and the other
    /// approvers. Repeats are recorded once.
    pub async fn seen(&self, id: &str, approver: &ApproverIdentity) -> Result<(), Error> {
        if let Some(store) = self.store() {
            self.stored(id).await;
            if let Err(refusal) = store.seen(id, approver).await? {
                return Err(Error::Refused {
                    request_id: id.to_owned(),
                    refusal,
                });
            }
            let mut state = self.state();
            self.apply_seen(&mut state, id, approver);
            return Ok(());
        }
        let mut state = self.state();
        if !state.pending.contains_key(id) {
            return Err(refused(&state, id));
        }
        self.apply_seen(&mut state, id, approver);
        Ok(())
    }

    /// Adds `approver` to `id`'s viewers, once, telling its host (when
    /// attached here) and the subscribers.
    fn apply_seen(&self, state: &mut State, id: &str, approver: &ApproverIdentity) {
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

    /// The decision audit log, newest first, as `query` selects it (at
    /// most [`MAX_HISTORY`] entries).
    pub async fn history(&self, query: &HistoryQuery) -> Result<Vec<DecisionRecord>, Error> {
        if let Some(store) = self.store() {
            let query = HistoryQuery {
                limit: query.limit.min(MAX_HISTORY),
                ..query.clone()
            };
            return store.history(&query).await;
        }
        let limit = query.limit.min(MAX_HISTORY);
        Ok(self
            .state()
            .history
            .iter()
            .rev()
            .filter(|r| query.matches(r))
            .take(limit)
            .cloned()
            .collect())
    }

    /// Records in the audit log that `approver` tried to decide request
    /// `id` and the front end refused it because their rules do not allow
    /// it ([`Acceptance::Forbidden`]). The queue does not change.
    pub async fn audit_forbidden(
        &self,
        id: &str,
        approver: &ApproverIdentity,
        resolution: &ApprovalResolution,
    ) -> Result<DecisionRecord, Error> {
        let record = {
            let state = self.state();
            self.record(&state, id, approver, resolution, Acceptance::Forbidden)
        };
        tracing::info!(
            id,
            approver = approver.name(),
            "approval decision forbidden"
        );
        self.audit(record.clone()).await?;
        Ok(record)
    }

    /// Adds a refused or forbidden decision to the audit log.
    async fn audit(&self, record: DecisionRecord) -> Result<(), Error> {
        match self.store() {
            Some(store) => store.audit(&record).await,
            None => {
                push_history(&mut self.state(), record);
                Ok(())
            }
        }
    }

    /// An audit entry for a decision about `id` (pending or not).
    fn record(
        &self,
        state: &State,
        id: &str,
        approver: &ApproverIdentity,
        resolution: &ApprovalResolution,
        acceptance: Acceptance,
    ) -> DecisionRecord {
        DecisionRecord {
            request_id: id.to_owned(),
            subject: state
                .pending
                .get(id)
                .map(|e| DecisionSubject::of(&e.approval, &e.host_request_id)),
            approver: approver.clone(),
            instance: self.inner.instance.clone(),
            decided_at: now_to_the_microsecond(),
            outcome: DecisionOutcome::of(resolution),
            acceptance,
        }
    }

    /// Decides request `id` as `approver`: the first decision for a
    /// pending request within its deadline goes to the host, unchanged,
    /// and is returned as its audit entry. Later ones are refused
    /// ([`Error::Refused`]). Both are kept in the audit log. A shared
    /// queue takes the decision in the store first: the first one wins
    /// across instances, and a store that cannot be reached decides
    /// nothing ([`Error::Store`]).
    pub async fn resolve(
        &self,
        id: &str,
        approver: &ApproverIdentity,
        resolution: ApprovalResolution,
    ) -> Result<DecisionRecord, Error> {
        if self.store().is_some() {
            return self.resolve_shared(id, approver, resolution).await;
        }
        let mut state = self.state();
        let refusal = match state.pending.get(id) {
            None => Some(refusal_of(&state, id)),
            Some(entry) if entry.approval.deadline <= Instant::now() => Some(Refusal::Expired),
            Some(_) => None,
        };
        if let Some(refusal) = refusal {
            let record = self.record(
                &state,
                id,
                approver,
                &resolution,
                Acceptance::Refused(refusal),
            );
            push_history(&mut state, record);
            if refusal == Refusal::Expired {
                self.close(&mut state, id, CloseReason::Expired);
            }
            return Err(Error::Refused {
                request_id: id.to_owned(),
                refusal,
            });
        }
        let record = self.record(&state, id, approver, &resolution, Acceptance::Accepted);
        push_history(&mut state, record.clone());
        let host_request_id = state
            .pending
            .get(id)
            .map(|e| e.host_request_id.clone())
            .unwrap_or_default();
        let decided = StreamResolution {
            request_id: host_request_id,
            approver: approver.name().to_owned(),
            resolution,
        };
        self.apply_decided(&mut state, id, approver, decided);
        Ok(record)
    }

    async fn resolve_shared(
        &self,
        id: &str,
        approver: &ApproverIdentity,
        resolution: ApprovalResolution,
    ) -> Result<DecisionRecord, Error> {
        let Some(store) = self.store() else {
            return Err(Error::Refused {
                request_id: id.to_owned(),
                refusal: Refusal::UnknownRequest,
            });
        };
        self.stored(id).await;
        let (record, host_request_id) = {
            let state = self.state();
            // Only what this instance shows its approvers is decided here:
            // front ends authorize a decision against the request they
            // read from this queue, so one not (yet) mirrored is refused.
            match state.pending.get(id) {
                None => {
                    let refusal = refusal_of(&state, id);
                    let record = self.record(
                        &state,
                        id,
                        approver,
                        &resolution,
                        Acceptance::Refused(refusal),
                    );
                    (Err((record, refusal)), String::new())
                }
                Some(entry) => {
                    let host_request_id = entry.host_request_id.clone();
                    let record =
                        self.record(&state, id, approver, &resolution, Acceptance::Accepted);
                    (Ok(record), host_request_id)
                }
            }
        };
        let mut record = match record {
            Ok(record) => record,
            Err((record, refusal)) => {
                store.audit(&record).await?;
                return Err(Error::Refused {
                    request_id: id.to_owned(),
                    refusal,
                });
            }
        };
        let decided = StreamResolution {
            request_id: host_request_id,
            approver: approver.name().to_owned(),
            resolution,
        };
        match store.decide(&record, &decided).await? {
            Ok(()) => {
                let mut state = self.state();
                self.apply_decided(&mut state, id, approver, decided);
                Ok(record)
            }
            Err(refusal) => {
                record.acceptance = Acceptance::Refused(refusal);
                store.audit(&record).await?;
                if refusal == Refusal::Expired {
                    self.write(Write::Close(id.to_owned(), CloseReason::Expired));
                }
                Err(Error::Refused {
                    request_id: id.to_owned(),
                    refusal,
                })
            }
        }
    }

    /// Takes a decided request out of the pending set: delivers the
    /// decision to its host (attached here; an embedded queue keeps it
    /// for a host that is away), tells the subscribers.
    fn apply_decided(
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
        if let Some(m) = self.inner.metrics.get()
            && self.counts(&entry)
        {
            let label = match outcome {
                Some(ApprovalOutcome::Approve) => "approved",
                Some(ApprovalOutcome::Reject) => "rejected",
                _ => "unresolved",
            };
            m.left(label, entry.queued.elapsed());
        }
        match entry.host.and_then(|h| state.hosts.get(&h)) {
            Some(h) => {
                let _ = h.deliver.send(HostDelivery::Resolution(Box::new(decided)));
            }
            // Its host is away: an embedded queue keeps the decision for
            // it to collect on re-attach (a shared store keeps its own).
            None if self.store().is_none() => {
                state.undelivered.insert(
                    (entry.approval.host.clone(), entry.host_request_id),
                    Undelivered {
                        id: id.to_owned(),
                        context_identity: entry.approval.request.context_identity.clone(),
                        point: entry.approval.request.interception_point,
                        resolution: decided,
                        deadline: entry.approval.deadline,
                    },
                );
            }
            None => {}
        }
        tracing::info!(id, approver = approver.name(), outcome = ?outcome, "approval resolved");
        self.emit(QueueEvent::Resolved {
            id: id.to_owned(),
            approver: approver.clone(),
            outcome,
        });
    }

    /// Whether this instance counts `entry` in its metrics: every entry
    /// when embedded, those of its own hosts when shared (so that the sum
    /// over instances counts each request once).
    fn counts(&self, entry: &Entry) -> bool {
        self.store().is_none() || entry.host.is_some()
    }

    /// Gives up on request `id`: its host fails it at once (as
    /// `host_error:approval_resolver_failed`) and approvers see it closed.
    /// For approvers that cannot decide and will not wait (a ticket system
    /// that is down, a bridge that crashed).
    pub async fn fail(&self, id: &str, reason: &str) -> Result<(), Error> {
        if let Some(store) = self.store() {
            self.stored(id).await;
            if !store.close(id, CloseReason::Failed, Some(reason)).await? {
                let refusal = match store.state(id).await? {
                    None => Refusal::UnknownRequest,
                    Some(super::store::StoredState::Decided { .. }) => Refusal::AlreadyResolved,
                    Some(super::store::StoredState::Closed { reason, .. }) => Refusal::from(reason),
                    Some(super::store::StoredState::Pending { .. }) => Refusal::Withdrawn,
                };
                return Err(Error::Refused {
                    request_id: id.to_owned(),
                    refusal,
                });
            }
            let mut state = self.state();
            self.apply_failed(&mut state, id, reason);
            return Ok(());
        }
        let mut state = self.state();
        if !state.pending.contains_key(id) {
            return Err(refused(&state, id));
        }
        self.apply_failed(&mut state, id, reason);
        Ok(())
    }

    /// Tells a failed request's host (when attached here) and closes it.
    fn apply_failed(&self, state: &mut State, id: &str, reason: &str) {
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

    /// Closes `id` if it is still pending and past its deadline.
    fn expire(&self, id: &str) {
        let mut state = self.state();
        if state
            .pending
            .get(id)
            .is_some_and(|e| e.approval.deadline <= Instant::now())
        {
            self.close(&mut state, id, CloseReason::Expired);
            self.write(Write::Close(id.to_owned(), CloseReason::Expired));
        }
        let now = Instant::now();
        state.undelivered.retain(|_, u| u.deadline > now);
    }

    /// Withdraws `id` if its host is still away (embedded queues; a
    /// shared store withdraws its own).
    fn abandon(&self, id: &str) {
        let mut state = self.state();
        if state.pending.get(id).is_some_and(|e| e.host.is_none()) {
            self.close(&mut state, id, CloseReason::HostGone);
        }
    }

    /// Withdraws request `id` of link `link` for `reason`. Embedded: at
    /// once. Shared: the store closes it (only while this instance still
    /// holds its host: one that re-attached elsewhere stays), and the
    /// mirror follows the store's change; meanwhile it is no longer
    /// linked here.
    fn withdraw(&self, state: &mut State, link: u64, id: String, reason: CloseReason) {
        if !self.is_shared() {
            self.close(state, &id, reason);
            return;
        }
        if let Some(entry) = state.pending.get_mut(&id)
            && entry.host == Some(link)
        {
            entry.host = None;
            let host_request_id = entry.host_request_id.clone();
            if let Some(h) = state.hosts.get_mut(&link) {
                h.requests.remove(&host_request_id);
            }
        }
        self.write(Write::Close(id, reason));
    }

    /// Removes `id` undecided and tells the subscribers why.
    fn close(&self, state: &mut State, id: &str, reason: CloseReason) {
        if let Some(entry) = self.take(state, id, Refusal::from(reason)) {
            if let Some(m) = self.inner.metrics.get()
                && self.counts(&entry)
            {
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

    fn emit(&self, event: QueueEvent) {
        // No subscriber is not an error.
        let _ = self.inner.events.send(event);
    }

    /// A timer closing `id` as expired at `deadline`.
    fn deadline_timer(&self, id: &str, deadline: Instant) -> AbortHandle {
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

    /// Adds a request read from the store to the mirror (unless this
    /// instance already has it, or saw it close), attached to no local
    /// link.
    fn mirror_add(&self, state: &mut State, row: &StoredRequest) {
        if state.pending.contains_key(&row.id) || state.closed.contains_key(&row.id) {
            return;
        }
        state.next_request += 1;
        let approval = row.to_pending();
        let timer = self.deadline_timer(&row.id, approval.deadline);
        state.pending.insert(
            row.id.clone(),
            Entry {
                seq: state.next_request,
                host: None,
                host_request_id: row.host_request_id.clone(),
                approval: approval.clone(),
                timer: Some(timer),
                queued: Instant::now(),
                stored: None,
            },
        );
        self.emit(QueueEvent::Added(Box::new(approval)));
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
        let id = match self.store() {
            Some(store) => store.next_id(),
            None => format!("q-{seq}"),
        };
        let wait = deadline.min(MAX_DEADLINE);
        let deadline = Instant::now() + wait;
        let approval = PendingApproval {
            id: id.clone(),
            host: host_name.clone(),
            request,
            deadline,
            seen_by: Vec::new(),
        };
        let timer = self.deadline_timer(&id, deadline);
        let stored = self.inner.shared.as_ref().map(|_| {
            let (done, stored) = watch::channel(None);
            let row = StoredRequest {
                id: id.clone(),
                host: host_name,
                host_request_id: request_id.clone(),
                request: approval.request.clone(),
                remaining: wait,
                seen_by: Vec::new(),
            };
            self.write(Write::Insert(Box::new(row), done));
            stored
        });
        if let Some(h) = state.hosts.get_mut(&host) {
            h.requests.insert(request_id.clone(), id.clone());
        }
        state.pending.insert(
            id.clone(),
            Entry {
                seq,
                host: Some(host),
                host_request_id: request_id,
                approval: approval.clone(),
                timer: Some(timer),
                queued: Instant::now(),
                stored,
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

fn refusal_of(state: &State, id: &str) -> Refusal {
    state
        .closed
        .get(id)
        .copied()
        .unwrap_or(Refusal::UnknownRequest)
}

fn refused(state: &State, id: &str) -> Error {
    Error::Refused {
        request_id: id.to_owned(),
        refusal: refusal_of(state, id),
    }
}

/// The wall clock to the microsecond: what stores keep of a decision's
/// time, so that an audit entry reads back equal to the one returned.
fn now_to_the_microsecond() -> SystemTime {
    let now = SystemTime::now();
    match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => SystemTime::UNIX_EPOCH + Duration::new(d.as_secs(), d.subsec_micros() * 1000),
        Err(_) => now,
    }
}

fn push_history(state: &mut State, record: DecisionRecord) {
    state.history.push_back(record);
    while state.history.len() > HISTORY_MEMORY {
        state.history.pop_front();
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
    /// from now on) and for [`reattach`](Self::reattach).
    pub fn set_name(&self, name: impl Into<String>) {
        if let Some(h) = self.queue.state().hosts.get_mut(&self.id) {
            h.name = name.into();
        }
    }

    /// Queues a request for approvers. `request_id` must not be pending
    /// already on this link; `deadline` is the time the host waits (cut
    /// to [`MAX_DEADLINE`]). Returns the queue's id for it. Must be called
    /// within a tokio runtime (the deadline is a timer). A shared queue
    /// writes it to the store in the background; if that fails, the host
    /// is told the request failed.
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
            self.queue
                .withdraw(&mut state, self.id, id, CloseReason::Cancelled);
        }
    }

    /// Ends the link *without* withdrawing its requests: for the service
    /// ending a host's stream because the instance is going away, not
    /// because the host did. Its pending requests stay pending and
    /// decidable for [`REATTACH_GRACE`] (or until their deadline), for the
    /// host to [re-attach](Self::reattach) on another link (of any
    /// instance, when the queue is shared).
    pub fn detach(self) {
        let mut state = self.queue.state();
        let Some(host) = state.hosts.remove(&self.id) else {
            return;
        };
        let mut away = Vec::new();
        for id in host.requests.into_values() {
            if let Some(entry) = state.pending.get_mut(&id) {
                entry.host = None;
                away.push(id);
            }
        }
        drop(state);
        if self.queue.is_shared() {
            // The store withdraws what is not taken back in time.
            self.queue.write(Write::Detach(away));
            return;
        }
        for id in away {
            let queue = Arc::downgrade(&self.queue.inner);
            tokio::spawn(async move {
                tokio::time::sleep(REATTACH_GRACE).await;
                if let Some(inner) = Weak::upgrade(&queue) {
                    ApprovalQueue { inner }.abandon(&id);
                }
            });
        }
        // Already removed from the hosts: dropping withdraws nothing.
    }

    /// Takes back a request this host submitted on a link that has gone
    /// away with its instance: the same host (by name, as set at connect
    /// or by [`set_name`](Self::set_name)), the same `request_id`, and the
    /// same request (its `context_identity` and point). The request keeps
    /// its queue id and original deadline; the host's new deadline is not
    /// taken. If it was decided meanwhile, the decision is delivered on
    /// this link at once. A request that is unknown, closed, past its
    /// deadline or does not match is refused ([`Refusal::UnknownRequest`]):
    /// the host then fails it. When the queue is shared, the request may
    /// have been submitted on any instance; one attached to a live link
    /// elsewhere moves here (the host says it is here now).
    pub async fn reattach(
        &self,
        request_id: &str,
        request: &ApprovalRequest,
    ) -> Result<Reattached, Error> {
        let Some(name) = self
            .queue
            .state()
            .hosts
            .get(&self.id)
            .map(|h| h.name.clone())
        else {
            return Err(Error::Refused {
                request_id: request_id.to_owned(),
                refusal: Refusal::Withdrawn,
            });
        };
        if let Some(store) = self.queue.store() {
            let found = store
                .reattach(
                    &name,
                    request_id,
                    request.context_identity.as_deref(),
                    request.interception_point,
                )
                .await?;
            return self.adopt(request_id, found);
        }
        let mut state = self.queue.state();
        let matches = |p: &PendingApproval| {
            p.host == name
                && p.request.context_identity == request.context_identity
                && p.request.interception_point == request.interception_point
        };
        let orphan = state
            .pending
            .values()
            .find(|e| e.host.is_none() && e.host_request_id == request_id && matches(&e.approval))
            .map(|e| (e.approval.id.clone(), e.approval.deadline));
        if let Some((id, deadline)) = orphan {
            if let Some(entry) = state.pending.get_mut(&id) {
                entry.host = Some(self.id);
            }
            if let Some(h) = state.hosts.get_mut(&self.id) {
                h.requests.insert(request_id.to_owned(), id.clone());
            }
            tracing::info!(id = %id, "approval request re-attached");
            return Ok(Reattached {
                id,
                deadline,
                decided: false,
            });
        }
        let key = (name, request_id.to_owned());
        let now = Instant::now();
        let collectable = state.undelivered.get(&key).is_some_and(|u| {
            u.deadline > now
                && u.context_identity == request.context_identity
                && u.point == request.interception_point
        });
        if collectable
            && let Some(u) = state.undelivered.remove(&key)
            && let Some(h) = state.hosts.get(&self.id)
        {
            let _ = h
                .deliver
                .send(HostDelivery::Resolution(Box::new(u.resolution)));
            tracing::info!(id = %u.id, "approval request re-attached after its decision");
            return Ok(Reattached {
                id: u.id,
                deadline: u.deadline,
                decided: true,
            });
        }
        Err(Error::Refused {
            request_id: request_id.to_owned(),
            refusal: Refusal::UnknownRequest,
        })
    }

    /// Attaches what the shared store found for a re-attach to this link.
    fn adopt(&self, request_id: &str, found: Option<ReattachFound>) -> Result<Reattached, Error> {
        let queue = &self.queue;
        let mut state = queue.state();
        match found {
            Some(ReattachFound::Pending(row)) => {
                queue.mirror_add(&mut state, &row);
                let deadline = Instant::now() + row.remaining;
                if let Some(entry) = state.pending.get_mut(&row.id) {
                    entry.host = Some(self.id);
                    entry.approval.deadline = deadline;
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
            None => Err(Error::Refused {
                request_id: request_id.to_owned(),
                refusal: Refusal::UnknownRequest,
            }),
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
            self.queue
                .withdraw(&mut state, self.id, id, CloseReason::HostGone);
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

    fn who(name: &str) -> ApproverIdentity {
        ApproverIdentity::in_process(name)
    }

    fn refusal<T>(r: Result<T, Error>) -> Option<Refusal> {
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
        queue.seen(&id, &who("ann")).await.unwrap();
        queue.seen(&id, &who("ann")).await.unwrap();
        assert_eq!(queue.get(&id).unwrap().seen_by, ["ann"]);
        let r = ApprovalResolution::approve(&p.request, Verdict::allow());
        let won = queue.resolve(&id, &who("bob"), r.clone()).await.unwrap();
        assert_eq!(won.acceptance, Acceptance::Accepted);
        assert_eq!(won.outcome, DecisionOutcome::Allow);
        assert_eq!(won.instance, DEFAULT_INSTANCE);
        assert_eq!(
            won.subject.as_ref().map(|s| s.host_request_id.as_str()),
            Some("r1")
        );
        assert_eq!(
            refusal(queue.resolve(&id, &who("ann"), r.clone()).await),
            Some(Refusal::AlreadyResolved)
        );
        assert_eq!(
            refusal(queue.resolve("q-999", &who("ann"), r.clone()).await),
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
                id: id.clone(),
                approver: who("bob"),
                outcome: Some(ApprovalOutcome::Approve)
            })
        );
        assert!(queue.is_empty());
        // Every attempt is audited, newest first.
        let log = queue.history(&HistoryQuery::default()).await.unwrap();
        let seen: Vec<(&str, &str, Acceptance)> = log
            .iter()
            .map(|r| (r.request_id.as_str(), r.approver.name(), r.acceptance))
            .collect();
        assert_eq!(
            seen,
            [
                ("q-999", "ann", Acceptance::Refused(Refusal::UnknownRequest)),
                (
                    id.as_str(),
                    "ann",
                    Acceptance::Refused(Refusal::AlreadyResolved)
                ),
                (id.as_str(), "bob", Acceptance::Accepted),
            ]
        );
        let bobs = HistoryQuery {
            approver: Some("bob".into()),
            ..HistoryQuery::default()
        };
        assert_eq!(queue.history(&bobs).await.unwrap(), [won]);
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
        assert_eq!(
            refusal(queue.resolve(&id, &who("a"), r).await),
            Some(Refusal::Expired)
        );
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
            refusal(queue.resolve(&qa, &who("x"), r).await),
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
        queue.fail(&id, "ticket system down").await.unwrap();
        assert!(matches!(
            deliveries.recv().await,
            Some(HostDelivery::Failed { request_id, .. }) if request_id == "r"
        ));
        assert!(queue.fail(&id, "again").await.is_err());
    }

    #[test]
    fn outcomes_read_as_allow_edited_deny_or_unresolved() {
        let req = request(1);
        let of = |r: ApprovalResolution| DecisionOutcome::of(&r);
        assert_eq!(
            of(ApprovalResolution::approve(&req, Verdict::allow())),
            DecisionOutcome::Allow
        );
        assert_eq!(
            of(ApprovalResolution::approve(
                &req,
                Verdict::transform("$target", json!({"amount": 5}))
            )),
            DecisionOutcome::AllowEdited {
                path: "$target".into(),
                value: json!({"amount": 5})
            }
        );
        assert_eq!(
            of(ApprovalResolution::reject(&req, Verdict::deny("no"))),
            DecisionOutcome::Deny
        );
        assert_eq!(
            of(ApprovalResolution::unresolved(&req)),
            DecisionOutcome::Unresolved
        );
        assert_eq!(
            of(ApprovalResolution::approve(&req, Verdict::deny("no"))),
            DecisionOutcome::Malformed
        );
    }

    #[tokio::test]
    async fn forbidden_decisions_are_audited_and_change_nothing() {
        let queue = ApprovalQueue::with_instance("i-1");
        let (link, _d) = queue.connect_host("h");
        let id = link
            .submit("r", request(1), Duration::from_secs(60))
            .unwrap();
        let r = ApprovalResolution::approve(&request(1), Verdict::allow());
        let audited = queue.audit_forbidden(&id, &who("eve"), &r).await.unwrap();
        assert_eq!(audited.acceptance, Acceptance::Forbidden);
        assert_eq!(audited.instance, "i-1");
        assert_eq!(queue.len(), 1);
        assert_eq!(
            queue.history(&HistoryQuery::latest(10)).await.unwrap(),
            [audited]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_detached_request_is_reattached_with_its_deadline_or_withdrawn_after_the_grace() {
        let queue = ApprovalQueue::new();
        let (old, _gone) = queue.connect_host("billing");
        let id = old
            .submit("r1", request(1), Duration::from_secs(600))
            .unwrap();
        let other = old
            .submit("r2", request(2), Duration::from_secs(600))
            .unwrap();
        let deadline = queue.get(&id).unwrap().deadline;
        old.detach();
        // Still pending and decidable while its host is away.
        assert_eq!(queue.len(), 2);
        tokio::time::sleep(Duration::from_secs(1)).await;

        let (new, mut deliveries) = queue.connect_host("billing");
        // A different request under the same id is not taken.
        assert_eq!(
            refusal(new.reattach("r1", &request(9)).await),
            Some(Refusal::UnknownRequest)
        );
        let back = new.reattach("r1", &request(1)).await.unwrap();
        assert_eq!(
            (back.id.as_str(), back.deadline, back.decided),
            (id.as_str(), deadline, false)
        );
        // Another host of another name cannot take r2.
        let (stranger, _s) = queue.connect_host("someone-else");
        assert!(stranger.reattach("r2", &request(2)).await.is_err());

        let r = ApprovalResolution::approve(&request(1), Verdict::allow());
        queue.resolve(&id, &who("ann"), r.clone()).await.unwrap();
        assert!(matches!(
            deliveries.recv().await,
            Some(HostDelivery::Resolution(d)) if d.request_id == "r1" && d.resolution == r
        ));

        // r2 was never taken back: withdrawn once the grace is over.
        let mut sub = queue.subscribe();
        tokio::time::sleep(REATTACH_GRACE).await;
        assert_eq!(
            sub.events.recv().await.ok(),
            Some(QueueEvent::Closed {
                id: other,
                reason: CloseReason::HostGone
            })
        );
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn a_decision_taken_while_the_host_was_away_is_delivered_on_reattach() {
        let queue = ApprovalQueue::new();
        let (old, _gone) = queue.connect_host("billing");
        let id = old
            .submit("r1", request(1), Duration::from_secs(600))
            .unwrap();
        old.detach();
        let r = ApprovalResolution::reject(&request(1), Verdict::deny("no"));
        queue.resolve(&id, &who("ann"), r.clone()).await.unwrap();
        let (new, mut deliveries) = queue.connect_host("billing");
        let back = new.reattach("r1", &request(1)).await.unwrap();
        assert!(back.decided);
        assert!(matches!(
            deliveries.recv().await,
            Some(HostDelivery::Resolution(d)) if d.request_id == "r1" && d.resolution == r
        ));
        // Collected once.
        assert!(new.reattach("r1", &request(1)).await.is_err());
    }
}
