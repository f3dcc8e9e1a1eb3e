//! The host's side of the stream: concurrent sessions, a dropped stream, a
//! missed deadline, a lying approver, reconnecting after a restart.

use super::*;

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
