//! The queue of pending approvals that hosts fill and approvers drain.
//!
//! One [`ApprovalQueue`] is shared by every front end of an approval
//! service instance: the gRPC streams ([`crate::grpc`]), the web page
//! ([`crate::web`]) and any in-process approver. Hosts attach through a
//! [`HostLink`] and submit requests; approvers read
//! [`ApprovalQueue::pending`] or [`ApprovalQueue::subscribe`] to a
//! snapshot plus every change, and answer with [`ApprovalQueue::resolve`].
//!
//! Every queue runs over an [`ApprovalStore`] that holds the requests,
//! decisions and audit log (see [`crate::store`]): an embedded one
//! ([`ApprovalQueue::new`]) over a [`MemoryStore`] of its own, one
//! process; a shared one ([`ApprovalQueue::shared`]) over a store several
//! instances share (PostgreSQL), which then behave as one service. It is
//! one path either way: the store takes every change first, the queue's
//! memory mirrors the pending set for reading. The rules:
//!
//! - every approver sees every pending request, under one id the store
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
//!
//! Its parts, each standing on the ones before it: `state` (its memory
//! and the transitions every path goes through), `writes` (the store
//! writes a link makes without waiting), `submit` (a request queued, and
//! the deadline timers), `mirror` (the background task and the store's
//! change feed), `links` ([`HostLink`]: cancel, withdraw, detach,
//! re-attach), `decide` (seen, decisions, failures, the audit log) and
//! `gauges` (metrics).

mod decide;
mod gauges;
mod links;
mod mirror;
mod state;
mod submit;
mod writes;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{broadcast, mpsc};

use crate::error::Error;
use crate::store::memory::MemoryStore;
use crate::store::{ApprovalStore, StoreChange, StoredRequest};
use state::{Idle, Inner, Writes};

pub use crate::events::{
    Acceptance, ApproverIdentity, AuthMethod, CloseReason, DecisionOutcome, DecisionRecord,
    DecisionSubject, HistoryQuery, HostDelivery, MAX_APPROVER_NAME, MAX_HISTORY, PendingApproval,
    QueueEvent, Reattached,
};
pub use crate::store::REATTACH_GRACE;
pub use links::HostLink;
pub use state::ApprovalQueue;
pub use submit::MAX_DEADLINE;

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

impl Default for ApprovalQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl ApprovalQueue {
    /// An empty embedded queue: over a [`MemoryStore`] of its own.
    pub fn new() -> Self {
        Self::with_instance(DEFAULT_INSTANCE)
    }

    /// An empty embedded queue whose decisions are recorded as taken by
    /// `instance`.
    pub fn with_instance(instance: impl Into<String>) -> Self {
        let store = Arc::new(MemoryStore::new(instance));
        let changes = store.subscribe();
        Self::build(store, changes, &[])
    }

    /// A queue over `store` (one instance of a service whose instances
    /// share it): reads the store's pending set, then follows its changes
    /// in a background task until the last clone of the queue is dropped.
    /// Must be called within a tokio runtime.
    pub async fn shared(store: Arc<dyn ApprovalStore>) -> Result<Self, Error> {
        // Subscribed before reading, so no change falls in between.
        let changes = store.subscribe();
        let pending = store.pending().await?;
        Ok(Self::build(store, changes, &pending))
    }

    fn build(
        store: Arc<dyn ApprovalStore>,
        changes: broadcast::Receiver<StoreChange>,
        pending: &[StoredRequest],
    ) -> Self {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let (to_task, inbox) = mpsc::unbounded_channel();
        let queue = Self {
            inner: Arc::new(Inner {
                store,
                state: Mutex::default(),
                events,
                metrics: OnceLock::new(),
                writes: Writes {
                    to_task: Mutex::new(to_task),
                    backlog: Arc::new(AtomicUsize::new(0)),
                    idle: Mutex::new(Some(Idle {
                        writes: inbox,
                        changes,
                    })),
                },
                internal: Arc::new(AtomicUsize::new(0)),
            }),
        };
        if !pending.is_empty() {
            let mut state = queue.state();
            for row in pending {
                queue.mirror_add(&mut state, row);
            }
        }
        queue.start_background();
        queue
    }

    /// This instance's name, as recorded with its decisions.
    pub fn instance(&self) -> &str {
        self.inner.store.instance()
    }

    /// Whether other instances share the queue's store
    /// ([`ApprovalStore::is_shared`]): a front end shutting down then
    /// detaches its hosts' links rather than dropping them.
    pub fn is_shared(&self) -> bool {
        self.inner.store.is_shared()
    }

    /// Every pending request, oldest first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        self.state().sorted()
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
            pending: state.sorted(),
            events: self.inner.events.subscribe(),
        }
    }

    /// A subscription for the service's own tasks (the page's trail, the
    /// notifier): not counted in `hookwire_approval_approvers_connected`
    /// while the returned guard lives.
    pub(crate) fn subscribe_internal(&self) -> (Subscription, InternalSubscriber) {
        self.inner.internal.fetch_add(1, Ordering::SeqCst);
        let guard = InternalSubscriber(Arc::clone(&self.inner.internal));
        (self.subscribe(), guard)
    }
}

/// Keeps an internal subscription out of the approvers' gauge; dropped
/// with the subscription.
#[derive(Debug)]
pub(crate) struct InternalSubscriber(Arc<AtomicUsize>);

impl Drop for InternalSubscriber {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookwire::Verdict;
    use hookwire::approval::{ApprovalOutcome, ApprovalResolution, StreamResolution};
    use serde_json::json;

    use super::*;
    use crate::error::{Error, Refusal};

    use crate::store::contract::request;

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
