//! Several approval service instances on one real PostgreSQL database
//! (a throwaway cluster per test, see `hookwire_testkit::postgres`):
//! requests, decisions, withdrawals and the audit log shared through the
//! database, decisions pushed across instances by LISTEN/NOTIFY, the first
//! of two concurrent decisions winning, and a host re-attaching to a
//! surviving instance after its own was killed.

use std::sync::Arc;
use std::time::Duration;

use hookwire::Verdict;
use hookwire::approval::ApprovalResolution;
use hookwire_approvals::Error;
use hookwire_approvals::{
    Acceptance, ApprovalQueue, ApproverIdentity, CloseReason, DecisionOutcome, HistoryQuery,
    HostDelivery, QueueEvent, Refusal, Subscription,
};
use hookwire_approvals_postgres::{
    PostgresOptions, PostgresStore, SCHEMA_VERSION, migrate, shared_queue_with,
};
use hookwire_testkit::postgres::PgCluster;
use hookwire_testkit::{CrashableRuntime, approval_request as request};
use serde_json::json;

/// How long any cross-instance step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

fn cluster() -> PgCluster {
    PgCluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"))
}

/// Short lease and grace, so that the tests see them run out.
fn options() -> PostgresOptions {
    PostgresOptions {
        lease: Duration::from_millis(600),
        reattach_grace: Duration::from_millis(1500),
        ..PostgresOptions::default()
    }
}

async fn instance(url: &str, name: &str) -> ApprovalQueue {
    shared_queue_with(url, name, options())
        .await
        .unwrap_or_else(|e| panic!("instance {name}: {e}"))
}

fn who(name: &str) -> ApproverIdentity {
    ApproverIdentity::in_process(name)
}

fn refusal<T: std::fmt::Debug>(r: Result<T, Error>) -> Refusal {
    match r {
        Err(Error::Refused { refusal, .. }) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The next event of `sub` that `wanted` accepts.
async fn event(sub: &mut Subscription, wanted: impl Fn(&QueueEvent) -> bool) -> QueueEvent {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match sub.events.recv().await {
                Ok(e) if wanted(&e) => return e,
                Ok(_) => {}
                Err(e) => panic!("event feed: {e}"),
            }
        }
    })
    .await
    .expect("the event arrived in time")
}

async fn added(sub: &mut Subscription, id: &str) {
    event(sub, |e| matches!(e, QueueEvent::Added(p) if p.id == id)).await;
}

