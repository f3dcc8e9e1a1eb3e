//! Every refusal — no token, a forged, expired or revoked token, an approver
//! outside its rules, a host credential deciding or watching, an approver
//! credential submitting — on gRPC and on the page's API, each leaving the
//! queue unchanged and no secret in any log line.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_leaves_the_queue_unchanged_and_no_secret_is_logged() {
    let logs = hookwire_testkit::process_logs();
    let service = hookwire_approvals::ApprovalServer::new(access())
        .spawn_local()
        .await
        .expect("approval service");
    let queue = service.queue().clone();
    let (_link, inside, outside) = submit_two(&queue);
    let before = snapshot(&queue);
    let mut client = ApprovalServiceClient::connect(service.endpoint())
        .await
        .unwrap();
    let mut errors = Vec::new();

    // --- gRPC: Decide ---------------------------------------------------
    let refused = |r: Result<Response<pb::DecideResponse>, Status>| r.expect_err("refused");
    let e = refused(
        client
            .decide(Request::new(decide_request(&inside, "ann")))
            .await,
    );
    assert_eq!(e.code(), Code::Unauthenticated, "no token");
    errors.push(e.message().to_owned());
    for (token, what) in [
        (FORGED_TOKEN, "forged"),
        (OLD_TOKEN, "expired"),
        (GONE_TOKEN, "revoked"),
    ] {
        let e = refused(
            client
                .decide(bearer(decide_request(&inside, "ann"), token))
                .await,
        );
        assert_eq!(e.code(), Code::Unauthenticated, "{what} token");
        errors.push(e.message().to_owned());
    }
    // The header's scheme is case-insensitive (RFC 9110): a lower-case
    // `bearer` authenticates (here a host, which may not decide); anything
    // but `Bearer <token68>` is refused as unauthenticated, even beside a
    // valid token's characters.
    let authorized = |value: &str| {
        let mut r = Request::new(decide_request(&inside, "ann"));
        r.metadata_mut()
            .insert("authorization", value.parse().expect("header value"));
        r
    };
    let e = refused(
        client
            .decide(authorized(&format!("bearer  {HOST_TOKEN}")))
            .await,
    );
    assert_eq!(e.code(), Code::PermissionDenied, "a lower-case scheme");
    for malformed in [
        HOST_TOKEN.to_owned(),
        format!("Basic {HOST_TOKEN}"),
        format!("Bearer {HOST_TOKEN},x"),
        "Bearer".to_owned(),
    ] {
        let e = refused(client.decide(authorized(&malformed)).await);
        assert_eq!(e.code(), Code::Unauthenticated, "{malformed:?}");
        errors.push(e.message().to_owned());
    }
    let e = refused(
        client
            .decide(bearer(decide_request(&inside, "ann"), HOST_TOKEN))
            .await,
    );
    assert_eq!(e.code(), Code::PermissionDenied, "a host deciding");
    errors.push(e.message().to_owned());
    let e = refused(
        client
            .decide(bearer(
                decide_request(&outside, "ann"),
                token_of("payments"),
            ))
            .await,
    );
    assert_eq!(
        e.code(),
        Code::PermissionDenied,
        "outside the approver's rules"
    );
    errors.push(e.message().to_owned());
    assert_eq!(snapshot(&queue), before, "nothing changed");

    // The forbidden decision is audited under the approver's name.
    let history = queue.history(&HistoryQuery::latest(10)).await.unwrap();
    assert!(
        history.iter().any(|r| r.request_id == outside
            && r.approver.name() == "payments"
            && r.acceptance == Acceptance::Forbidden),
        "{history:?}"
    );

    // --- gRPC: Watch and Resolve ------------------------------------------
    let (_up, rx) = mpsc::channel::<pb::ApproverMessage>(1);
    let e = client
        .watch(bearer(ReceiverStream::new(rx), HOST_TOKEN))
        .await
        .expect_err("a host may not watch");
    assert_eq!(e.code(), Code::PermissionDenied);
    let (_up, rx) = mpsc::channel::<pb::ApproverMessage>(1);
    let e = client
        .watch(Request::new(ReceiverStream::new(rx)))
        .await
        .expect_err("nobody may watch");
    assert_eq!(e.code(), Code::Unauthenticated);
    for (token, code) in [
        (None, Code::Unauthenticated),
        (Some(FORGED_TOKEN), Code::Unauthenticated),
        (Some(token_of("ann")), Code::PermissionDenied),
    ] {
        let (up, rx) = mpsc::channel::<pb::HostMessage>(1);
        up.send(pb::HostMessage {
            kind: Some(pb::host_message::Kind::Request(pb::ApprovalRequest::from(
                &hookwire::approval::StreamRequest {
                    request_id: "sneaky".into(),
                    request: request("wire_transfer", "payments.x"),
                    deadline: LONG,
                },
            ))),
        })
        .await
        .unwrap();
        let stream = ReceiverStream::new(rx);
        let r = match token {
            Some(t) => client.resolve(bearer(stream, t)).await,
            None => client.resolve(Request::new(stream)).await,
        };
        let e = r.expect_err("only hosts submit");
        assert_eq!(e.code(), code, "{token:?}");
        errors.push(e.message().to_owned());
    }
    assert_eq!(snapshot(&queue), before, "nothing submitted");

    // An approver limited by rules sees only what it may decide.
    let (_up, rx) = mpsc::channel::<pb::ApproverMessage>(1);
    let mut down = client
        .watch(bearer(ReceiverStream::new(rx), token_of("payments")))
        .await
        .unwrap()
        .into_inner();
    let Some(pb::watch_event::Kind::Pending(set)) = down.message().await.unwrap().unwrap().kind
    else {
        panic!("a pending set first");
    };
    let ids: Vec<_> = set
        .requests
        .iter()
        .map(|p| p.request.as_ref().unwrap().request_id.clone())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&inside));

    // --- the page's API ---------------------------------------------------
    let web = service.web_addr().expect("page");
    let (status, _, _) = http(web, "GET", "/api/pending", &[], None).await;
    assert_eq!(status, 401, "no session");
    let (status, _, _) = http(web, "GET", "/api/history", &[], None).await;
    assert_eq!(status, 401);
    for (token, expected) in [
        (FORGED_TOKEN, 401),
        (OLD_TOKEN, 401),
        (GONE_TOKEN, 401),
        (HOST_TOKEN, 403),
    ] {
        let (status, head, body) = http(
            web,
            "POST",
            "/api/login",
            &[],
            Some(json!({"token": token})),
        )
        .await;
        assert_eq!(status, expected, "login with {token:?}");
        assert!(!head.to_ascii_lowercase().contains("set-cookie"));
        errors.push(body);
    }
    let (status, head, body) = http(
        web,
        "POST",
        "/api/login",
        &[],
        Some(json!({"token": token_of("payments")})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let cookie_line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a session cookie");
    assert!(cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Strict"));
    assert!(!cookie_line.contains("Secure"), "plain HTTP");
    assert!(!cookie_line.contains(token_of("payments")));
    let cookie = cookie_line
        .split_once(':')
        .unwrap()
        .1
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf"]
        .as_str()
        .unwrap()
        .to_owned();
    let decide = |id: &str| json!({"request_id": id, "outcome": "approve"});
    // A forged cross-site POST: the cookie without the CSRF token.
    let (status, _, _) = http(
        web,
        "POST",
        "/api/decide",
        &[("cookie", &cookie)],
        Some(decide(&inside)),
    )
    .await;
    assert_eq!(status, 403, "no CSRF token");
    let (status, _, _) = http(
        web,
        "POST",
        "/api/decide",
        &[("cookie", &cookie), ("x-csrf-token", "0000")],
        Some(decide(&inside)),
    )
    .await;
    assert_eq!(status, 403, "a wrong CSRF token");
    let (status, _, _) = http(
        web,
        "POST",
        "/api/seen",
        &[("cookie", &cookie)],
        Some(json!({"request_id": inside})),
    )
    .await;
    assert_eq!(status, 403, "seen needs the CSRF token too");
    let (status, _, _) = http(
        web,
        "POST",
        "/api/decide",
        &[("cookie", &cookie), ("x-csrf-token", &csrf)],
        Some(decide(&outside)),
    )
    .await;
    assert_eq!(status, 403, "outside the approver's rules");
    let (status, _, body) = http(web, "GET", "/api/pending", &[("cookie", &cookie)], None).await;
    assert_eq!(status, 200);
    let listed: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(listed.len(), 1, "only what its rules cover");
    assert_eq!(snapshot(&queue), before, "nothing changed");

    // --- what is allowed works, under the credential's name ---------------
    let mut sub = queue.subscribe();
    let ok = client
        .decide(bearer(decide_request(&inside, "mallory"), token_of("ann")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.status, pb::DecisionStatus::Accepted as i32);
    let resolved = loop {
        if let hookwire_approvals::QueueEvent::Resolved { approver, .. } =
            sub.events.recv().await.unwrap()
        {
            break approver;
        }
    };
    assert_eq!(resolved.name(), "ann", "the credential names the approver");

    // The page's history: `payments` sees its own refusal and ann's
    // decision on what its rules cover, not ann's decision outside them.
    let ok = client
        .decide(bearer(decide_request(&outside, ""), token_of("ann")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.status, pb::DecisionStatus::Accepted as i32);
    let (status, _, body) = http(web, "GET", "/api/history", &[("cookie", &cookie)], None).await;
    assert_eq!(status, 200);
    let seen: Vec<(String, String, String)> = serde_json::from_str::<Vec<Value>>(&body)
        .unwrap()
        .iter()
        .map(|h| {
            let s = |k: &str| h[k].as_str().unwrap_or_default().to_owned();
            (s("request_id"), s("approver"), s("status"))
        })
        .collect();
    assert!(
        seen.contains(&(outside.clone(), "payments".into(), "forbidden".into())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(inside.clone(), "ann".into(), "accepted".into())),
        "{seen:?}"
    );
    assert!(
        !seen.contains(&(outside.clone(), "ann".into(), "accepted".into())),
        "{seen:?}"
    );

    // --- no secret anywhere ------------------------------------------------
    let logged = logs.text();
    assert!(
        logged.contains("approval call refused"),
        "the refusals are logged"
    );
    let mut secrets: Vec<String> = vec![
        HOST_TOKEN.into(),
        FORGED_TOKEN.into(),
        OLD_TOKEN.into(),
        GONE_TOKEN.into(),
        csrf.clone(),
    ];
    secrets.extend(APPROVERS.iter().map(|(_, t)| (*t).to_owned()));
    let hashes: Vec<String> = secrets.iter().map(|t| token_sha256(t)).collect();
    secrets.extend(hashes);
    for secret in &secrets {
        assert!(!logged.contains(secret.as_str()), "a secret in the logs");
        for e in &errors {
            assert!(!e.contains(secret.as_str()), "a secret in an error: {e}");
        }
    }
    service.shutdown().await.unwrap();
}
