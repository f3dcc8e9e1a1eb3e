//! Approvals over the wire: a host whose approval resolver is a
//! `StreamResolver` on one gRPC stream to an approval service, with
//! approvers in process (the queue's Rust API) and over gRPC (`Watch`,
//! `Decide`). Every server is real and on 127.0.0.1.

use hookwire_testkit as common;

use crate::approval_common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hookwire::approval::{
    ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamRequest, StreamResolution,
};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire::{InterceptionPoint, Mode, ResolvedBy, Verdict};
use hookwire_approvals::{
    ApprovalQueue, ApproverIdentity, CloseReason, QueueEvent, RunningApprovalServer,
};
use hookwire_client::{
    Emission, Host, InputRole, RecordLog, ShutdownReason, StreamResolver, ToolCall,
};
use hookwire_server::RunningServer;
use hookwire_testkit::rogue::RogueApprovals;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use approval_common::{HOST_TOKEN, bearer, token_of};
use common::Scripted;

const LONG: Duration = Duration::from_secs(60);

/// An interceptor that escalates every tool call (and, when asked, the
/// shutdown too) and allows everything else.
async fn escalating_policy(also_at_shutdown: bool) -> RunningServer {
    let points: &[InterceptionPoint] = if also_at_shutdown {
        &[
            InterceptionPoint::PreToolCall,
            InterceptionPoint::AgentShutdown,
        ]
    } else {
        &[InterceptionPoint::PreToolCall]
    };
    Scripted::escalating_at(
        "policy",
        points,
        "needs_approval",
        "a human must approve this call",
    )
    .serve()
    .await
}

/// A resolver for `approvals` with a fast reconnect.
fn resolver(approvals: &str, deadline: Duration) -> StreamResolver {
    StreamResolver::builder(approvals)
        .deadline(deadline)
        .host_name("test-host")
        .bearer_token(HOST_TOKEN)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .expect("resolver")
}

fn host(policy: &RunningServer, resolver: StreamResolver, mode: Mode) -> (Host, RecordLog) {
    let (builder, records) = common::host();
    let deadline = resolver.deadline();
    let host = builder
        .mode(mode)
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        .build()
        .expect("host");
    (host, records)
}

async fn tool_call(host: &Host, session: &str, args: Value) -> Emission {
    let s = host.session(session).expect("session");
    s.start(["wire_transfer"]).await.expect("start");
    s.input(json!("pay"), InputRole::User).await.expect("input");
    s.pre_tool_call(&ToolCall::new("tc-1", "wire_transfer", args))
        .await
        .expect("pre_tool_call")
}

async fn approvals() -> RunningApprovalServer {
    approval_common::server()
        .heartbeat_interval(Duration::from_millis(200))
        .spawn_local()
        .await
        .expect("approval service")
}