async fn delivery(
    deliveries: &mut tokio::sync::mpsc::UnboundedReceiver<HostDelivery>,
) -> HostDelivery {
    tokio::time::timeout(PATIENCE, deliveries.recv())
        .await
        .expect("a delivery in time")
        .expect("the link is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_versioned_and_idempotent() {
    let pg = cluster();
    let url = pg.create_database("migrations").unwrap();
    // Two instances starting together, then a third time by hand.
    let (a, b) = tokio::join!(
        PostgresStore::connect_with(&url, "a", options()),
        PostgresStore::connect_with(&url, "b", options()),
    );
    let (a, _b) = (a.unwrap(), b.unwrap());
    migrate(a.pool()).await.unwrap();
    let versions: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(a.pool())
            .await
            .unwrap();
    let every: Vec<(i64, bool)> = (1..=SCHEMA_VERSION).map(|v| (v, true)).collect();
    assert_eq!(versions, every);
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = 'public' AND table_name LIKE 'approval_%' ORDER BY 1",
    )
    .fetch_all(a.pool())
    .await
    .unwrap();
    let tables: Vec<&str> = tables.iter().map(|(t,)| t.as_str()).collect();
    assert_eq!(
        tables,
        [
            "approval_decisions",
            "approval_instances",
            "approval_requests"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_on_one_instance_gets_the_decision_an_approver_makes_on_another() {
    let pg = cluster();
    let url = pg.create_database("two").unwrap();
    let a = instance(&url, "a").await;
    let b = instance(&url, "b").await;
    let mut watching_b = b.subscribe();

    let (host, mut deliveries) = a.connect_host("billing-agent");
    let id = host
        .submit("r1", request(1), Duration::from_secs(60))
        .unwrap();
    added(&mut watching_b, &id).await;
    let seen_on_b = b.get(&id).expect("B mirrors the request");
    assert_eq!(seen_on_b.host, "billing-agent");
    assert_eq!(seen_on_b.request, request(1));
    assert!(seen_on_b.remaining() > Duration::from_secs(55));

    // Seen on B reaches the host on A.
    b.seen(&id, &who("ann")).await.unwrap();
    assert_eq!(
        delivery(&mut deliveries).await,
        HostDelivery::Seen {
            request_id: "r1".into(),
            approver: "ann".into()
        }
    );

    // Approve with edited arguments on B; the host on A receives it.
    let edited = ApprovalResolution::approve(
        &request(1),
        Verdict::transform("$target", json!({"amount": 1, "memo": "checked"})),
    );
    let record = b.resolve(&id, &who("ann"), edited.clone()).await.unwrap();
    assert_eq!(record.instance, "b");
    let HostDelivery::Resolution(got) = delivery(&mut deliveries).await else {
        panic!("expected the resolution");
    };
    assert_eq!(
        (got.request_id.as_str(), got.approver.as_str()),
        ("r1", "ann")
    );
    assert_eq!(got.resolution, edited);
    assert!(a.get(&id).is_none() && b.get(&id).is_none());

    // Audited in PostgreSQL, readable from any instance.
    let c = instance(&url, "c").await;
    let log = c.history(&HistoryQuery::latest(10)).await.unwrap();
    assert_eq!(log, std::slice::from_ref(&record));
    let entry = &log[0];
    assert_eq!(entry.approver.name(), "ann");
    assert_eq!(entry.acceptance, Acceptance::Accepted);
    assert_eq!(
        entry.outcome,
        DecisionOutcome::AllowEdited {
            path: "$target".into(),
            value: json!({"amount": 1, "memo": "checked"})
        }
    );
    let subject = entry.subject.as_ref().expect("the request identified");
    assert_eq!(
        (
            subject.host.as_str(),
            subject.host_request_id.as_str(),
            subject.context_identity.as_deref(),
            subject.tool_name.as_deref(),
        ),
        (
            "billing-agent",
            "r1",
            request(1).context_identity.as_deref(),
            Some("wire_transfer")
        )
    );
    // A late decision on A is refused, and audited too.
    let late = ApprovalResolution::approve(&request(1), Verdict::allow());
    assert_eq!(
        refusal(a.resolve(&id, &who("bob"), late).await),
        Refusal::AlreadyResolved
    );
    let log = c.history(&HistoryQuery::latest(10)).await.unwrap();
    assert_eq!(
        log.iter()
            .map(|r| (r.approver.name(), r.instance.as_str(), r.acceptance))
            .collect::<Vec<_>>(),
        [
            ("bob", "a", Acceptance::Refused(Refusal::AlreadyResolved)),
            ("ann", "b", Acceptance::Accepted)
        ]
    );
    let bobs = HistoryQuery {
        approver: Some("bob".into()),
        ..HistoryQuery::default()
    };
    assert_eq!(c.history(&bobs).await.unwrap().len(), 1);
    // An id this instance never showed its approvers is not decided, and
    // the attempt is audited.
    let r = ApprovalResolution::approve(&request(1), Verdict::allow());
    assert_eq!(
        refusal(c.resolve("q-0-404", &who("eve"), r).await),
        Refusal::UnknownRequest
    );
    let about = HistoryQuery {
        request_id: Some("q-0-404".into()),
        ..HistoryQuery::default()
    };
    let tried = c.history(&about).await.unwrap();
    assert_eq!(tried.len(), 1);
    assert_eq!(
        (
            tried[0].approver.name(),
            tried[0].acceptance,
            tried[0].subject.is_none()
        ),
        ("eve", Acceptance::Refused(Refusal::UnknownRequest), true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_approvers_deciding_at_once_on_two_instances_exactly_one_wins() {
    let pg = cluster();
    let url = pg.create_database("race").unwrap();
    let a = instance(&url, "a").await;
    let b = instance(&url, "b").await;
    let mut watching_b = b.subscribe();
    let (host, mut deliveries) = a.connect_host("billing-agent");
    const ROUNDS: u64 = 20;
    let mut ids = Vec::new();
    for n in 0..ROUNDS {
        let id = host
            .submit(format!("r{n}"), request(n), Duration::from_secs(60))
            .unwrap();
        added(&mut watching_b, &id).await;
        ids.push(id);
    }
    for (n, id) in ids.iter().enumerate() {
        let req = request(n as u64);
        let yes = ApprovalResolution::approve(&req, Verdict::allow());
        let no = ApprovalResolution::reject(&req, Verdict::deny("approval:rejected"));
        let (ann, bob) = (who("ann"), who("bob"));
        let (on_a, on_b) = tokio::join!(a.resolve(id, &ann, yes), b.resolve(id, &bob, no));
        let won = [on_a.is_ok(), on_b.is_ok()];
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "exactly one decision wins {id}: {on_a:?} / {on_b:?}"
        );
        let lost = if on_a.is_ok() { on_b } else { on_a };
        assert_eq!(refusal(lost), Refusal::AlreadyResolved);
    }
    // The host got exactly one resolution per request.
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        if let HostDelivery::Resolution(r) = delivery(&mut deliveries).await {
            answered.push(r.request_id);
        }
    }
    answered.sort();
    answered.dedup();
    assert_eq!(answered.len(), ids.len());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(deliveries.try_recv().is_err(), "no second resolution");
    // The audit log holds one winner and one refusal per request.
    let log = a.history(&HistoryQuery::latest(100)).await.unwrap();
    assert_eq!(log.len(), 2 * ids.len());
    for id in &ids {
        let mine: Vec<Acceptance> = log
            .iter()
            .filter(|r| &r.request_id == id)
            .map(|r| r.acceptance)
            .collect();
        assert_eq!(mine.len(), 2);
        assert!(mine.contains(&Acceptance::Accepted));
        assert!(mine.contains(&Acceptance::Refused(Refusal::AlreadyResolved)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawals_expiries_and_failures_reach_every_instance() {
    let pg = cluster();
    let url = pg.create_database("withdraw").unwrap();
    let a = instance(&url, "a").await;
    let b = instance(&url, "b").await;
    let mut watching_b = b.subscribe();
    let (host, mut deliveries) = a.connect_host("billing-agent");
    let gone = host
        .submit("r1", request(1), Duration::from_secs(60))
        .unwrap();
    let cancelled = host
        .submit("r2", request(2), Duration::from_secs(60))
        .unwrap();
    let expiring = host
        // Long enough that B sees it added first on a loaded machine.
        .submit("r3", request(3), Duration::from_secs(3))
        .unwrap();
    let failed = host
        .submit("r4", request(4), Duration::from_secs(60))
        .unwrap();
    for id in [&gone, &cancelled, &expiring, &failed] {
        added(&mut watching_b, id).await;
    }

    host.cancel("r2");
    let closed = |id: &str, why: CloseReason| {
        let id = id.to_owned();
        move |e: &QueueEvent| {
            *e == QueueEvent::Closed {
                id: id.clone(),
                reason: why,
            }
        }
    };
    event(&mut watching_b, closed(&cancelled, CloseReason::Cancelled)).await;
    event(&mut watching_b, closed(&expiring, CloseReason::Expired)).await;
    let r = ApprovalResolution::approve(&request(3), Verdict::allow());
    assert_eq!(
        refusal(b.resolve(&expiring, &who("ann"), r).await),
        Refusal::Expired
    );

    // Failed on B: the host on A is told at once.
    b.fail(&failed, "ticket system down").await.unwrap();
    let told = loop {
        if let HostDelivery::Failed { request_id, reason } = delivery(&mut deliveries).await {
            break (request_id, reason);
        }
    };
    assert_eq!(told, ("r4".to_owned(), "ticket system down".to_owned()));

    // The host's stream ends on A: withdrawn on B.
    drop(host);
    event(&mut watching_b, closed(&gone, CloseReason::HostGone)).await;
    let r = ApprovalResolution::approve(&request(1), Verdict::allow());
    assert_eq!(
        refusal(b.resolve(&gone, &who("ann"), r).await),
        Refusal::Withdrawn
    );
    assert!(a.is_empty() && b.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_instance_died_reattaches_on_another_with_its_deadline() {
    let pg = cluster();
    let url = pg.create_database("failover").unwrap();
    let b = instance(&url, "b").await;
    let mut watching_b = b.subscribe();

    let doomed = CrashableRuntime::new();
    let (a, link, old_deliveries, ids) = {
        let url = url.clone();
        doomed
            .run(async move {
                let a = instance(&url, "a").await;
                let (link, deliveries) = a.connect_host("billing-agent");
                let ids: Vec<String> = (1..=3)
                    .map(|n| {
                        link.submit(format!("r{n}"), request(n), Duration::from_secs(30))
                            .unwrap()
                    })
                    .collect();
                (a, link, deliveries, ids)
            })
            .await
    };
    for id in &ids {
        added(&mut watching_b, id).await;
    }
    let original = b.get(&ids[0]).unwrap().deadline;

    // Instance A dies with three requests pending; nothing of it runs
    // any more, not even the link's withdrawal.
    doomed.kill();
    // A crashed process runs no destructor either: dropping A's link here
    // would hand its withdrawal to a writer the dying runtime may still
    // poll once, which no crash does.
    std::mem::forget((link, old_deliveries, a));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b.len(), 3, "a dead instance withdraws nothing");

    // r2 is decided while its host is away.
    let rejected = ApprovalResolution::reject(&request(2), Verdict::deny("approval:rejected"));
    b.resolve(&ids[1], &who("ann"), rejected.clone())
        .await
        .unwrap();

    // The host reconnects to B and re-attaches r1 and r2 by its own ids.
    let (host, mut deliveries) = b.connect_host("billing-agent");
    let back = host.reattach("r1", &request(1)).await.unwrap();
    assert_eq!(back.id, ids[0]);
    assert!(!back.decided);
    let drift = if back.deadline > original {
        back.deadline - original
    } else {
        original - back.deadline
    };
    assert!(
        drift < Duration::from_millis(500),
        "the original deadline is kept (off by {drift:?})"
    );
    let r2 = host.reattach("r2", &request(2)).await.unwrap();
    assert!(r2.decided);
    let HostDelivery::Resolution(got) = delivery(&mut deliveries).await else {
        panic!("the decision taken while away");
    };
    assert_eq!(
        (got.request_id.as_str(), &got.resolution),
        ("r2", &rejected)
    );
    // Someone else's request, or a different request under the same id,
    // is not taken.
    let (stranger, _s) = b.connect_host("someone-else");
    assert_eq!(
        refusal(stranger.reattach("r1", &request(1)).await),
        Refusal::UnknownRequest
    );
    assert_eq!(
        refusal(host.reattach("r3", &request(9)).await),
        Refusal::UnknownRequest
    );

    // r1 is decided on B and reaches the host on B.
    let approved = ApprovalResolution::approve(&request(1), Verdict::allow());
    b.resolve(&ids[0], &who("ann"), approved.clone())
        .await
        .unwrap();
    let HostDelivery::Resolution(got) = delivery(&mut deliveries).await else {
        panic!("the decision on the re-attached request");
    };
    assert_eq!(
        (got.request_id.as_str(), &got.resolution),
        ("r1", &approved)
    );

    // r3 was never taken back: once A's lease and the grace ran out, it
    // is withdrawn everywhere.
    event(&mut watching_b, |e| {
        *e == QueueEvent::Closed {
            id: ids[2].clone(),
            reason: CloseReason::HostGone,
        }
    })
    .await;
    assert!(b.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_instance_releases_what_it_held_and_a_lost_listener_resyncs() {
    let pg = cluster();
    let url = pg.create_database("restart").unwrap();
    let b = instance(&url, "b").await;
    let mut watching_b = b.subscribe();
    let doomed = CrashableRuntime::new();
    let id = {
        let url = url.clone();
        doomed
            .run(async move {
                let a = instance(&url, "a").await;
                let (link, _d) = a.connect_host("billing-agent");
                let id = link
                    .submit("r1", request(1), Duration::from_secs(30))
                    .unwrap();
                // Kept alive past the kill, as a crashed process would.
                std::mem::forget((a, link));
                id
            })
            .await
    };
    added(&mut watching_b, &id).await;
    doomed.kill();
    // A comes back under the same id at once (its lease has not run out):
    // it releases the request it held, which its host may re-attach.
    let a = instance(&url, "a").await;
    let (host, _d) = a.connect_host("billing-agent");
    let back = host.reattach("r1", &request(1)).await.unwrap();
    assert_eq!(back.id, id);

    // Every backend of B is cut: its listener reconnects and B reads the
    // pending set again, missing nothing.
    let store = PostgresStore::connect_with(&url, "admin", options())
        .await
        .unwrap();
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query LIKE 'LISTEN%'",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let second = host
        .submit("r2", request(2), Duration::from_secs(30))
        .unwrap();
    let r = ApprovalResolution::approve(&request(1), Verdict::allow());
    a.resolve(&id, &who("ann"), r).await.unwrap();
    tokio::time::timeout(PATIENCE, async {
        while b.get(&second).is_none() || b.get(&id).is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("B caught up after its listener reconnected");
    drop(Arc::new(store));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reattached_elsewhere_survives_its_old_link_ending() {
    let pg = cluster();
    let url = pg.create_database("moved").unwrap();
    let a = instance(&url, "a").await;
    let b = instance(&url, "b").await;
    let mut watching_a = a.subscribe();
    let mut watching_b = b.subscribe();
    let (old, _old_deliveries) = a.connect_host("billing-agent");
    let id = old
        .submit("r1", request(1), Duration::from_secs(30))
        .unwrap();
    added(&mut watching_b, &id).await;
    // The host lost sight of A (A is alive) and came back through B.
    let (new, mut deliveries) = b.connect_host("billing-agent");
    assert_eq!(new.reattach("r1", &request(1)).await.unwrap().id, id);
    // A's old stream ends afterwards: it no longer withdraws the request.
    drop(old);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(a.get(&id).is_some() && b.get(&id).is_some());
    let r = ApprovalResolution::approve(&request(1), Verdict::allow());
    a.resolve(&id, &who("ann"), r.clone()).await.unwrap();
    let HostDelivery::Resolution(got) = delivery(&mut deliveries).await else {
        panic!("the decision, delivered through B");
    };
    assert_eq!((got.request_id.as_str(), &got.resolution), ("r1", &r));
    for sub in [&mut watching_a, &mut watching_b] {
        event(
            sub,
            |e| matches!(e, QueueEvent::Resolved { id: i, .. } if *i == id),
        )
        .await;
    }
}
