//! The approval service under attack, with real servers on 127.0.0.1:
//! every refusal (no token, forged, expired or revoked token, an approver
//! outside its rules, a host credential deciding or watching, an approver
//! credential submitting) on gRPC and on the page's API, each leaving the
//! queue unchanged; no token or hash in any log line or error; TLS with the
//! wrong authority failing closed, and mTLS naming an approver; a rogue
//! service's oversized message failing the host closed; a declared
//! `approval_resolver_ms` reaching the service as the request's deadline.

use hookwire_testkit as common;

#[path = "approval_common/mod.rs"]
mod approval_common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire::approval::{ApprovalRequest, ApprovalResolution, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire::{AgentContext, InterceptionPoint, Verdict};
use hookwire_approvals::auth::token_sha256;
use hookwire_approvals::{
    Acceptance, Access, ApprovalQueue, ApproverConfig, HistoryQuery, HostLink, PrincipalConfig,
    ServiceTls,
};
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{ApprovalResolver, Host, InputRole, StreamResolver, TlsConfig, ToolCall};
use hookwire_testkit::rogue::RogueApprovals;
use hookwire_testkit::tls::{Authority, SanType};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status};

use approval_common::{APPROVERS, HOST_TOKEN, bearer, token_of};

const LONG: Duration = Duration::from_secs(60);
const OLD_TOKEN: &str = "hwa_test_expired_0123456789abcdef0123456789ab";
const GONE_TOKEN: &str = "hwa_test_revoked_0123456789abcdef0123456789ab";
const FORGED_TOKEN: &str = "hwa_forged_0123456789abcdef0123456789abcdef0123";

/// The shared test access list plus an expired and a revoked approver.
fn access() -> Access {
    let config = approval_common::access_config()
        .approver(ApproverConfig::from(
            PrincipalConfig::token("old", OLD_TOKEN).expires_at("2020-01-01T00:00:00Z"),
        ))
        .approver(ApproverConfig::token("gone", GONE_TOKEN))
        .revoke(GONE_TOKEN);
    Access::new(&config).expect("access list")
}

fn request(tool: &str, reason: &str) -> ApprovalRequest {
    let mut ctx = common::context_json(InterceptionPoint::PreToolCall);
    ctx.insert(
        "tool_call".into(),
        json!({"id": "tc", "name": tool, "args": {"amount": 100}}),
    );
    ApprovalRequest {
        context_identity: None,
        interception_point: InterceptionPoint::PreToolCall,
        verdict: Verdict::escalate(reason),
        context: AgentContext::from_json(Value::Object(ctx)).expect("context"),
    }
}

/// Two pending requests from an in-process host: one inside `payments`'
/// rules, one outside.
fn submit_two(queue: &ApprovalQueue) -> (HostLink, String, String) {
    let (link, _deliveries) = queue.connect_host("test-host");
    let inside = link
        .submit("in", request("wire_transfer", "payments.large"), LONG)
        .unwrap();
    let outside = link
        .submit("out", request("delete_account", "accounts.close"), LONG)
        .unwrap();
    (link, inside, outside)
}

fn decide_request(id: &str, approver_field: &str) -> pb::DecideRequest {
    let r = request("wire_transfer", "x");
    pb::DecideRequest {
        approver: approver_field.into(),
        resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
            request_id: id.into(),
            approver: String::new(),
            resolution: ApprovalResolution::approve(&r, Verdict::allow()),
        })),
    }
}

/// What the queue looks like: ids, who has seen them.
fn snapshot(queue: &ApprovalQueue) -> Vec<(String, Vec<String>)> {
    queue
        .pending()
        .into_iter()
        .map(|p| (p.id, p.seen_by))
        .collect()
}

/// Collects every log line of this test binary.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> Captured {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("one subscriber per binary");
    captured
}

/// A raw HTTP/1.1 exchange with the page: the status, the headers and the
/// body.
async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_leaves_the_queue_unchanged_and_no_secret_is_logged() {
    let logs = capture_logs();
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
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
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

/// The `name=value` of the session cookie a successful sign-in sets.
async fn sign_in(web: std::net::SocketAddr, token: &str) -> Result<String, u16> {
    let (status, head, _) = http(
        web,
        "POST",
        "/api/login",
        &[],
        Some(json!({"token": token})),
    )
    .await;
    if status != 200 {
        return Err(status);
    }
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a session cookie");
    Ok(line
        .split_once(':')
        .unwrap()
        .1
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned())
}

#[tokio::test]
async fn a_reloaded_access_list_revokes_tokens_sessions_and_open_streams() {
    let access = approval_common::access();
    let service =
        hookwire_approvals::ApprovalServer::with_queue(ApprovalQueue::new(), access.clone())
            .heartbeat_interval(Duration::from_millis(100))
            .spawn_local()
            .await
            .expect("approval service");
    let web = service.web_addr().expect("page");
    let ann = sign_in(web, token_of("ann")).await.expect("ann signs in");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 200);
    let mut client = ApprovalServiceClient::connect(service.endpoint())
        .await
        .unwrap();
    let (_up, rx) = mpsc::channel::<pb::ApproverMessage>(1);
    let mut watching = client
        .watch(bearer(ReceiverStream::new(rx), token_of("ann")))
        .await
        .expect("ann watches")
        .into_inner();
    assert!(watching.message().await.unwrap().is_some());
    // A host waits on a request.
    let resolver = StreamResolver::builder(service.endpoint())
        .bearer_token(HOST_TOKEN)
        .deadline(Duration::from_secs(60))
        .build()
        .expect("resolver");
    let asking = tokio::spawn({
        let resolver = resolver.clone();
        async move {
            resolver
                .resolve(&request("wire_transfer", "big_transfer"))
                .await
        }
    });
    let until = Instant::now() + Duration::from_secs(10);
    while service.queue().is_empty() {
        assert!(Instant::now() < until, "the request arrives");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let generation = access.generation();

    // An invalid list changes nothing.
    let mut broken = approval_common::access_config();
    broken.revoked_token_sha256.push("not a hash".into());
    assert!(access.reload(&broken).is_err());
    assert_eq!(access.generation(), generation);
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 200, "the list in force stays");

    // Ann's token and the host's revoked: her page session, her open
    // Watch stream and every new call of hers are refused; the host's
    // stream ends and its request is withdrawn (failed closed on the
    // host); bob is untouched.
    access
        .reload(
            &approval_common::access_config()
                .revoke(token_of("ann"))
                .revoke(HOST_TOKEN),
        )
        .expect("a valid list");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 401, "her session ended");
    assert_eq!(sign_in(web, token_of("ann")).await, Err(401));
    let bob = sign_in(web, token_of("bob")).await.expect("bob signs in");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &bob)], None).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match watching.message().await {
                Ok(Some(_)) => {}
                Ok(None) => return Code::Ok,
                Err(status) => return status.code(),
            }
        }
    })
    .await
    .expect("her open stream ended within a heartbeat");
    assert_eq!(ended, Code::Unauthenticated);
    let refused = client
        .decide(bearer(
            pb::DecideRequest {
                approver: String::new(),
                resolution: None,
            },
            token_of("ann"),
        ))
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::Unauthenticated);
    let failed = tokio::time::timeout(Duration::from_secs(5), asking)
        .await
        .expect("the host's request ended")
        .expect("the asking task");
    assert!(failed.is_err(), "{failed:?}");
    assert!(service.queue().is_empty(), "withdrawn");
    service.shutdown().await.unwrap();
}
