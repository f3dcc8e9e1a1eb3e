//! The contract every [`ApprovalStore`] keeps, as checks a store's own
//! tests run: [`check`] opens fresh stores through a function the test
//! gives and panics on the first rule one breaks. `MemoryStore`'s unit
//! tests and `hookwire-approvals-postgres`'s tests (on a throwaway
//! PostgreSQL) both run it, so the embedded and the shared queue rest on
//! the same rules.
//!
//! Compiled for this crate's tests and with the `store-contract` feature.
//! The checks run on the real clock (a database measures deadlines on its
//! own), with deadlines and graces of a second or less.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hookwire::approval::{ApprovalRequest, ApprovalResolution, StreamResolution};
use hookwire::{AgentContext, InterceptionPoint, Verdict};

use super::{ApprovalStore, ReattachFound, StoreChange, StoredRequest, StoredState};
use crate::error::Refusal;
use crate::events::{
    Acceptance, ApproverIdentity, CloseReason, DecisionOutcome, DecisionRecord, DecisionSubject,
    HistoryQuery,
};

/// How a check wants its fresh store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The instance's name.
    pub instance: String,
    /// How long a detached request waits for its host.
    pub reattach_grace: Duration,
}

/// A deadline no check reaches.
const LONG: Duration = Duration::from_secs(600);

/// How long a change the store announces may take to arrive.
const PATIENCE: Duration = Duration::from_secs(10);

/// The re-attach grace of the check that waits one out.
const SHORT_GRACE: Duration = Duration::from_secs(1);

/// Runs every check, each on a fresh store from `open`.
pub async fn check<F, Fut>(mut open: F)
where
    F: FnMut(Settings) -> Fut,
    Fut: Future<Output = Arc<dyn ApprovalStore>>,
{
    let mut fresh = |grace: Duration| {
        open(Settings {
            instance: "contract".to_owned(),
            reattach_grace: grace,
        })
    };
    requests_read_back_as_inserted(&*fresh(LONG).await).await;
    the_first_decision_wins_and_is_audited(&*fresh(LONG).await).await;
    late_calls_are_refused_with_the_reason(&*fresh(LONG).await).await;
    closes_keep_their_rules(&*fresh(LONG).await).await;
    viewers_are_recorded_once_each(&*fresh(LONG).await).await;
    away_requests_are_reattached_or_withdrawn_after_the_grace(&*fresh(SHORT_GRACE).await).await;
    the_audit_log_reads_newest_first_as_selected(&*fresh(LONG).await).await;
}

/// A pre-tool-call approval request, distinct for each `n` (its
/// identity, session and arguments).
pub fn request(n: u64) -> ApprovalRequest {
    let ctx = AgentContext::from_json(serde_json::json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "pre_tool_call",
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": n,
        "agent": {"id": "a", "framework": "hookwire"},
        "session": {"id": format!("s-{n}")},
        "tool_call": {"id": "tc", "name": "wire_transfer", "args": {"amount": n}},
    }))
    .expect("a valid context");
    ApprovalRequest {
        context_identity: Some(format!("sha256:{n}")),
        interception_point: InterceptionPoint::PreToolCall,
        verdict: Verdict::escalate("big_transfer"),
        context: ctx,
    }
}

/// Inserts request `n` of host `billing` as `host_request_id`.
async fn insert(
    store: &dyn ApprovalStore,
    host_request_id: &str,
    n: u64,
    remaining: Duration,
) -> StoredRequest {
    let row = StoredRequest {
        id: store.next_id(),
        host: "billing".to_owned(),
        host_request_id: host_request_id.to_owned(),
        request: request(n),
        remaining,
        seen_by: Vec::new(),
    };
    store.insert(row.clone()).await.expect("inserted");
    row
}

fn who(name: &str) -> ApproverIdentity {
    ApproverIdentity::in_process(name)
}

/// Now, to the microsecond (what a database keeps).
fn now() -> SystemTime {
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_micros(u64::try_from(d.as_micros()).unwrap_or(0))
}

