//! A host moving between approval service instances over the wire: two
//! real `ApprovalServer`s on one real PostgreSQL database, a real
//! `hookwire-client` host whose `StreamResolver` knows both, an
//! interceptor that escalates every tool call, and an approver deciding
//! through the authenticated gRPC `Decide`.
//!
//! - Instance A is *killed* (its runtime dropped: none of its shutdown
//!   paths run) while a request is pending: the host reconnects to B,
//!   re-attaches the request by id with its original deadline, and the
//!   decision made on B lets its emission proceed with the approver the
//!   service authenticated in its record. A host that knew only A never
//!   comes back: its request is withdrawn everywhere after A's lease and
//!   the re-attach grace, and its emission fails closed.
//! - Instance A is shut down *gracefully* (a rolling restart) while a
//!   request is pending: the request is detached, not withdrawn; the host
//!   re-attaches it on B, where it is decided.

use std::time::{Duration, Instant};

use hookwire::approval::ApprovalResolution;
use hookwire::pb;
use hookwire::{ResolvedBy, Verdict};
use hookwire_approvals::{
    CloseReason, HistoryQuery, PendingApproval, QueueEvent, RunningApprovalServer,
};
use hookwire_approvals_postgres::PostgresOptions;
use hookwire_client::{Emission, Host, InputRole, StreamResolver, ToolCall};
use hookwire_server::RunningServer;
use hookwire_testkit::CrashableRuntime;
use hookwire_testkit::Scripted;
use hookwire_testkit::postgres::PgCluster;
use serde_json::{Value, json};

use crate::common::HOST_TOKEN;

/// How long any cross-instance step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(15);

/// The store's lease and re-attach grace: short, so that a host that never
/// comes back is seen withdrawn within the test.
const LEASE: Duration = Duration::from_millis(600);
const STORE_GRACE: Duration = Duration::from_millis(1500);

/// How long the host waits for each approval.
const DEADLINE: Duration = Duration::from_secs(60);

async fn serve(url: &str, instance: &str) -> RunningApprovalServer {
    let options = PostgresOptions {
        lease: LEASE,
        reattach_grace: STORE_GRACE,
        ..PostgresOptions::default()
    };
    crate::common::serve(url, instance, options).await
}

fn resolver(endpoints: &[String], grace: Duration) -> StreamResolver {
    StreamResolver::builder(endpoints[0].clone())
        .endpoints(endpoints[1..].iter().cloned())
        .bearer_token(HOST_TOKEN)
        .deadline(DEADLINE)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .reattach_grace(grace)
        .build()
        .expect("resolver")
}

fn host(policy: &RunningServer, resolver: StreamResolver) -> Host {
    let (builder, _records) = hookwire_testkit::host();
    builder
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(DEADLINE)
        .build()
        .expect("host")
}

/// Emits a tool call (which the policy escalates) in a task of its own.
fn tool_call(host: &Host, session: &str) -> tokio::task::JoinHandle<Emission> {
    let host = host.clone();
    let session = session.to_owned();
    tokio::spawn(async move {
        let s = host.session(&session).expect("session");
        s.start(["wire_transfer"]).await.expect("start");
        s.input(json!("pay"), InputRole::User).await.expect("input");
        s.pre_tool_call(&ToolCall::new(
            "tc-1",
            "wire_transfer",
            json!({"amount": 100}),
        ))
        .await
        .expect("pre_tool_call")
    })
}

