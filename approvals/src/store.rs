//! Where an approval queue keeps what several service instances must
//! share: the [`ApprovalStore`] trait.
//!
//! A queue made with [`ApprovalQueue::new`](super::ApprovalQueue::new) is
//! embedded: its own memory is the store, and it serves one process (a
//! demo, tests, a laptop). A queue made with
//! [`ApprovalQueue::shared`](super::ApprovalQueue::shared) keeps the
//! requests, decisions and audit log in an `ApprovalStore` (PostgreSQL:
//! the `hookwire-approvals-postgres` crate) and its memory only mirrors
//! the pending set for reading, so that several instances on one store
//! behave as one service:
//!
//! - a request goes into the store when its host submits it on any
//!   instance, and every instance's mirror picks it up from the store's
//!   change feed ([`ApprovalStore::subscribe`], pushed, not polled);
//! - a decision is taken by the store ([`ApprovalStore::decide`]) in one
//!   transaction that only succeeds while the request is pending and
//!   within its deadline, so the first decision wins across instances;
//!   the instance holding the host's link delivers it when the change
//!   reaches it;
//! - a request is closed in the store (expired, cancelled, host gone,
//!   failed) and every instance withdraws it from its approvers;
//! - requests whose instance went away are re-attached by their host on
//!   any instance ([`ApprovalStore::reattach`]), and those never taken
//!   back are withdrawn by the store's own housekeeping.
//!
//! The store never judges a decision's content, as the queue does not.

use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalRequest, StreamResolution};
use tokio::sync::broadcast;

use super::events::{ApproverIdentity, CloseReason, DecisionRecord, HistoryQuery, PendingApproval};
use crate::error::{Error, Refusal};

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

/// The shared state of the instances of one approval service. See the
/// module docs for what each operation must guarantee; every method is
/// called by the queue, never by front ends.
#[async_trait::async_trait]
pub trait ApprovalStore: std::fmt::Debug + Send + Sync + 'static {
    /// This instance's name, recorded with the decisions it takes and the
    /// requests whose hosts it holds.
    fn instance(&self) -> &str;

    /// A fresh queue id, unique across instances and restarts.
    fn next_id(&self) -> String;

    /// Records a request submitted by a host attached to this instance.
    async fn insert(&self, request: &StoredRequest) -> Result<(), Error>;

    /// Takes `record`'s decision if the request is pending and within its
    /// deadline (first wins across instances), keeping `resolution` for
    /// its host and `record` in the audit log, atomically. Otherwise
    /// records nothing and says why (the caller audits the refusal).
    async fn decide(
        &self,
        record: &DecisionRecord,
        resolution: &StreamResolution,
    ) -> Result<Result<(), Refusal>, Error>;

    /// Records that `approver` opened request `id` (once per name).
    async fn seen(
        &self,
        id: &str,
        approver: &ApproverIdentity,
    ) -> Result<Result<(), Refusal>, Error>;

    /// Closes request `id` for `reason` if it is pending, with `note` for
    /// its host. [`CloseReason::Expired`] only once its deadline passed;
    /// [`CloseReason::HostGone`] and [`CloseReason::Cancelled`] only while
    /// its host is attached to this instance (a host that re-attached
    /// elsewhere is not withdrawn by the old link). Returns whether it
    /// closed it.
    async fn close(&self, id: &str, reason: CloseReason, note: Option<&str>)
    -> Result<bool, Error>;

    /// Leaves requests `ids` pending without a host link (this instance
    /// is going away), for their hosts to re-attach elsewhere.
    async fn detach(&self, ids: &[String]) -> Result<(), Error>;

    /// Finds the request `host` submitted as `host_request_id` with this
    /// identity and point, pending or decided and within its deadline,
    /// and attaches it to this instance.
    async fn reattach(
        &self,
        host: &str,
        host_request_id: &str,
        context_identity: Option<&str>,
        point: InterceptionPoint,
    ) -> Result<Option<ReattachFound>, Error>;

    /// Where request `id` stands; `None` if the store never had it.
    async fn state(&self, id: &str) -> Result<Option<StoredState>, Error>;

    /// Every pending request, oldest first.
    async fn pending(&self) -> Result<Vec<StoredRequest>, Error>;

    /// Adds a refused or forbidden decision to the audit log.
    async fn audit(&self, record: &DecisionRecord) -> Result<(), Error>;

    /// The audit log, newest first, as `query` selects it.
    async fn history(&self, query: &HistoryQuery) -> Result<Vec<DecisionRecord>, Error>;

    /// Every change from now on, by any instance (this one included).
    fn subscribe(&self) -> broadcast::Receiver<StoreChange>;
}
