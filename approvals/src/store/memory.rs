//! [`MemoryStore`]: an [`ApprovalStore`] in this process's memory, the
//! store of an embedded queue
//! ([`ApprovalQueue::new`](crate::ApprovalQueue::new)).
//!
//! It keeps the rules a shared store keeps, for one instance: the first
//! decision within the deadline wins, closes follow
//! [`ApprovalStore::close`]'s rules, a detached request waits
//! [`REATTACH_GRACE`] for its host to re-attach it and is then closed as
//! [`CloseReason::HostGone`] (a timer: the one change it announces, since
//! every other change is its queue's own), and a decision taken while the
//! host was away is kept for the host to collect, once, on re-attach
//! until the deadline.
//!
//! Everything is a map behind a mutex: every future it returns is ready
//! at once ([`ApprovalStore::answers_at_once`]), so its queue applies
//! every write in the caller. What it remembers is bounded: the newest
//! 10 000 decided or closed requests (without their contexts) and the
//! newest 10 000 audit entries.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalRequest, StreamResolution};
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::{
    ApprovalStore, EXPIRY_TOLERANCE, MAX_SEEN, REATTACH_GRACE, ReattachFound, StoreChange,
    StoredRequest, StoredState,
};
use crate::error::{Error, Refusal};
use crate::events::{ApproverIdentity, CloseReason, DecisionRecord, HistoryQuery};

/// How many decided or closed requests the store remembers, to say why a
/// late call is refused and to hand a decision to a host re-attaching.
const FINISHED_MEMORY: usize = 10_000;

/// How many audit entries the store keeps (oldest dropped first).
const HISTORY_MEMORY: usize = 10_000;

/// Capacity of the change feed (only re-attach graces running out).
const CHANGE_CAPACITY: usize = 1024;

/// The store of one process's queue. See the module docs.
#[derive(Debug)]
pub struct MemoryStore {
    instance: String,
    grace: Duration,
    next: AtomicU64,
    book: Arc<Mutex<Book>>,
    changes: broadcast::Sender<StoreChange>,
}

/// Everything the store holds.
#[derive(Debug, Default)]
struct Book {
    /// Insertion order, for [`ApprovalStore::pending`].
    seq: u64,
    requests: HashMap<String, Record>,
    /// Host -> host request id -> queue ids, oldest first: what
    /// [`ApprovalStore::reattach`] looks up.
    by_host: HashMap<String, HashMap<String, Vec<String>>>,
    /// Decided or closed requests, oldest first, forgotten past
    /// [`FINISHED_MEMORY`].
    finished: VecDeque<String>,
    /// The audit log, oldest first.
    history: VecDeque<DecisionRecord>,
}

#[derive(Debug)]
struct Record {
    seq: u64,
    host: String,
    host_request_id: String,
    context_identity: Option<String>,
    point: InterceptionPoint,
    deadline: Instant,
    phase: Phase,
}

#[derive(Debug)]
enum Phase {
    Pending(Box<Waiting>),
    Decided {
        resolution: Box<StreamResolution>,
        approver: ApproverIdentity,
        /// Handed to a re-attaching host already.
        collected: bool,
    },
    Closed {
        reason: CloseReason,
        note: Option<String>,
    },
}

#[derive(Debug)]
struct Waiting {
    request: ApprovalRequest,
    seen_by: Vec<ApproverIdentity>,
    /// Whether its host's link is attached (to this, the only instance).
    attached: bool,
    /// Since when its host has been away.
    away_since: Option<Instant>,
}

impl MemoryStore {
    /// An empty store for instance `instance`, whose detached requests
    /// wait [`REATTACH_GRACE`].
    pub fn new(instance: impl Into<String>) -> Self {
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        Self {
            instance: instance.into(),
            grace: REATTACH_GRACE,
            next: AtomicU64::new(0),
            book: Arc::default(),
            changes,
        }
    }