/// Waits until `server` holds a pending request of session `session`.
async fn pending_of(server: &RunningApprovalServer, session: &str) -> PendingApproval {
    let until = Instant::now() + PATIENCE;
    loop {
        if let Some(p) = server
            .queue()
            .pending()
            .into_iter()
            .find(|p| p.request.context.session_id() == session)
        {
            return p;
        }
        assert!(Instant::now() < until, "no request of {session} arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the database says request `id` is held by `instance`'s
/// link (re-attached there).
async fn held_by(url: &str, id: &str, instance: &str) {
    let pool = sqlx::PgPool::connect(url).await.expect("a test connection");
    let until = Instant::now() + PATIENCE;
    loop {
        let (holder,): (Option<String>,) =
            sqlx::query_as("SELECT host_instance FROM approval_requests WHERE id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .expect("the request's row");
        if holder.as_deref() == Some(instance) {
            break;
        }
        assert!(
            Instant::now() < until,
            "{id} is held by {holder:?}, not {instance}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pool.close().await;
}

/// Decides `pending` (approve, as is) through `endpoint`'s gRPC `Decide`
/// with ann's token, under a spoofed name the service must ignore.
async fn approve(endpoint: &str, pending: &PendingApproval) -> pb::DecisionStatus {
    let approved = ApprovalResolution::approve(&pending.request, Verdict::allow());
    crate::common::decide_as_ann(endpoint, &pending.id, &approved).await
}

/// `back` (the request as re-attached) kept the deadline `original` had
/// when it first appeared, at `seen_at`: the same queue id, the same
/// deadline instant (to the store's measuring), and no more time left
/// than the host's deadline leaves (the host asked before `seen_at`, so
/// `DEADLINE` minus the time since `seen_at` is an upper bound of it).
fn kept_its_deadline(original: &PendingApproval, seen_at: Instant, back: &PendingApproval) {
    assert_eq!(back.id, original.id, "re-attached, not queued anew");
    let bound = DEADLINE.saturating_sub(seen_at.elapsed());
    assert!(
        back.remaining() <= bound,
        "remaining {:?}, more than the host's deadline leaves ({bound:?})",
        back.remaining()
    );
    let drift = if back.deadline > original.deadline {
        back.deadline - original.deadline
    } else {
        original.deadline - back.deadline
    };
    assert!(
        drift < Duration::from_millis(500),
        "the original deadline is kept (off by {drift:?})"
    );
}

/// The emission proceeded on an approval by `approver`, as its record says.
fn approved_by(e: &Emission, approver: &str) {
    assert!(e.proceeds(), "{:?}", e.reason());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        e.record().to_envelope()["extensions"]["hookwire"]["approval"]["approver"],
        Value::from(approver)
    );
}

/// Waits until `original` is held by instance `b` under the same id with
/// its original deadline (`seen_at` is when it was first seen), `pending`
/// requests in B's queue and the emission still waiting; then ann approves
/// it through B, and the emission's outcome is returned.
async fn reattached_then_approved(
    url: &str,
    b: &RunningApprovalServer,
    original: &PendingApproval,
    seen_at: Instant,
    call: tokio::task::JoinHandle<Emission>,
    pending: usize,
) -> Emission {
    held_by(url, &original.id, "b").await;
    let back = b.queue().get(&original.id).expect("still pending on B");
    kept_its_deadline(original, seen_at, &back);
    assert_eq!(b.queue().len(), pending, "nothing was withdrawn");
    assert!(!call.is_finished(), "the emission still waits");
    assert_eq!(
        approve(&b.endpoint(), &back).await,
        pb::DecisionStatus::Accepted
    );
    tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the emission ended in time")
        .expect("the emission task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_instance_is_killed_reattaches_on_the_other_and_is_decided_there() {
    let pg = PgCluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
    let url = pg.create_database("killed").unwrap();
    let policy = Scripted::escalating_tool_calls("policy", "needs_approval", "a human approves")
        .serve()
        .await;
    let b = serve(&url, "b").await;
    let mut watching_b = b.queue().subscribe();
    let doomed = CrashableRuntime::new();
    let a = {
        let url = url.clone();
        doomed.run(async move { serve(&url, "a").await }).await
    };

    // One host knows both instances; another knows only A and will never
    // come back.
    let both = host(
        &policy,
        resolver(&[a.endpoint(), b.endpoint()], Duration::from_secs(20)),
    );
    let lonely = host(
        &policy,
        resolver(&[a.endpoint()], Duration::from_millis(500)),
    );
    let call = tool_call(&both, "s-both");
    let stranded = tool_call(&lonely, "s-lonely");
    let original = pending_of(&b, "s-both").await;
    let seen_at = Instant::now();
    let abandoned = pending_of(&b, "s-lonely").await;
    held_by(&url, &original.id, "a").await;
    held_by(&url, &abandoned.id, "a").await;

    // Long enough that a deadline restarted on re-attach would show.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A dies: nothing of it runs any more, not even its links' withdrawal.
    doomed.kill();
    let killed = Instant::now();
    drop(a);

    // The host reconnects to B and re-attaches its request there: the
    // same queue id, the original deadline (not a new one).
    let e = reattached_then_approved(&url, &b, &original, seen_at, call, 2).await;
    approved_by(&e, "ann");
    let log = b.queue().history(&HistoryQuery::latest(10)).await.unwrap();
    assert_eq!(
        log.iter()
            .map(|r| (
                r.approver.name(),
                r.instance.as_str(),
                r.acceptance.as_str()
            ))
            .collect::<Vec<_>>(),
        [("ann", "b", "accepted")]
    );

    // The host that never came back: its request is withdrawn on B once
    // A's lease and the grace have run out (not before the grace), and
    // its emission failed closed.
    let until = Instant::now() + PATIENCE;
    loop {
        let remaining = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(remaining, watching_b.events.recv()).await {
            Ok(Ok(QueueEvent::Closed { id, reason })) if id == abandoned.id => {
                assert_eq!(reason, CloseReason::HostGone);
                break;
            }
            Ok(Ok(_)) => {}
            other => panic!("the abandoned request was not withdrawn: {other:?}"),
        }
    }
    assert!(
        killed.elapsed() >= STORE_GRACE,
        "withdrawn after {:?}, before the grace",
        killed.elapsed()
    );
    assert!(b.queue().is_empty());
    let e = tokio::time::timeout(PATIENCE, stranded)
        .await
        .expect("the stranded emission ended")
        .expect("its task");
    assert!(!e.proceeds());
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_detaches_hosts_which_reattach_on_another_instance() {
    let pg = PgCluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
    let url = pg.create_database("rolling").unwrap();
    let policy = Scripted::escalating_tool_calls("policy", "needs_approval", "a human approves")
        .serve()
        .await;
    let a = serve(&url, "a").await;
    let b = serve(&url, "b").await;
    let mut watching_b = b.queue().subscribe();

    let both = host(
        &policy,
        resolver(&[a.endpoint(), b.endpoint()], Duration::from_secs(20)),
    );
    let call = tool_call(&both, "s-rolling");
    let original = pending_of(&b, "s-rolling").await;
    let seen_at = Instant::now();
    held_by(&url, &original.id, "a").await;

    tokio::time::sleep(Duration::from_secs(1)).await;
    // A rolling restart: A shuts down gracefully. Its host's request is
    // detached, not withdrawn, and comes back on B under the same id.
    a.shutdown().await.expect("A shuts down");
    let e = reattached_then_approved(&url, &b, &original, seen_at, call, 1).await;
    approved_by(&e, "ann");
    // B never saw the request closed before it was decided.
    while let Ok(event) = watching_b.events.try_recv() {
        if let QueueEvent::Closed { id, reason } = event {
            assert_ne!(id, original.id, "closed as {reason:?} on the way");
        }
    }
    b.shutdown().await.unwrap();
}