/// `approver`'s approval of `row` (or of an unknown id, without a row),
/// as the queue would record and deliver it.
fn approval(
    id: &str,
    row: Option<&StoredRequest>,
    approver: &str,
    acceptance: Acceptance,
    decided_at: SystemTime,
) -> (DecisionRecord, StreamResolution) {
    let resolution = ApprovalResolution::approve(&request(1), Verdict::allow());
    let record = DecisionRecord {
        request_id: id.to_owned(),
        subject: row.map(|r| DecisionSubject::of(&r.to_pending(), &r.host_request_id)),
        approver: who(approver),
        instance: "contract".to_owned(),
        decided_at,
        outcome: DecisionOutcome::of(&resolution),
        note: Some(format!("note of {approver}")),
        acceptance,
    };
    let delivered = StreamResolution {
        request_id: row.map(|r| r.host_request_id.clone()).unwrap_or_default(),
        approver: approver.to_owned(),
        resolution,
    };
    (record, delivered)
}

async fn state(store: &dyn ApprovalStore, id: &str) -> Option<StoredState> {
    store.state(id).await.expect("state read")
}

async fn history(store: &dyn ApprovalStore, query: HistoryQuery) -> Vec<DecisionRecord> {
    store.history(&query).await.expect("history read")
}

fn about(id: &str) -> HistoryQuery {
    HistoryQuery {
        request_id: Some(id.to_owned()),
        ..HistoryQuery::default()
    }
}

async fn requests_read_back_as_inserted(store: &dyn ApprovalStore) {
    let ids: HashSet<String> = (0..100).map(|_| store.next_id()).collect();
    assert_eq!(ids.len(), 100, "next_id repeats itself");
    let a = insert(store, "r1", 1, LONG).await;
    let b = insert(store, "r2", 2, LONG).await;
    let pending = store.pending().await.expect("pending read");
    assert_eq!(
        pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str(), b.id.as_str()],
        "pending, oldest first"
    );
    for (got, want) in pending.iter().zip([&a, &b]) {
        assert_eq!(
            (&got.host, &got.host_request_id, &got.request, &got.seen_by),
            (
                &want.host,
                &want.host_request_id,
                &want.request,
                &want.seen_by
            )
        );
        assert!(
            got.remaining <= want.remaining
                && got.remaining > want.remaining - Duration::from_secs(5),
            "remaining {:?} of {:?}",
            got.remaining,
            want.remaining
        );
    }
    match state(store, &a.id).await {
        Some(StoredState::Pending {
            request,
            host_instance,
        }) => {
            assert_eq!(request.id, a.id);
            assert_eq!(host_instance.as_deref(), Some(store.instance()));
        }
        other => panic!("{} should be pending here, is {other:?}", a.id),
    }
    assert_eq!(state(store, "no-such-request").await, None);
}

async fn the_first_decision_wins_and_is_audited(store: &dyn ApprovalStore) {
    let a = insert(store, "r1", 1, LONG).await;
    let (ann, to_host) = approval(&a.id, Some(&a), "ann", Acceptance::Accepted, now());
    let (bob, late) = approval(&a.id, Some(&a), "bob", Acceptance::Accepted, now());
    assert_eq!(store.decide(&ann, &to_host).await.unwrap(), Ok(()));
    assert_eq!(
        store.decide(&bob, &late).await.unwrap(),
        Err(Refusal::AlreadyResolved)
    );
    let (nobody, unknown) = approval("no-such-request", None, "bob", Acceptance::Accepted, now());
    assert_eq!(
        store.decide(&nobody, &unknown).await.unwrap(),
        Err(Refusal::UnknownRequest)
    );
    assert_eq!(
        state(store, &a.id).await,
        Some(StoredState::Decided {
            id: a.id.clone(),
            resolution: to_host,
            approver: who("ann"),
        })
    );
    // The winner is audited with the decision; a refusal when the caller
    // audits it.
    assert_eq!(
        history(store, about(&a.id)).await,
        std::slice::from_ref(&ann)
    );
    let refused = DecisionRecord {
        acceptance: Acceptance::Refused(Refusal::AlreadyResolved),
        ..bob
    };
    store.audit(&refused).await.unwrap();
    assert_eq!(history(store, about(&a.id)).await, [refused, ann]);
}

