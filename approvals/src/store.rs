//! Where an approval queue keeps its requests, decisions and audit log:
//! the [`ApprovalStore`] trait, and [`MemoryStore`](memory::MemoryStore),
//! the store of a queue that serves one process.
//!
//! Every [`ApprovalQueue`](crate::ApprovalQueue) runs over a store, and
//! its own memory only mirrors the pending set for reading (what approvers
//! see, what the host links answer for). A queue made with
//! [`ApprovalQueue::new`](crate::ApprovalQueue::new) is embedded: its store
//! is a [`MemoryStore`](memory::MemoryStore) nobody else shares (a demo,
//! tests, a laptop). A queue made with
//! [`ApprovalQueue::shared`](crate::ApprovalQueue::shared) runs over a
//! store several instances share (PostgreSQL: the
//! `hookwire-approvals-postgres` crate), so that they behave as one
//! service. The rules are the same for both:
//!
//! - a request goes into the store when its host submits it on any
//!   instance, and every other instance's mirror picks it up from the
//!   store's change feed ([`ApprovalStore::subscribe`], pushed, not
//!   polled);
//! - a decision is taken by the store ([`ApprovalStore::decide`]) at once
//!   (one transaction, one lock) and only while the request is pending and
//!   within its deadline, so the first decision wins across instances;
//!   the instance holding the host's link delivers it;
//! - a request is closed in the store (expired, cancelled, host gone,
//!   failed) and every instance withdraws it from its approvers;
//! - requests whose host is away (its link detached, or its instance
//!   dead) stay pending for [`REATTACH_GRACE`] for their host to re-attach
//!   them on any instance ([`ApprovalStore::reattach`]); those never taken
//!   back are withdrawn by the store's own housekeeping.
//!
//! The store never judges a decision's content, as the queue does not.
//! `contract` (feature `store-contract`) checks a store against these
//! rules; both stores' tests run it.

#[cfg(any(test, feature = "store-contract"))]
pub mod contract;
pub mod memory;

use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalRequest, StreamResolution};
use tokio::sync::broadcast;

use crate::error::{Error, Refusal};
use crate::events::{ApproverIdentity, CloseReason, DecisionRecord, HistoryQuery, PendingApproval};

/// How long a request whose host is away (its link
/// [detached](crate::HostLink::detach), or its instance dead) stays
/// pending for its host to [re-attach](crate::HostLink::reattach) it (its
/// own deadline, when sooner, still closes it first).
pub const REATTACH_GRACE: Duration = Duration::from_secs(30);

/// How early a store honours closing a request as expired: the queue's
/// timer and the store's clock may measure the same deadline this far
/// apart.
pub const EXPIRY_TOLERANCE: Duration = Duration::from_millis(50);

/// Most approvers a store records as having opened one request.
pub const MAX_SEEN: usize = 64;

/// A request as a store keeps it and hands it to every instance.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRequest {
    /// The queue's id, unique across instances ([`ApprovalStore::next_id`]).
    pub id: String,
    /// The host's name (from its hello, or its credential).
    pub host: String,
    /// The host's own id for the request.
    pub host_request_id: String,
    /// The §9 request.
    pub request: ApprovalRequest,
    /// Time left before its deadline when it was written or read. A
    /// relative time, so that instances need not agree on the clock: the
    /// store measures deadlines on its own.
    pub remaining: Duration,
    /// Who opened it, in order, once each.
    pub seen_by: Vec<ApproverIdentity>,
}

impl StoredRequest {
    /// What approvers see of it; `deadline` computed from `remaining`.
    pub fn to_pending(&self) -> PendingApproval {
        PendingApproval {
            id: self.id.clone(),
            host: self.host.clone(),
            request: self.request.clone(),
            deadline: tokio::time::Instant::now() + self.remaining,
            seen_by: self.seen_by.iter().map(|a| a.name().to_owned()).collect(),
        }
    }
}

/// Where a request stands in the store.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredState {
    /// Waiting for a decision.
    Pending {
        /// The request.
        request: StoredRequest,
        /// The instance holding its host's link; `None` while its host is
        /// away (detached, or its instance died).
        host_instance: Option<String>,
    },
    /// Decided: the winning decision, addressed to the host's request id.
    Decided {
        /// The queue's id.
        id: String,
        /// The decision as the host receives it.
        resolution: StreamResolution,
        /// Who decided.
        approver: ApproverIdentity,
    },
    /// Closed without a decision.
    Closed {
        /// The queue's id.
        id: String,
        /// The host's own id for the request.
        host_request_id: String,
        /// Why.
        reason: CloseReason,
        /// What [`ApprovalQueue::fail`](super::ApprovalQueue::fail) said,
        /// for the host.
        note: Option<String>,
    },
}

/// A change in the store, pushed to every instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChange {
    /// Request `id` changed (added, seen, decided, closed, re-attached):
    /// read it again with [`ApprovalStore::state`].
    Request(String),
    /// Changes may have been missed (the feed reconnected or fell
    /// behind): read the whole pending set again.
    Resync,
}