/// Waits until `queue` holds `n` pending requests.
async fn wait_pending(queue: &ApprovalQueue, n: usize) -> Vec<hookwire_approvals::PendingApproval> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let pending = queue.pending();
        if pending.len() >= n {
            return pending;
        }
        assert!(
            Instant::now() < until,
            "only {} of {n} requests arrived",
            pending.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Approves (with `allow`) every request that reaches `queue`.
fn auto_approve(queue: ApprovalQueue) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut sub = queue.subscribe();
        for p in sub.pending.drain(..) {
            let _ = queue
                .resolve(
                    &p.id,
                    &ApproverIdentity::in_process("robot"),
                    ApprovalResolution::approve(&p.request, Verdict::allow()),
                )
                .await;
        }
        while let Ok(e) = sub.events.recv().await {
            if let QueueEvent::Added(p) = e {
                let r = ApprovalResolution::approve(&p.request, Verdict::allow());
                let _ = queue
                    .resolve(&p.id, &ApproverIdentity::in_process("robot"), r)
                    .await;
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_sessions_each_get_their_own_resolution() {
    let policy = escalating_policy(false).await;
    let service = approvals().await;
    let (host, records) = host(&policy, resolver(&service.endpoint(), LONG), Mode::Enforce);

    let sessions: Vec<_> = (0..50)
        .map(|n| {
            let host = host.clone();
            tokio::spawn(async move { tool_call(&host, &format!("s-{n}"), json!({"n": n})).await })
        })
        .collect();

    // Every request pending at once on one stream, answered in reverse
    // order with a transform that only fits its own request.
    let queue = service.queue().clone();
    let mut pending = wait_pending(&queue, 50).await;
    let sessions_seen: HashSet<&str> = pending.iter().map(|p| p.session_id()).collect();
    assert_eq!(sessions_seen.len(), 50);
    pending.reverse();
    for p in &pending {
        let n = p.target().and_then(|t| t["n"].as_u64()).expect("args.n");
        assert_eq!(p.session_id(), format!("s-{n}"));
        assert_eq!(p.host, "test-host");
        let approved =
            Verdict::transform("$target", json!({"n": n, "approved_for": format!("s-{n}")}));
        queue
            .resolve(
                &p.id,
                &ApproverIdentity::in_process("ann"),
                ApprovalResolution::approve(&p.request, approved),
            )
            .await
            .expect("first decision");
    }

    for (n, session) in sessions.into_iter().enumerate() {
        let e = session.await.expect("session task");
        assert!(e.proceeds(), "session {n}: {:?}", e.reason());
        assert_eq!(
            e.target(),
            Some(&json!({"n": n, "approved_for": format!("s-{n}")}))
        );
        assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
        assert_eq!(e.record().decided_by, Some(0));
    }
    assert!(queue.is_empty());
    assert_eq!(
        records
            .records()
            .iter()
            .filter(|r| r.resolved_by == Some(ResolvedBy::Approval))
            .count(),
        50
    );
}

#[tokio::test]
async fn a_dropped_stream_fails_the_request_at_once() {
    let policy = escalating_policy(false).await;
    let service = approvals().await;
    let (host, _) = host(&policy, resolver(&service.endpoint(), LONG), Mode::Enforce);
    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s", json!({"amount": 100})).await }
    });
    wait_pending(service.queue(), 1).await;
    let dropped = Instant::now();
    service.shutdown().await.expect("shutdown");
    let e = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("failed well before the 60 s deadline")
        .expect("task");
    assert!(
        dropped.elapsed() < Duration::from_secs(2),
        "took {:?}",
        dropped.elapsed()
    );
    assert!(e.is_blocked());
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Rejection));
}

#[tokio::test]
async fn a_missed_deadline_fails_the_request_and_withdraws_it() {
    let policy = escalating_policy(false).await;
    let service = approvals().await;
    let deadline = Duration::from_millis(400);
    // The seam's own bound is longer: the resolver's deadline decides.
    let r = resolver(&service.endpoint(), deadline);
    let (builder, _) = common::host();
    let host = builder
        .remote("policy", policy.endpoint())
        .approval_resolver(r.clone())
        .approval_deadline(LONG)
        .build()
        .expect("host");
    let mut sub = service.queue().subscribe();
    let started = Instant::now();
    let e = tool_call(&host, "s", json!({"amount": 100})).await;
    let took = started.elapsed();
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    assert!(
        took >= deadline && took < deadline + Duration::from_secs(2),
        "took {took:?}"
    );
    assert_eq!(r.pending(), 0);

    let Ok(QueueEvent::Added(p)) = sub.events.recv().await else {
        panic!("expected the request to be queued");
    };
    let closed = loop {
        match sub.events.recv().await.expect("event") {
            QueueEvent::Closed { id, reason } if id == p.id => break reason,
            _ => {}
        }
    };
    // The host withdraws at its deadline; the service's own timer is the
    // backstop. Either way no approver can decide any more.
    assert!(
        matches!(closed, CloseReason::Cancelled | CloseReason::Expired),
        "{closed:?}"
    );
    let late = ApprovalResolution::approve(&p.request, Verdict::allow());
    let late_approver = ApproverIdentity::in_process("late");
    assert!(
        service
            .queue()
            .resolve(&p.id, &late_approver, late)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_lying_approver_is_an_identity_mismatch() {
    let policy = escalating_policy(false).await;
    let service = approvals().await;
    let (host, _) = host(&policy, resolver(&service.endpoint(), LONG), Mode::Enforce);
    let approver = ApprovalServiceClient::connect(service.endpoint())
        .await
        .expect("approver connects");

    let decide = |p: &hookwire_approvals::PendingApproval, r: ApprovalResolution| {
        let mut approver = approver.clone();
        let id = p.id.clone();
        async move {
            approver
                .decide(bearer(
                    pb::DecideRequest {
                        approver: "mallory".into(),
                        resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
                            request_id: id,
                            approver: String::new(),
                            resolution: r,
                        })),
                    },
                    token_of("mallory"),
                ))
                .await
                .expect("decide")
                .into_inner()
                .status
        }
    };

    // An approval for other content than what was shown.
    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s-1", json!({"amount": 100})).await }
    });
    let p = wait_pending(service.queue(), 1).await.remove(0);
    assert!(p.request.context_identity.is_some());
    let lie = ApprovalResolution {
        outcome: Some(ApprovalOutcome::Approve),
        context_identity: Some(format!("sha256:{}", "0".repeat(64))),
        verdict: Some(Verdict::allow()),
    };
    assert_eq!(decide(&p, lie).await, pb::DecisionStatus::Accepted as i32);
    let e = call.await.expect("task");
    assert!(e.is_blocked());
    assert_eq!(e.reason(), Some("host_error:approval_identity_mismatch"));

    // No outcome at all: carried as such, refused by the host.
    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s-2", json!({"amount": 100})).await }
    });
    let p = wait_pending(service.queue(), 1).await.remove(0);
    let none = ApprovalResolution {
        outcome: None,
        ..ApprovalResolution::approve(&p.request, Verdict::allow())
    };
    assert_eq!(decide(&p, none).await, pb::DecisionStatus::Accepted as i32);
    let e = call.await.expect("task");
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));

    // Unresolved, honestly: the reserved reason for it.
    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s-3", json!({"amount": 100})).await }
    });
    let p = wait_pending(service.queue(), 1).await.remove(0);
    let unresolved = ApprovalResolution::unresolved(&p.request);
    assert_eq!(
        decide(&p, unresolved).await,
        pb::DecisionStatus::Accepted as i32
    );
    let e = call.await.expect("task");
    assert_eq!(e.reason(), Some("host_error:approval_unresolved"));
}

