//! Approvers on `Watch`: several see one request and the first decision
//! wins, a dropped host's requests are withdrawn, the seam is never consulted
//! at shutdown or in evaluate-only.

use super::*;

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