/// What a request's host re-attaching it finds
/// ([`ApprovalStore::reattach`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ReattachFound {
    /// Still pending; now attached to this instance.
    Pending(StoredRequest),
    /// Decided while its host was away; the decision to deliver.
    Decided {
        /// The queue's id.
        id: String,
        /// The decision, addressed to the host's request id.
        resolution: StreamResolution,
        /// Time that was left before the deadline.
        remaining: Duration,
    },
}

/// The state of the instances of one approval service (one instance, for
/// a [`MemoryStore`](memory::MemoryStore)). See the module docs for what
/// each operation must guarantee (`contract` checks it); every method
/// is called by the queue, never by front ends.
#[async_trait::async_trait]
pub trait ApprovalStore: std::fmt::Debug + Send + Sync + 'static {
    /// This instance's name, recorded with the decisions it takes and the
    /// requests whose hosts it holds.
    fn instance(&self) -> &str;

    /// Whether other instances share this store. The front ends ask it
    /// when the service shuts down: over a shared store a host's requests
    /// are detached, for it to re-attach them on another instance; over
    /// one nobody else shares they are withdrawn (nobody could take them
    /// over).
    fn is_shared(&self) -> bool;

    /// Whether every future this store returns is ready when first polled
    /// (it waits on no I/O, as [`MemoryStore`](memory::MemoryStore) does).
    /// The queue then applies the writes a host's link makes without
    /// waiting (submit, cancel, a dropped or detached link, an expiry) at
    /// once, in the caller; otherwise its background task applies them, in
    /// order.
    fn answers_at_once(&self) -> bool {
        false
    }

    /// A fresh queue id, unique across instances and restarts.
    fn next_id(&self) -> String;

    /// Records a request submitted by a host attached to this instance.
    async fn insert(&self, request: StoredRequest) -> Result<(), Error>;

    /// Takes `record`'s decision if the request is pending and within its
    /// deadline (first wins across instances), keeping `resolution` for
    /// its host and `record` in the audit log, atomically. Otherwise
    /// records nothing and says why (the caller audits the refusal).
    async fn decide(
        &self,
        record: &DecisionRecord,
        resolution: &StreamResolution,
    ) -> Result<Result<(), Refusal>, Error>;

    /// Records that `approver` opened request `id` (once per name, at most
    /// [`MAX_SEEN`] names).
    async fn seen(
        &self,
        id: &str,
        approver: &ApproverIdentity,
    ) -> Result<Result<(), Refusal>, Error>;

    /// Closes request `id` for `reason` if it is pending, with `note` for
    /// its host. [`CloseReason::Expired`] only once its deadline passed
    /// (give or take [`EXPIRY_TOLERANCE`]); [`CloseReason::HostGone`] and
    /// [`CloseReason::Cancelled`] only while its host is attached to this
    /// instance (a host that re-attached elsewhere is not withdrawn by the
    /// old link). Returns whether it closed it.
    async fn close(&self, id: &str, reason: CloseReason, note: Option<&str>)
    -> Result<bool, Error>;

    /// Leaves requests `ids` pending without a host link (this instance
    /// is going away), for their hosts to re-attach within
    /// [`REATTACH_GRACE`] (or the store's own grace).
    async fn detach(&self, ids: &[String]) -> Result<(), Error>;

    /// Finds the request `host` submitted as `host_request_id` with this
    /// identity and point, pending or decided and within its deadline
    /// (the newest, if several), and attaches it to this instance. A
    /// decided request found once may be found again or not: a
    /// [`MemoryStore`](memory::MemoryStore) hands its decision out once, a
    /// shared store may hand it out again to a host whose instance died
    /// right after.
    async fn reattach(
        &self,
        host: &str,
        host_request_id: &str,
        context_identity: Option<&str>,
        point: InterceptionPoint,
    ) -> Result<Option<ReattachFound>, Error>;

    /// Where request `id` stands; `None` if the store never had it (or
    /// forgot it).
    async fn state(&self, id: &str) -> Result<Option<StoredState>, Error>;

    /// Every pending request, oldest first.
    async fn pending(&self) -> Result<Vec<StoredRequest>, Error>;

    /// Adds a refused or forbidden decision to the audit log.
    async fn audit(&self, record: &DecisionRecord) -> Result<(), Error>;

    /// The audit log, newest first, as `query` selects it.
    async fn history(&self, query: &HistoryQuery) -> Result<Vec<DecisionRecord>, Error>;

    /// Every change from now on that this instance's queue did not make
    /// through this store itself: another instance's, or the store's own
    /// housekeeping (a re-attach grace or a deadline running out). A store
    /// may announce the queue's own changes too (PostgreSQL's
    /// notifications reach every instance, this one included); the queue
    /// finds them applied already.
    fn subscribe(&self) -> broadcast::Receiver<StoreChange>;
}