async fn late_calls_are_refused_with_the_reason(store: &dyn ApprovalStore) {
    let short = insert(store, "r1", 1, Duration::from_millis(300)).await;
    let cancelled = insert(store, "r2", 2, LONG).await;
    let failed = insert(store, "r3", 3, LONG).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let decide = |row: &StoredRequest| {
        let (record, resolution) = approval(&row.id, Some(row), "ann", Acceptance::Accepted, now());
        async move { store.decide(&record, &resolution).await.unwrap() }
    };
    assert_eq!(decide(&short).await, Err(Refusal::Expired));
    // Closed by this call, or by the store's own housekeeping already.
    store
        .close(&short.id, CloseReason::Expired, None)
        .await
        .unwrap();
    assert!(matches!(
        state(store, &short.id).await,
        Some(StoredState::Closed {
            reason: CloseReason::Expired,
            ..
        })
    ));
    assert_eq!(decide(&short).await, Err(Refusal::Expired));
    assert_eq!(
        store.seen(&short.id, &who("ann")).await.unwrap(),
        Err(Refusal::Expired)
    );

    assert!(
        store
            .close(&cancelled.id, CloseReason::Cancelled, None)
            .await
            .unwrap()
    );
    assert_eq!(decide(&cancelled).await, Err(Refusal::Withdrawn));
    assert_eq!(
        store.seen(&cancelled.id, &who("ann")).await.unwrap(),
        Err(Refusal::Withdrawn)
    );

    assert!(
        store
            .close(&failed.id, CloseReason::Failed, Some("ticket system down"))
            .await
            .unwrap()
    );
    assert_eq!(
        state(store, &failed.id).await,
        Some(StoredState::Closed {
            id: failed.id.clone(),
            host_request_id: "r3".to_owned(),
            reason: CloseReason::Failed,
            note: Some("ticket system down".to_owned()),
        })
    );
    assert!(
        !store
            .close(&failed.id, CloseReason::Failed, None)
            .await
            .unwrap(),
        "closed once"
    );
    assert_eq!(decide(&failed).await, Err(Refusal::Withdrawn));
}

async fn closes_keep_their_rules(store: &dyn ApprovalStore) {
    let a = insert(store, "r1", 1, LONG).await;
    assert!(
        !store
            .close(&a.id, CloseReason::Expired, None)
            .await
            .unwrap(),
        "not expired before its deadline"
    );
    store.detach(std::slice::from_ref(&a.id)).await.unwrap();
    assert!(matches!(
        state(store, &a.id).await,
        Some(StoredState::Pending {
            host_instance: None,
            ..
        })
    ));
    for reason in [CloseReason::Cancelled, CloseReason::HostGone] {
        assert!(
            !store.close(&a.id, reason, None).await.unwrap(),
            "{reason:?} only while its host is attached here"
        );
    }
    assert!(store.close(&a.id, CloseReason::Failed, None).await.unwrap());
    assert!(
        !store
            .close("no-such-request", CloseReason::Failed, None)
            .await
            .unwrap()
    );
}

async fn viewers_are_recorded_once_each(store: &dyn ApprovalStore) {
    let a = insert(store, "r1", 1, LONG).await;
    let web = ApproverIdentity::verified("bob", crate::events::AuthMethod::WebSession);
    for approver in [who("ann"), who("ann"), web.clone()] {
        assert_eq!(store.seen(&a.id, &approver).await.unwrap(), Ok(()));
    }
    match state(store, &a.id).await {
        Some(StoredState::Pending { request, .. }) => {
            assert_eq!(request.seen_by, [who("ann"), web]);
        }
        other => panic!("{} should be pending, is {other:?}", a.id),
    }
    assert_eq!(
        store.seen("no-such-request", &who("ann")).await.unwrap(),
        Err(Refusal::UnknownRequest)
    );
    let (record, resolution) = approval(&a.id, Some(&a), "ann", Acceptance::Accepted, now());
    store.decide(&record, &resolution).await.unwrap().unwrap();
    assert_eq!(
        store.seen(&a.id, &who("cy")).await.unwrap(),
        Err(Refusal::AlreadyResolved)
    );
}