#[tokio::test]
async fn the_host_reconnects_after_the_service_restarts_on_the_same_port() {
    let policy = escalating_policy(false).await;
    let first = approvals().await;
    let addr: SocketAddr = first.addr();
    let r = resolver(&first.endpoint(), LONG);
    let (host, _) = host(&policy, r.clone(), Mode::Enforce);
    let robot = auto_approve(first.queue().clone());
    assert!(
        tool_call(&host, "before", json!({"amount": 1}))
            .await
            .proceeds()
    );
    robot.abort();

    first.shutdown().await.expect("shutdown");
    let until = Instant::now() + Duration::from_secs(5);
    while r.is_connected() {
        assert!(
            Instant::now() < until,
            "the resolver did not notice the restart"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // While the service is down, a request fails (promptly) rather than hangs.
    let down = tool_call(&host, "during", json!({"amount": 2})).await;
    assert_eq!(down.reason(), Some("host_error:approval_resolver_failed"));

    let second = approval_common::server()
        .heartbeat_interval(Duration::from_millis(200))
        .spawn(addr, None)
        .await
        .expect("the same port again");
    let robot = auto_approve(second.queue().clone());
    assert!(
        r.wait_connected(Duration::from_secs(5)).await,
        "no reconnection"
    );
    let e = tool_call(&host, "after", json!({"amount": 3})).await;
    assert!(e.proceeds(), "{:?}", e.reason());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    robot.abort();
}

/// An approver on a `Watch` stream.
struct Approver {
    name: String,
    up: mpsc::Sender<pb::ApproverMessage>,
    down: Streaming<pb::WatchEvent>,
}

impl Approver {
    async fn connect(endpoint: &str, name: &str) -> Self {
        let mut client = ApprovalServiceClient::connect(endpoint.to_owned())
            .await
            .expect("connect");
        let (up, rx) = mpsc::channel(16);
        up.send(kind(pb::approver_message::Kind::Hello(pb::ApproverHello {
            name: name.into(),
        })))
        .await
        .expect("hello");
        let down = client
            .watch(bearer(ReceiverStream::new(rx), token_of(name)))
            .await
            .expect("watch")
            .into_inner();
        Self {
            name: name.into(),
            up,
            down,
        }
    }

    /// The next event that is not a heartbeat or the settings.
    async fn next(&mut self) -> pb::watch_event::Kind {
        loop {
            let e = tokio::time::timeout(Duration::from_secs(10), self.down.message())
                .await
                .unwrap_or_else(|_| panic!("{}: no event", self.name))
                .expect("stream")
                .expect("open");
            match e.kind.expect("kind") {
                pb::watch_event::Kind::Heartbeat(_) | pb::watch_event::Kind::Ready(_) => {}
                k => return k,
            }
        }
    }

    async fn send(&self, k: pb::approver_message::Kind) {
        self.up.send(kind(k)).await.expect("send");
    }
}

fn kind(k: pb::approver_message::Kind) -> pb::ApproverMessage {
    pb::ApproverMessage { kind: Some(k) }
}

#[tokio::test]
async fn several_approvers_see_one_request_and_the_first_decision_wins() {
    let policy = escalating_policy(false).await;
    let service = approvals().await;
    let r = resolver(&service.endpoint(), LONG);
    let mut seen = r.subscribe_seen();
    let (host, _) = host(&policy, r, Mode::Enforce);

    let mut ann = Approver::connect(&service.endpoint(), "ann").await;
    let mut bob = Approver::connect(&service.endpoint(), "bob").await;
    for a in [&mut ann, &mut bob] {
        let pb::watch_event::Kind::Pending(set) = a.next().await else {
            panic!("the first event is the pending set");
        };
        assert!(set.requests.is_empty());
    }

    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s", json!({"amount": 100})).await }
    });
    let mut ids = Vec::new();
    for a in [&mut ann, &mut bob] {
        let pb::watch_event::Kind::Added(p) = a.next().await else {
            panic!("expected the request");
        };
        let req = p.request.expect("request");
        assert_eq!(
            req.interception_point,
            pb::InterceptionPoint::PreToolCall as i32
        );
        assert!(req.deadline_ms > 50_000 && req.deadline_ms <= 60_000);
        let ctx: Value = serde_json::from_str(&req.context.expect("context").json).expect("json");
        assert_eq!(ctx["tool_call"]["args"], json!({"amount": 100}));
        assert_eq!(p.host, "test-host");
        ids.push((req.request_id, req.context_identity));
    }
    assert_eq!(ids[0], ids[1], "both approvers see the same request");
    let (id, identity) = ids.remove(0);

    // Ann looks: the host hears of it, and so does Bob.
    ann.send(pb::approver_message::Kind::Seen(pb::Seen {
        request_id: id.clone(),
        approver: String::new(),
    }))
    .await;
    let s = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .expect("seen in time")
        .expect("seen");
    assert_eq!((s.approver.as_str(), s.session_id.as_str()), ("ann", "s"));
    assert_eq!(s.interception_point, InterceptionPoint::PreToolCall);
    for a in [&mut ann, &mut bob] {
        let pb::watch_event::Kind::Seen(s) = a.next().await else {
            panic!("expected seen");
        };
        assert_eq!(
            (s.request_id.as_str(), s.approver.as_str()),
            (id.as_str(), "ann")
        );
    }

    // Both decide; Ann is first.
    let decision = |outcome: pb::ApprovalOutcome, verdict: Verdict| pb::ApprovalResolution {
        request_id: id.clone(),
        outcome: outcome as i32,
        context_identity: identity.clone(),
        verdict: Some(pb::Verdict::from(&verdict)),
        approver: String::new(),
    };
    ann.send(pb::approver_message::Kind::Decide(decision(
        pb::ApprovalOutcome::Approve,
        Verdict::allow(),
    )))
    .await;
    let mut ann_events = vec![ann.next().await, ann.next().await];
    ann_events.sort_by_key(|k| matches!(k, pb::watch_event::Kind::Resolved(_)));
    assert!(
        matches!(&ann_events[0], pb::watch_event::Kind::Ack(a) if a.status == pb::DecisionStatus::Accepted as i32),
        "{ann_events:?}"
    );
    let pb::watch_event::Kind::Resolved(done) = bob.next().await else {
        panic!("bob sees it resolved");
    };
    assert_eq!(done.approver, "ann");
    assert_eq!(done.outcome, pb::ApprovalOutcome::Approve as i32);
    bob.send(pb::approver_message::Kind::Decide(decision(
        pb::ApprovalOutcome::Reject,
        Verdict::deny("too_late"),
    )))
    .await;
    let pb::watch_event::Kind::Ack(ack) = bob.next().await else {
        panic!("bob's decision is acknowledged");
    };
    assert_eq!(ack.status, pb::DecisionStatus::AlreadyResolved as i32);

    let e = call.await.expect("task");
    assert!(e.proceeds());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
}