    /// The same store with detached requests waiting `grace` instead.
    pub fn reattach_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        lock(&self.book)
    }

    /// Closes, after the grace, whichever of `ids` is still away by then.
    fn withdraw_after_grace(&self, ids: Vec<String>) {
        // Without a runtime there is no timer: the requests then wait for
        // their host or their deadline.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let book = Arc::downgrade(&self.book);
        let changes = self.changes.clone();
        let grace = self.grace;
        runtime.spawn(async move {
            tokio::time::sleep(grace).await;
            withdraw_abandoned(&book, &changes, grace, &ids);
        });
    }
}

/// A poisoned lock is taken as is: every update leaves the maps
/// consistent (each is a single insert, remove or assignment).
fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(PoisonError::into_inner)
}

fn withdraw_abandoned(
    book: &Weak<Mutex<Book>>,
    changes: &broadcast::Sender<StoreChange>,
    grace: Duration,
    ids: &[String],
) {
    let Some(book) = book.upgrade() else { return };
    let now = Instant::now();
    let mut book = lock(&book);
    for id in ids {
        let abandoned = book.requests.get(id).is_some_and(|r| {
            matches!(&r.phase, Phase::Pending(w)
                if !w.attached && w.away_since.is_some_and(|t| t + grace <= now))
        });
        if abandoned {
            book.finish(
                id,
                Phase::Closed {
                    reason: CloseReason::HostGone,
                    note: None,
                },
            );
            tracing::info!(%id, "approval closed: its host did not come back");
            let _ = changes.send(StoreChange::Request(id.clone()));
        }
    }
}

impl Book {
    /// Ends a request's wait with `phase` and forgets the oldest finished
    /// ones beyond [`FINISHED_MEMORY`].
    fn finish(&mut self, id: &str, phase: Phase) {
        let Some(record) = self.requests.get_mut(id) else {
            return;
        };
        record.phase = phase;
        self.finished.push_back(id.to_owned());
        while self.finished.len() > FINISHED_MEMORY {
            if let Some(old) = self.finished.pop_front() {
                self.forget(&old);
            }
        }
    }

    fn forget(&mut self, id: &str) {
        let Some(record) = self.requests.remove(id) else {
            return;
        };
        if let Some(ids) = self.by_host.get_mut(&record.host) {
            if let Some(same) = ids.get_mut(&record.host_request_id) {
                same.retain(|i| i != id);
                if same.is_empty() {
                    ids.remove(&record.host_request_id);
                }
            }
            if ids.is_empty() {
                self.by_host.remove(&record.host);
            }
        }
    }

    fn audit(&mut self, record: DecisionRecord) {
        self.history.push_back(record);
        while self.history.len() > HISTORY_MEMORY {
            self.history.pop_front();
        }
    }
}

impl Record {
    /// Why a decision or notice on it is refused, if it is.
    fn refusal(&self, now: Instant) -> Option<Refusal> {
        match &self.phase {
            Phase::Pending(_) if self.deadline > now => None,
            Phase::Pending(_) => Some(Refusal::Expired),
            Phase::Decided { .. } => Some(Refusal::AlreadyResolved),
            Phase::Closed { reason, .. } => Some(Refusal::from(*reason)),
        }
    }

    fn stored(&self, id: &str, waiting: &Waiting, now: Instant) -> StoredRequest {
        StoredRequest {
            id: id.to_owned(),
            host: self.host.clone(),
            host_request_id: self.host_request_id.clone(),
            request: waiting.request.clone(),
            remaining: self.deadline.saturating_duration_since(now),
            seen_by: waiting.seen_by.clone(),
        }
    }
}

#[async_trait::async_trait]
impl ApprovalStore for MemoryStore {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn is_shared(&self) -> bool {
        false
    }

    fn answers_at_once(&self) -> bool {
        true
    }

    fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("q-{n}")
    }

    async fn insert(&self, request: StoredRequest) -> Result<(), Error> {
        let mut book = self.book();
        if book.requests.contains_key(&request.id) {
            return Err(Error::Store(
                format!("approval request {} is stored already", request.id).into(),
            ));
        }
        book.seq += 1;
        let record = Record {
            seq: book.seq,
            context_identity: request.request.context_identity.clone(),
            point: request.request.interception_point,
            deadline: Instant::now() + request.remaining,
            phase: Phase::Pending(Box::new(Waiting {
                request: request.request,
                seen_by: request.seen_by,
                attached: true,
                away_since: None,
            })),
            host: request.host,
            host_request_id: request.host_request_id,
        };
        book.by_host
            .entry(record.host.clone())
            .or_default()
            .entry(record.host_request_id.clone())
            .or_default()
            .push(request.id.clone());
        book.requests.insert(request.id, record);
        Ok(())
    }

    async fn decide(
        &self,
        record: &DecisionRecord,
        resolution: &StreamResolution,
    ) -> Result<Result<(), Refusal>, Error> {
        let mut book = self.book();
        let id = record.request_id.as_str();
        let refusal = match book.requests.get(id) {
            None => Some(Refusal::UnknownRequest),
            Some(r) => r.refusal(Instant::now()),
        };
        if let Some(refusal) = refusal {
            return Ok(Err(refusal));
        }
        book.finish(
            id,
            Phase::Decided {
                resolution: Box::new(resolution.clone()),
                approver: record.approver.clone(),
                collected: false,
            },
        );
        book.audit(record.clone());
        Ok(Ok(()))
    }

    async fn seen(
        &self,
        id: &str,
        approver: &ApproverIdentity,
    ) -> Result<Result<(), Refusal>, Error> {
        let mut book = self.book();
        let Some(record) = book.requests.get_mut(id) else {
            return Ok(Err(Refusal::UnknownRequest));
        };
        match &mut record.phase {
            Phase::Pending(waiting) => {
                if waiting.seen_by.len() < MAX_SEEN
                    && !waiting.seen_by.iter().any(|a| a.name() == approver.name())
                {
                    waiting.seen_by.push(approver.clone());
                }
                Ok(Ok(()))
            }
            Phase::Decided { .. } => Ok(Err(Refusal::AlreadyResolved)),
            Phase::Closed { reason, .. } => Ok(Err(Refusal::from(*reason))),
        }
    }

    async fn close(
        &self,
        id: &str,
        reason: CloseReason,
        note: Option<&str>,
    ) -> Result<bool, Error> {
        let mut book = self.book();
        let closable = book.requests.get(id).is_some_and(|r| match &r.phase {
            Phase::Pending(waiting) => match reason {
                CloseReason::Expired => r.deadline <= Instant::now() + EXPIRY_TOLERANCE,
                CloseReason::Failed => true,
                CloseReason::Cancelled | CloseReason::HostGone => waiting.attached,
            },
            _ => false,
        });
        if closable {
            book.finish(
                id,
                Phase::Closed {
                    reason,
                    note: note.map(str::to_owned),
                },
            );
        }
        Ok(closable)
    }

    async fn detach(&self, ids: &[String]) -> Result<(), Error> {
        let now = Instant::now();
        let mut away = Vec::with_capacity(ids.len());
        {
            let mut book = self.book();
            for id in ids {
                if let Some(Phase::Pending(waiting)) =
                    book.requests.get_mut(id).map(|r| &mut r.phase)
                    && waiting.attached
                {
                    waiting.attached = false;
                    waiting.away_since = Some(now);
                    away.push(id.clone());
                }
            }
        }
        if !away.is_empty() {
            self.withdraw_after_grace(away);
        }
        Ok(())
    }

    async fn reattach(
        &self,
        host: &str,
        host_request_id: &str,
        context_identity: Option<&str>,
        point: InterceptionPoint,
    ) -> Result<Option<ReattachFound>, Error> {
        let now = Instant::now();
        let mut guard = self.book();
        let book = &mut *guard;
        let Some(ids) = book.by_host.get(host).and_then(|m| m.get(host_request_id)) else {
            return Ok(None);
        };
        for id in ids.iter().rev() {
            let Some(record) = book.requests.get_mut(id) else {
                continue;
            };
            if record.context_identity.as_deref() != context_identity
                || record.point != point
                || record.deadline <= now
            {
                continue;
            }
            let remaining = record.deadline.saturating_duration_since(now);
            match &mut record.phase {
                Phase::Pending(waiting) => {
                    waiting.attached = true;
                    waiting.away_since = None;
                    let row = record_view(id, record, now);
                    return Ok(row.map(ReattachFound::Pending));
                }
                Phase::Decided {
                    resolution,
                    collected,
                    ..
                } if !*collected => {
                    *collected = true;
                    return Ok(Some(ReattachFound::Decided {
                        id: id.clone(),
                        resolution: (**resolution).clone(),
                        remaining,
                    }));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    async fn state(&self, id: &str) -> Result<Option<StoredState>, Error> {
        let book = self.book();
        let Some(record) = book.requests.get(id) else {
            return Ok(None);
        };
        Ok(Some(match &record.phase {
            Phase::Pending(waiting) => StoredState::Pending {
                request: record.stored(id, waiting, Instant::now()),
                host_instance: waiting.attached.then(|| self.instance.clone()),
            },
            Phase::Decided {
                resolution,
                approver,
                ..
            } => StoredState::Decided {
                id: id.to_owned(),
                resolution: (**resolution).clone(),
                approver: approver.clone(),
            },
            Phase::Closed { reason, note } => StoredState::Closed {
                id: id.to_owned(),
                host_request_id: record.host_request_id.clone(),
                reason: *reason,
                note: note.clone(),
            },
        }))
    }

    async fn pending(&self) -> Result<Vec<StoredRequest>, Error> {
        let now = Instant::now();
        let book = self.book();
        let mut waiting: Vec<(&String, &Record)> = book
            .requests
            .iter()
            .filter(|(_, r)| matches!(r.phase, Phase::Pending(_)))
            .collect();
        waiting.sort_by_key(|(_, r)| r.seq);
        Ok(waiting
            .into_iter()
            .filter_map(|(id, r)| record_view(id, r, now))
            .collect())
    }

    async fn audit(&self, record: &DecisionRecord) -> Result<(), Error> {
        self.book().audit(record.clone());
        Ok(())
    }

    async fn history(&self, query: &HistoryQuery) -> Result<Vec<DecisionRecord>, Error> {
        Ok(self
            .book()
            .history
            .iter()
            .rev()
            .filter(|r| query.matches(r))
            .take(query.limit)
            .cloned()
            .collect())
    }

    fn subscribe(&self) -> broadcast::Receiver<StoreChange> {
        self.changes.subscribe()
    }
}

/// A pending record as the queue reads it; `None` if it is not pending.
fn record_view(id: &str, record: &Record, now: Instant) -> Option<StoredRequest> {
    match &record.phase {
        Phase::Pending(waiting) => Some(record.stored(id, waiting, now)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::contract;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_memory_store_keeps_the_store_contract() {
        contract::check(|settings: contract::Settings| async move {
            Arc::new(MemoryStore::new(settings.instance).reattach_grace(settings.reattach_grace))
                as Arc<dyn ApprovalStore>
        })
        .await;
    }

    #[tokio::test]
    async fn its_futures_are_ready_at_once() {
        use std::task::{Context, Poll, Waker};
        let store = MemoryStore::new("m");
        let mut cx = Context::from_waker(Waker::noop());
        let mut pending = store.pending();
        assert!(matches!(
            pending.as_mut().poll(&mut cx),
            Poll::Ready(Ok(rows)) if rows.is_empty()
        ));
        assert!(store.answers_at_once() && !store.is_shared());
    }

    #[tokio::test]
    async fn what_it_remembers_is_bounded() {
        let store = MemoryStore::new("m");
        let request = contract::request(1);
        for n in 0..FINISHED_MEMORY + 10 {
            let id = format!("q-{n}");
            store
                .insert(StoredRequest {
                    id: id.clone(),
                    host: "h".into(),
                    host_request_id: format!("r-{n}"),
                    request: request.clone(),
                    remaining: Duration::from_secs(60),
                    seen_by: Vec::new(),
                })
                .await
                .unwrap();
            assert!(store.close(&id, CloseReason::Failed, None).await.unwrap());
        }
        let book = store.book();
        assert_eq!(book.requests.len(), FINISHED_MEMORY);
        assert_eq!(book.by_host["h"].len(), FINISHED_MEMORY);
        assert!(!book.requests.contains_key("q-0"));
    }
}
