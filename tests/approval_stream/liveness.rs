//! Liveness: a silent service noticed within three heartbeats, an
//! unreachable one failing fast, a pending request surviving a restart
//! within the re-attach grace.

use super::*;

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