async fn away_requests_are_reattached_or_withdrawn_after_the_grace(store: &dyn ApprovalStore) {
    let mut changes = store.subscribe();
    let back = insert(store, "r1", 1, LONG).await;
    let decided = insert(store, "r2", 2, LONG).await;
    let abandoned = insert(store, "r3", 3, LONG).await;
    let ids = [back.id.clone(), decided.id.clone(), abandoned.id.clone()];
    store.detach(&ids).await.unwrap();
    assert!(matches!(
        state(store, &back.id).await,
        Some(StoredState::Pending {
            host_instance: None,
            ..
        })
    ));

    let identity = |n: u64| request(n).context_identity;
    let point = InterceptionPoint::PreToolCall;
    let reattach = |host: &'static str, host_request_id: &'static str, n: u64| async move {
        store
            .reattach(host, host_request_id, identity(n).as_deref(), point)
            .await
            .expect("reattach answered")
    };
    assert_eq!(reattach("billing", "r1", 9).await, None, "another request");
    assert_eq!(
        reattach("someone-else", "r1", 1).await,
        None,
        "another host"
    );
    match reattach("billing", "r1", 1).await {
        Some(ReattachFound::Pending(row)) => {
            assert_eq!(
                (row.id.as_str(), &row.request),
                (back.id.as_str(), &back.request)
            );
            assert!(row.remaining <= LONG && row.remaining > LONG - Duration::from_secs(5));
        }
        other => panic!("r1 should be re-attached pending, is {other:?}"),
    }
    assert!(matches!(
        state(store, &back.id).await,
        Some(StoredState::Pending { host_instance: Some(i), .. }) if i == store.instance()
    ));

    // Decided while its host was away: the decision is handed over.
    let (record, resolution) = approval(
        &decided.id,
        Some(&decided),
        "ann",
        Acceptance::Accepted,
        now(),
    );
    store.decide(&record, &resolution).await.unwrap().unwrap();
    match reattach("billing", "r2", 2).await {
        Some(ReattachFound::Decided {
            id,
            resolution: got,
            remaining,
        }) => {
            assert_eq!((id, got), (decided.id.clone(), resolution));
            assert!(remaining > LONG - Duration::from_secs(5));
        }
        other => panic!("r2 should be found decided, is {other:?}"),
    }

    // Never taken back: withdrawn once the grace is over, and announced.
    tokio::time::timeout(PATIENCE, async {
        loop {
            match changes.recv().await {
                Ok(StoreChange::Request(id)) if id != abandoned.id => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the change feed ended: {e}"),
            }
            if let Some(StoredState::Closed { reason, .. }) = state(store, &abandoned.id).await {
                assert_eq!(reason, CloseReason::HostGone);
                return;
            }
        }
    })
    .await
    .expect("the abandoned request withdrawn and announced in time");
    assert!(
        matches!(
            state(store, &back.id).await,
            Some(StoredState::Pending { .. })
        ),
        "a re-attached request is not withdrawn"
    );
}

async fn the_audit_log_reads_newest_first_as_selected(store: &dyn ApprovalStore) {
    let a = insert(store, "r1", 1, LONG).await;
    let b = insert(store, "r2", 2, LONG).await;
    let start = now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let refused = Acceptance::Refused(Refusal::AlreadyResolved);
    let entries = [
        approval(&a.id, Some(&a), "ann", Acceptance::Forbidden, at(1)).0,
        approval(&a.id, Some(&a), "bob", refused, at(2)).0,
        approval(&b.id, Some(&b), "ann", refused, at(3)).0,
        approval(
            "no-such-request",
            None,
            "eve",
            Acceptance::Refused(Refusal::UnknownRequest),
            at(4),
        )
        .0,
    ];
    for entry in &entries {
        store.audit(entry).await.unwrap();
    }
    let [first, second, third, fourth] = entries;
    assert_eq!(
        history(store, HistoryQuery::latest(10)).await,
        [fourth.clone(), third.clone(), second.clone(), first.clone()]
    );
    assert_eq!(
        history(store, HistoryQuery::latest(2)).await,
        [fourth, third.clone()]
    );
    let anns = HistoryQuery {
        approver: Some("ann".to_owned()),
        ..HistoryQuery::default()
    };
    assert_eq!(history(store, anns).await, [third.clone(), first.clone()]);
    assert_eq!(
        history(store, about(&a.id)).await,
        [second.clone(), first.clone()]
    );
    let older = HistoryQuery {
        before: Some(third.decided_at),
        ..HistoryQuery::default()
    };
    assert_eq!(history(store, older).await, [second, first]);
}