#[tokio::test]
async fn a_host_whose_stream_drops_has_its_requests_withdrawn() {
    let service = approvals().await;
    let mut sub = service.queue().subscribe();
    let mut client = ApprovalServiceClient::connect(service.endpoint())
        .await
        .expect("connect");
    let (up, rx) = mpsc::channel(4);
    let ctx = common::context(InterceptionPoint::PreToolCall);
    let request = ApprovalRequest {
        context_identity: None,
        interception_point: InterceptionPoint::PreToolCall,
        verdict: Verdict::escalate("x"),
        context: ctx,
    };
    up.send(pb::HostMessage {
        kind: Some(pb::host_message::Kind::Request(pb::ApprovalRequest::from(
            &StreamRequest {
                request_id: "mine".into(),
                request: request.clone(),
                deadline: LONG,
            },
        ))),
    })
    .await
    .expect("send");
    let mut down = client
        .resolve(bearer(ReceiverStream::new(rx), HOST_TOKEN))
        .await
        .expect("resolve")
        .into_inner();
    let first = down.message().await.expect("ok").expect("message");
    assert!(matches!(
        first.kind,
        Some(pb::service_message::Kind::Ready(_))
    ));
    let Ok(QueueEvent::Added(p)) = sub.events.recv().await else {
        panic!("queued");
    };
    assert_eq!(p.request, request);
    drop((up, down, client));
    let Ok(QueueEvent::Closed { id, reason }) = sub.events.recv().await else {
        panic!("withdrawn");
    };
    assert_eq!((id, reason), (p.id, CloseReason::HostGone));
}

