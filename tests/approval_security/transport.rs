//! TLS with the wrong authority, mTLS naming the approver, a rogue service's
//! oversized message, and a declared `approval_resolver_ms` as the
//! deadline approvers see.

use super::*;

#[tokio::test]
async fn tls_with_the_wrong_authority_fails_closed_and_mtls_names_the_approver() {
    let ca = Authority::new("approvals CA");
    let stranger = Authority::new("someone else");
    let (cert, key) = ca.leaf("approvals", vec![SanType::IpAddress([127, 0, 0, 1].into())]);
    let (approver_cert, approver_key) = ca.leaf(
        "carol",
        vec![SanType::DnsName(
            "carol.approvers.internal".try_into().unwrap(),
        )],
    );
    let config = approval_common::access_config().approver(ApproverConfig::from(
        PrincipalConfig::certificate("carol", "carol.approvers.internal"),
    ));
    let tls = ServiceTls::new(cert, key)
        .unwrap()
        .client_ca(ca.pem.clone(), false)
        .unwrap();
    let service = hookwire_approvals::ApprovalServer::new(Access::new(&config).unwrap())
        .tls(tls)
        .spawn_local()
        .await
        .unwrap();
    assert!(service.endpoint().starts_with("https://"));
    let resolver = |ca_pem: &str| {
        StreamResolver::builder(service.endpoint())
            .tls(TlsConfig {
                ca_pem: Some(ca_pem.as_bytes().to_vec()),
                ..TlsConfig::default()
            })
            .bearer_token(HOST_TOKEN)
            .connect_wait(Duration::from_millis(500))
            .deadline(Duration::from_secs(5))
            .build()
            .unwrap()
    };

    // The wrong authority: never connected, every request fails at once.
    let wrong = resolver(&stranger.pem);
    assert!(!wrong.wait_connected(Duration::from_secs(1)).await);
    let started = Instant::now();
    let r = request("wire_transfer", "x");
    assert!(wrong.resolve(&r).await.is_err(), "fails closed");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(service.queue().is_empty());

    // Plain http:// to a TLS port fails closed too.
    let plain = StreamResolver::builder(service.endpoint().replace("https", "http"))
        .bearer_token(HOST_TOKEN)
        .connect_wait(Duration::from_millis(500))
        .build()
        .unwrap();
    assert!(plain.resolve(&r).await.is_err());

    // The right authority: the request reaches the queue, and an approver
    // authenticated only by its client certificate decides it.
    let right = resolver(&ca.pem);
    assert!(right.wait_connected(Duration::from_secs(5)).await);
    let answer = tokio::spawn({
        let right = right.clone();
        let r = r.clone();
        async move { right.resolve(&r).await }
    });
    let until = Instant::now() + Duration::from_secs(10);
    while service.queue().is_empty() {
        assert!(Instant::now() < until, "the request never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = service.queue().pending()[0].id.clone();
    let channel = tonic::transport::Endpoint::from_shared(service.endpoint())
        .unwrap()
        .tls_config(
            tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(&ca.pem))
                .identity(tonic::transport::Identity::from_pem(
                    &approver_cert,
                    &approver_key,
                )),
        )
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut carol = ApprovalServiceClient::new(channel);
    let ok = carol
        .decide(Request::new(decide_request(&id, "somebody-else")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.status, pb::DecisionStatus::Accepted as i32);
    assert!(answer.await.unwrap().is_ok());
    let history = service
        .queue()
        .history(&HistoryQuery::latest(1))
        .await
        .unwrap();
    assert_eq!(history[0].approver.name(), "carol");
    service.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_rogue_service_sending_a_huge_message_fails_the_host_closed() {
    // 64 MiB: eight times the host's bound.
    let rogue = RogueApprovals::oversized(64 * 1024 * 1024).spawn().await;
    let resolver = StreamResolver::builder(rogue.endpoint())
        .deadline(Duration::from_secs(20))
        .build()
        .unwrap();
    assert!(resolver.wait_connected(Duration::from_secs(5)).await);
    let started = Instant::now();
    let r = request("wire_transfer", "x");
    assert!(resolver.resolve(&r).await.is_err(), "fails closed");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failed at once, not at the deadline: {:?}",
        started.elapsed()
    );
    drop(rogue);
}

#[tokio::test]
async fn a_declared_approval_resolver_ms_is_the_deadline_approvers_see() {
    let policy = common::Scripted::escalating_tool_calls("policy", "needs_approval", "a human")
        .serve()
        .await;
    let service = approval_common::server().spawn_local().await.unwrap();
    let registry = Registry::standard()
        .approval_stream_with(
            "approval-stream",
            StreamResolver::builder(service.endpoint()).bearer_token(HOST_TOKEN),
        )
        .unwrap();
    let doc = Declaration::from_value(&json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                      "config": {"endpoint": policy.endpoint()}}],
        "configuration": {
            "approval": {"resolver": "approval-stream"},
            "timeouts": {"approval_resolver_ms": 5000},
        },
    }))
    .unwrap();
    let host: Host = Host::declared("agent", "hookwire")
        .load(&doc, &registry)
        .unwrap();
    let call = tokio::spawn(async move {
        let s = host.session("s").unwrap();
        s.start(["wire_transfer"]).await.unwrap();
        s.input(json!("pay"), InputRole::User).await.unwrap();
        s.pre_tool_call(&ToolCall::new("tc", "wire_transfer", json!({"amount": 1})))
            .await
            .unwrap()
    });
    let until = Instant::now() + Duration::from_secs(10);
    while service.queue().is_empty() {
        assert!(Instant::now() < until, "the request never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let remaining = service.queue().pending()[0].remaining();
    assert!(
        remaining <= Duration::from_secs(5) && remaining > Duration::from_secs(3),
        "the service was told {remaining:?}, not the declared 5 s"
    );
    let e = call.await.unwrap();
    assert_eq!(e.reason(), Some("host_error:approval_resolver_failed"));
    service.shutdown().await.unwrap();
}