#[tokio::test]
async fn the_seam_is_never_consulted_at_shutdown_or_in_evaluate_only() {
    let policy = escalating_policy(true).await;
    let service = approvals().await;
    let added = Arc::new(AtomicUsize::new(0));
    let counter = tokio::spawn({
        let mut sub = service.queue().subscribe();
        let added = Arc::clone(&added);
        async move {
            while let Ok(e) = sub.events.recv().await {
                if matches!(e, QueueEvent::Added(_)) {
                    added.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    });
    let (enforcing, _) = host(&policy, resolver(&service.endpoint(), LONG), Mode::Enforce);
    let s = enforcing.session("s").expect("session");
    s.start(["t"]).await.expect("start");
    let e = s
        .shutdown(ShutdownReason::Completed)
        .await
        .expect("shutdown");
    assert!(e.is_blocked());
    assert_eq!(e.record().resolved_by, None);

    let (evaluating, _) = host(
        &policy,
        resolver(&service.endpoint(), LONG),
        Mode::EvaluateOnly,
    );
    let e = tool_call(&evaluating, "s2", json!({"amount": 1})).await;
    assert!(e.proceeds());
    assert_eq!(e.record().resolved_by, None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(added.load(Ordering::SeqCst), 0);
    counter.abort();
}

#[tokio::test]
async fn a_silent_service_is_noticed_within_three_heartbeats() {
    let policy = escalating_policy(false).await;
    // Ready with 100 ms heartbeats, then silent.
    let mute = RogueApprovals::mute(100).spawn().await;
    let (host, _) = host(&policy, resolver(mute.endpoint(), LONG), Mode::Enforce);
    let started = Instant::now();
    let e = tool_call(&host, "s", json!({"amount": 1})).await;
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    // Three 100 ms heartbeats, plus the tick's granularity.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    drop(mute);
}

#[tokio::test]
async fn an_unreachable_service_fails_fast() {
    let policy = escalating_policy(false).await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("addr");
    drop(closed);
    let r = StreamResolver::builder(format!("http://{addr}"))
        .connect_wait(Duration::from_millis(300))
        .build()
        .expect("resolver");
    let (stranded, _) = host(&policy, r, Mode::Enforce);
    let started = Instant::now();
    let e = tool_call(&stranded, "s", json!({"amount": 1})).await;
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn with_a_reattach_grace_a_pending_request_survives_a_service_restart() {
    let policy = escalating_policy(false).await;
    let first = approvals().await;
    let addr: SocketAddr = first.addr();
    let deadline = Duration::from_secs(30);
    let r = StreamResolver::builder(first.endpoint())
        .deadline(deadline)
        .host_name("test-host")
        .bearer_token(HOST_TOKEN)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .reattach_grace(Duration::from_secs(10))
        .build()
        .expect("resolver");
    let (host, _) = host(&policy, r.clone(), Mode::Enforce);
    let call = tokio::spawn({
        let host = host.clone();
        async move { tool_call(&host, "s", json!({"amount": 7})).await }
    });
    let withdrawn = wait_pending(first.queue(), 1).await.remove(0).id;
    let mut watching_first = first.queue().subscribe();
    let queue_of_first = first.queue().clone();
    first.shutdown().await.expect("shutdown");
    // An embedded queue cannot be served by anyone else: its graceful
    // shutdown withdraws the request (the host queues it anew).
    let closed = tokio::time::timeout(Duration::from_secs(5), watching_first.events.recv())
        .await
        .expect("withdrawn at shutdown")
        .expect("an event");
    assert_eq!(
        closed,
        QueueEvent::Closed {
            id: withdrawn,
            reason: CloseReason::HostGone
        }
    );
    assert!(queue_of_first.is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!call.is_finished(), "the request waits for a new stream");

    let second = approval_common::server()
        .heartbeat_interval(Duration::from_millis(200))
        .spawn(addr, None)
        .await
        .expect("the same port again");
    let p = wait_pending(second.queue(), 1).await.remove(0);
    // Sent again with what is left of the host's deadline, not a new one:
    // it was sent after the 300 ms wait above, so at most the deadline less
    // that wait is left (a fresh one would be the whole deadline), however
    // long the message took to arrive.
    assert!(
        p.remaining() <= deadline.saturating_sub(Duration::from_millis(290)),
        "{:?}",
        p.remaining()
    );
    let robot = auto_approve(second.queue().clone());
    let e = call.await.expect("task");
    assert!(e.proceeds(), "{:?}", e.reason());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    robot.abort();
}

/// A free local port nothing listens on.
async fn dead_endpoint() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}

#[tokio::test]
async fn a_resolver_with_several_endpoints_moves_on_from_one_that_is_down() {
    let policy = escalating_policy(false).await;
    let live = approvals().await;
    let down = dead_endpoint().await;
    let r = StreamResolver::builder(down)
        .endpoints([live.endpoint()])
        .deadline(LONG)
        .bearer_token(HOST_TOKEN)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .expect("resolver");
    assert!(
        r.wait_connected(Duration::from_secs(5)).await,
        "the second endpoint is reached"
    );
    let (failing_over, _) = host(&policy, r, Mode::Enforce);
    let robot = auto_approve(live.queue().clone());
    let e = tool_call(&failing_over, "s", json!({"amount": 1})).await;
    assert!(e.proceeds(), "{:?}", e.reason());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    robot.abort();

    // Every endpoint down: a request fails closed at once rather than
    // waiting out the connect wait.
    let r = StreamResolver::builder(dead_endpoint().await)
        .endpoints([dead_endpoint().await])
        .deadline(LONG)
        .connect_wait(Duration::from_secs(30))
        .build()
        .expect("resolver");
    let (stranded, _) = host(&policy, r, Mode::Enforce);
    let started = Instant::now();
    let e = tool_call(&stranded, "s", json!({"amount": 1})).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(e.is_blocked());
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
}

#[tokio::test]
async fn a_resolver_refuses_a_repeated_or_mixed_endpoint_list() {
    let repeated = StreamResolver::builder("http://127.0.0.1:50061")
        .endpoints(["http://127.0.0.1:50062", "http://127.0.0.1:50061"])
        .build()
        .expect_err("a URL listed twice");
    assert!(repeated.to_string().contains("listed twice"), "{repeated}");
    let mixed = StreamResolver::builder("http://127.0.0.1:50061")
        .endpoints(["https://127.0.0.1:50062"])
        .build()
        .expect_err("http and https mixed");
    assert!(mixed.to_string().contains("every endpoint"), "{mixed}");
    let relative = StreamResolver::builder("http://127.0.0.1:50061")
        .endpoints(["/approvals"])
        .build()
        .expect_err("not an absolute URL");
    assert!(relative.to_string().contains("/approvals"), "{relative}");
}
