//! The host against real interceptor services on 127.0.0.1:0: every point
//! reaches the service with its fields, verdicts are applied to the action,
//! and every failure mode fails closed with its reserved reason.

use hookwire_testkit as common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Scripted, bash, host, host_with, target_str};
use hookwire::pb::interceptor_server::{Interceptor as PbInterceptor, InterceptorServer};
use hookwire::{Composition, Decision, InterceptionPoint, Profile, Verdict, pb};
use hookwire_client::{
    InputRole, InterceptorBinding, ModelResponse, ShutdownReason, ToolCall, ToolResult,
};
use serde_json::{Map, Value, json};
use tonic::{Request, Response, Status};

#[tokio::test]
async fn every_point_reaches_the_remote_with_its_fields() {
    let recorder = Scripted::allow_all("recorder");
    let server = recorder.clone().serve().await;
    let (host, records) = host_with(&[("recorder", &server)]);
    let mut members = Map::new();
    members.insert(
        "trace".into(),
        json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7"}),
    );
    members.insert(
        "extensions".into(),
        json!({"acme": {"tier": 3, "ratio": 0.5, "tags": ["a", null, "é😀"]}}),
    );
    let session = host.session_with("s-fields", members).unwrap();

    session.start(["bash", "search"]).await.unwrap();
    session
        .input(json!("hello"), InputRole::User)
        .await
        .unwrap();
    session
        .pre_model_call("m1", json!([{"role": "user", "content": "hello"}]))
        .await
        .unwrap();
    let response = ModelResponse {
        content: Value::Null,
        tool_calls: vec![bash("ls")],
        finish_reason: "tool_calls".into(),
    };
    session.post_model_call("m1", &response).await.unwrap();
    session.pre_tool_call(&bash("ls")).await.unwrap();
    let result = ToolResult {
        value: json!({"stdout": "a\nb", "code": 0}),
        is_error: false,
    };
    session.post_tool_call(&bash("ls"), &result).await.unwrap();
    session
        .output(json!({"text": "done", "n": 2}))
        .await
        .unwrap();
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let seen = recorder.seen();
    let points: Vec<_> = seen.iter().map(|c| c.point()).collect();
    assert_eq!(points, InterceptionPoint::ALL);
    for (i, ctx) in seen.iter().enumerate() {
        let j = ctx.to_json();
        assert_eq!(j["sequence"], json!(i));
        assert_eq!(j["spec"], json!("agent-hooks/0.1"));
        assert_eq!(
            j["agent"],
            json!({"id": "test-agent", "framework": "hookwire"})
        );
        assert_eq!(j["session"], json!({"id": "s-fields"}));
        assert_eq!(
            j["extensions"]["acme"],
            json!({"tier": 3, "ratio": 0.5, "tags": ["a", null, "é😀"]})
        );
        assert_eq!(j["trace"]["span_id"], json!("00f067aa0ba902b7"));
        assert!(j["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    let j: Vec<Value> = seen.iter().map(|c| c.to_json()).collect();
    assert_eq!(
        j[0]["agent_init"],
        json!({"tools_registered": ["bash", "search"]})
    );
    assert_eq!(j[0]["target"], j[0]["agent_init"]);
    assert_eq!(j[1]["input"], json!({"content": "hello", "role": "user"}));
    assert_eq!(j[2]["model"], json!({"id": "m1"}));
    assert_eq!(
        j[2]["target"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(j[3]["response"]["tool_calls"][0]["name"], json!("bash"));
    assert_eq!(
        j[4]["tool_call"],
        json!({"id": "call-1", "name": "bash", "args": {"cmd": "ls", "timeout_s": 30}})
    );
    assert_eq!(j[4]["target"], json!({"cmd": "ls", "timeout_s": 30}));
    assert_eq!(
        j[5]["tool_result"],
        json!({"value": {"stdout": "a\nb", "code": 0}, "is_error": false})
    );
    assert_eq!(j[5]["target"], json!({"stdout": "a\nb", "code": 0}));
    assert_eq!(j[6]["target"], json!({"content": {"text": "done", "n": 2}}));
    assert_eq!(j[7]["summary"], json!({"reason": "completed"}));

    let recs = records.session("s-fields");
    assert_eq!(recs.len(), 8);
    assert!(recs.iter().all(|r| r.verdict.decision == Decision::Allow));
    assert!(recs.iter().all(|r| {
        r.input_identity
            .as_deref()
            .is_some_and(|i| i.starts_with("sha256:"))
    }));
    assert_eq!(
        recs[0].trace.as_ref().unwrap()["trace_id"],
        json!("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    server.shutdown().await.unwrap();
}

/// A transform at `pre_tool_call` rewrites what the tool receives.
#[tokio::test]
async fn transformed_tool_args_are_what_the_tool_receives() {
    let rewriter = Scripted::new("rewriter", |ctx| match target_str(ctx, "cmd") {
        Some("rm -rf /") => Verdict::transform("$target.cmd", json!("echo refused")),
        _ => Verdict::allow(),
    });
    let server = rewriter.serve().await;
    let (host, records) = host_with(&[("rewriter", &server)]);
    let session = host.session("s-transform").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let mut invoked = Vec::new();
    let mut run_tool = |args: &Value| invoked.push(args.clone());
    let decision = session.pre_tool_call(&bash("rm -rf /")).await.unwrap();
    assert!(decision.proceeds());
    run_tool(decision.target().unwrap());
    assert_eq!(invoked, [json!({"cmd": "echo refused", "timeout_s": 30})]);

    let rec = records.session("s-transform").pop().unwrap();
    assert_eq!(rec.verdict.decision, Decision::Transform);
    assert_eq!(rec.verdict.transform.as_ref().unwrap().path, "$target.cmd");
    assert_eq!(
        rec.verdict.transform.as_ref().unwrap().value,
        Value::Null,
        "record is payload-free"
    );
    assert_ne!(rec.input_identity, rec.enforced_identity);
    server.shutdown().await.unwrap();
}

/// allow, deny and transform at each point whose target may be rewritten.
#[tokio::test]
async fn allow_deny_transform_at_every_transformable_point() {
    let server = Scripted::new("by-point", |ctx| {
        let mode = ctx
            .get("extensions")
            .and_then(|e| e["test"]["mode"].as_str())
            .unwrap_or("allow");
        match mode {
            "deny" => Verdict::deny("test:deny"),
            "transform" => Verdict::transform("$target", transformed_target(ctx.point())),
            _ => Verdict::allow(),
        }
    })
    .serve()
    .await;
    for mode in ["allow", "deny", "transform"] {
        let (host, _) = host_with(&[("by-point", &server)]);
        let mut members = Map::new();
        members.insert("extensions".into(), json!({"test": {"mode": "allow"}}));
        let session = host.session_with(format!("s-{mode}"), members).unwrap();
        session.start(["bash"]).await.unwrap();
        // Switch the service's behaviour per emission through an extension.
        let set = |point| {
            let mut m = Map::new();
            m.insert("extensions".into(), json!({"test": {"mode": mode}}));
            (point, m)
        };
        let emissions = vec![
            emit(&session, set(InterceptionPoint::Input), json!({"input": {"content": "hi", "role": "user"}})).await,
            emit(&session, set(InterceptionPoint::PreModelCall), json!({"model": {"id": "m"}, "messages": [{"role": "user", "content": "hi"}]})).await,
            emit(&session, set(InterceptionPoint::PostModelCall), json!({"model": {"id": "m"}, "response": {"content": "x", "tool_calls": [], "finish_reason": "stop"}})).await,
            emit(&session, set(InterceptionPoint::PreToolCall), json!({"tool_call": {"id": "c", "name": "bash", "args": {"cmd": "ls"}}})).await,
            emit(&session, set(InterceptionPoint::PostToolCall), json!({"tool_call": {"id": "c", "name": "bash", "args": {"cmd": "ls"}}, "tool_result": {"value": "out", "is_error": false}})).await,
            emit(&session, set(InterceptionPoint::Output), json!({"output": {"content": "bye"}})).await,
        ];
        for e in emissions {
            let point = e.record().interception_point;
            match mode {
                "allow" => assert!(
                    e.proceeds() && e.verdict().decision == Decision::Allow,
                    "{point}"
                ),
                "deny" => {
                    assert!(!e.proceeds(), "{point}");
                    assert_eq!(e.reason(), Some("test:deny"));
                    assert_eq!(e.record().decided_by, Some(0));
                }
                _ => {
                    assert!(e.proceeds(), "{point}");
                    assert_eq!(e.target(), Some(&transformed_target(point)), "{point}");
                }
            }
        }
    }
    server.shutdown().await.unwrap();
}

fn transformed_target(point: InterceptionPoint) -> Value {
    match point {
        InterceptionPoint::Input => json!({"content": "[redacted]", "role": "user"}),
        InterceptionPoint::PreModelCall => json!([{"role": "system", "content": "be safe"}]),
        InterceptionPoint::PostModelCall => {
            json!({"content": "rewritten", "tool_calls": [], "finish_reason": "stop"})
        }
        InterceptionPoint::PreToolCall => json!({"cmd": "echo safe"}),
        InterceptionPoint::PostToolCall => json!({"redacted": true, "n": 9_007_199_254_740_991u64}),
        _ => json!({"content": "rewritten output"}),
    }
}

async fn emit(
    session: &hookwire_client::Session,
    (point, mut members): (InterceptionPoint, Map<String, Value>),
    conditional: Value,
) -> hookwire_client::Emission {
    members.extend(conditional.as_object().unwrap().clone());
    session.emit(point, members).await.unwrap()
}

#[tokio::test]
async fn transforms_at_session_boundaries_are_forbidden() {
    let server = Scripted::new("boundary", |ctx| match ctx.point() {
        InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown => {
            Verdict::transform("$target", json!({}))
        }
        _ => Verdict::allow(),
    })
    .serve()
    .await;
    let (host, _) = host_with(&[("boundary", &server)]);
    let session = host.session("s-boundary").unwrap();
    let start = session.start(["bash"]).await.unwrap();
    assert!(!start.proceeds());
    assert_eq!(
        start.reason(),
        Some("host_error:transform_target_forbidden")
    );
    // §6.1a: nothing but shutdown after a denied startup, with reason error.
    assert!(session.input(json!("x"), InputRole::User).await.is_err());
    let end = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(end.reason(), Some("host_error:transform_target_forbidden"));
    assert_eq!(
        end.context().get("summary"),
        Some(&json!({"reason": "error"}))
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_verdicts_from_a_service_are_verdict_invalid() {
    let mut no_body = Verdict::allow();
    no_body.decision = Decision::Transform;
    let cases = vec![
        Verdict::deny("host_error:interceptor_failed"),
        no_body,
        Verdict::allow().with_approval(Map::new()),
        Verdict::allow().with_evidence(
            json!({"blob": "x".repeat(20_000)})
                .as_object()
                .unwrap()
                .clone(),
        ),
    ];
    for verdict in cases {
        let server = Scripted::new("liar", move |_| verdict.clone())
            .serve()
            .await;
        let (host, _) = host_with(&[("liar", &server)]);
        let session = host.session("s-invalid").unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(e.reason(), Some("host_error:verdict_invalid"));
        assert_eq!(e.record().decided_by, Some(0));
        server.shutdown().await.unwrap();
    }
}

/// A service that answers with raw wire messages no SDK would build.
#[derive(Clone)]
struct RawService {
    respond: Arc<dyn Fn() -> Result<pb::InterceptorResponse, Status> + Send + Sync>,
}

macro_rules! raw_rpcs {
    ($($method:ident: $req:ty),*) => {
        #[tonic::async_trait]
        impl PbInterceptor for RawService {
            $(async fn $method(&self, _: Request<$req>) -> Result<Response<pb::InterceptorResponse>, Status> {
                (self.respond)().map(Response::new)
            })*
            async fn describe(&self, _: Request<pb::DescribeRequest>) -> Result<Response<pb::Manifest>, Status> {
                Err(Status::unimplemented("raw"))
            }
            type MultiplexStream = hookwire_server::MultiplexStream;
            async fn multiplex(&self, _: Request<tonic::Streaming<pb::MultiplexRequest>>) -> Result<Response<Self::MultiplexStream>, Status> {
                Err(Status::unimplemented("raw"))
            }
        }
    };
}

raw_rpcs!(
    agent_startup: pb::AgentStartupRequest, input: pb::InputRequest,
    pre_model_call: pb::PreModelCallRequest, post_model_call: pb::PostModelCallRequest,
    pre_tool_call: pb::PreToolCallRequest, post_tool_call: pb::PostToolCallRequest,
    output: pb::OutputRequest, agent_shutdown: pb::AgentShutdownRequest
);

async fn serve_raw(
    respond: impl Fn() -> Result<pb::InterceptorResponse, Status> + Send + Sync + 'static,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let svc = InterceptorServer::new(RawService {
        respond: Arc::new(respond),
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    (format!("http://{addr}"), stop)
}

fn json_value(text: &str) -> Option<pb::JsonValue> {
    Some(pb::JsonValue { json: text.into() })
}

#[tokio::test]
async fn malformed_wire_responses_fail_closed() {
    let allow = || pb::Verdict {
        decision: pb::Decision::Allow as i32,
        ..Default::default()
    };
    let cases: Vec<(&str, pb::InterceptorResponse)> = vec![
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: None,
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict::default()),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    decision: 42,
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    evidence: json_value("{not json"),
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    evidence: json_value("\"uri\""),
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    decision: pb::Decision::Transform as i32,
                    transform: Some(pb::Transform {
                        path: "$target.cmd".into(),
                        value: json_value("184467440737095516160"),
                    }),
                    ..Default::default()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(allow()),
                extensions: [(
                    "Bad-Namespace".to_string(),
                    pb::JsonValue { json: "1".into() },
                )]
                .into_iter()
                .collect(),
            },
        ),
    ];
    for (expected, response) in cases {
        let (endpoint, stop) = serve_raw(move || Ok(response.clone())).await;
        let (b, _) = host();
        let host = b
            .bind(InterceptorBinding::remote("raw", endpoint))
            .build()
            .unwrap();
        let session = host.session("s-raw").unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(e.reason(), Some(format!("host_error:{expected}").as_str()));
        assert!(!e.proceeds());
        let _ = stop.send(());
    }
}

#[tokio::test]
async fn error_statuses_and_panics_are_interceptor_failed() {
    let (endpoint, stop) = serve_raw(|| Err(Status::internal("boom"))).await;
    let (b, _) = host();
    let host = b
        .bind(InterceptorBinding::remote("raw", endpoint))
        .build()
        .unwrap();
    let session = host.session("s-status").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    assert!(
        !e.verdict()
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("boom"),
        "no service text in the record"
    );
    let _ = stop.send(());

    let server = Scripted::new("panics", |_| panic!("interceptor bug"))
        .serve()
        .await;
    let (host, _) = host_with(&[("panics", &server)]);
    let session = host.session("s-panic").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unreachable_endpoint_is_interceptor_failed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (b, records) = host();
    let host = b
        .bind(InterceptorBinding::remote("gone", endpoint))
        .build()
        .unwrap();
    let session = host.session("s-gone").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    assert_eq!(records.records()[0].decided_by, Some(0));
    assert_eq!(
        records.records()[0].verdicts[0].name.as_deref(),
        Some("gone")
    );
}

#[tokio::test]
async fn slow_service_is_interceptor_timeout_within_the_bound() {
    let server = Scripted::allow_all("slow")
        .with_delay(Duration::from_secs(3))
        .serve()
        .await;
    let (b, _) = host();
    let host = b
        .bind(
            InterceptorBinding::remote("slow", server.endpoint())
                .timeout(Duration::from_millis(200)),
        )
        .build()
        .unwrap();
    let session = host.session("s-slow").unwrap();
    let started = Instant::now();
    let e = session.start(["bash"]).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        e.reason(),
        Some("host_error:interceptor_timeout"),
        "{:?}",
        e.verdict().message
    );
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    drop(server);
}

#[tokio::test]
async fn enforce_mode_without_interceptors_denies() {
    let (b, _) = host();
    let host = b.build().unwrap();
    let session = host.session("s-empty").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:no_interceptor"));
    assert_eq!(e.record().decided_by, None);
    assert!(!e.proceeds());
}

#[tokio::test]
async fn concurrent_emissions_get_distinct_increasing_sequences() {
    let server = Scripted::allow_all("counter")
        .with_delay(Duration::from_millis(5))
        .serve()
        .await;
    let (host, records) = host_with(&[("counter", &server)]);
    let session = Arc::new(host.session("s-concurrent").unwrap());
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move {
                let call = ToolCall::new(format!("c{i}"), "bash", json!({"i": i}));
                s.pre_tool_call(&call).await.unwrap().record().sequence
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for t in tasks {
        seqs.push(t.await.unwrap());
    }
    seqs.sort_unstable();
    // startup 0, input 1, then the hundred calls.
    assert_eq!(seqs, (2..=101).collect::<Vec<i64>>());
    let end = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(
        end.record().sequence,
        102,
        "shutdown follows every other point"
    );
    assert_eq!(records.session("s-concurrent").len(), 103);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn parallel_profiles_dispatch_every_interceptor_at_once() {
    let delay = Duration::from_millis(250);
    let mut servers = Vec::new();
    for i in 0..4 {
        servers.push(
            Scripted::allow_all(&format!("slow-{i}"))
                .with_delay(delay)
                .serve()
                .await,
        );
    }
    let (mut b, _) = host();
    for (i, s) in servers.iter().enumerate() {
        b = b.bind(InterceptorBinding::remote(
            format!("slow-{i}"),
            s.endpoint(),
        ));
    }
    let host = b
        .composition(Composition::new(Profile::ParallelStrictest))
        .build()
        .unwrap();
    let session = host.session("s-fanout").unwrap();
    // Warm the four connections so the measurement is about dispatch.
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let started = Instant::now();
    let e = session.pre_tool_call(&bash("ls")).await.unwrap();
    let took = started.elapsed();
    assert!(e.proceeds());
    assert_eq!(e.record().verdicts.len(), 4);
    // Four 250 ms interceptors one after another take a second; at once,
    // a little over 250 ms.
    assert!(took < delay * 2, "parallel fan-out took {took:?}");
}

/// Bound by its manifest: a service asking for `pre_tool_call` alone
/// receives nothing else, and a point left without a binding denies.
#[tokio::test]
async fn describe_binds_a_service_at_its_declared_points_only() {
    #[derive(Clone, Default)]
    struct ToolsOnly(Arc<std::sync::Mutex<Vec<InterceptionPoint>>>);

    #[hookwire_server::async_trait]
    impl hookwire_server::Interceptor for ToolsOnly {
        type Response = Verdict;
        fn manifest(&self) -> hookwire::Manifest {
            let mut m = hookwire_server::manifest("tools-only", "1.0.0");
            m.points = vec![InterceptionPoint::PreToolCall];
            m
        }
        async fn intercept(&self, ctx: &hookwire::AgentContext) -> Verdict {
            hookwire_testkit::check_context(ctx);
            self.0.lock().unwrap().push(ctx.point());
            Verdict::allow()
        }
    }

    let service = ToolsOnly::default();
    let server = hookwire_server::spawn_local(service.clone()).await.unwrap();
    let (b, records) = host();
    let h = b
        .bind(InterceptorBinding::remote("tools-only", server.endpoint()))
        .connect(Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(h.chain(InterceptionPoint::PreToolCall), ["tools-only"]);
    assert!(h.chain(InterceptionPoint::Input).is_empty());

    let session = h.session("s-describe").unwrap();
    let start = session.start(["bash"]).await.unwrap();
    assert_eq!(start.reason(), Some("host_error:no_interceptor"));
    assert_eq!(start.record().interceptors_registered, 0);
    assert!(
        session.input(json!("x"), InputRole::User).await.is_err(),
        "startup denied"
    );

    let (b, _) = host();
    let allow = Scripted::allow_all("everywhere").serve().await;
    let h = b
        .bind(InterceptorBinding::remote("everywhere", allow.endpoint()))
        .bind(InterceptorBinding::remote("tools-only", server.endpoint()))
        .connect(Duration::from_secs(2))
        .await
        .unwrap();
    let session = h.session("s-describe-2").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("x"), InputRole::User).await.unwrap();
    let e = session.pre_tool_call(&bash("ls")).await.unwrap();
    assert_eq!(e.record().interceptors_registered, 2);
    session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(*service.0.lock().unwrap(), [InterceptionPoint::PreToolCall]);
    assert!(!records.records().is_empty());

    // A service that cannot describe itself fails the build.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (b, _) = host();
    let err = b
        .bind(InterceptorBinding::remote("gone", gone))
        .connect(Duration::from_millis(500))
        .await
        .expect_err("describe failure is a build error");
    assert!(err.to_string().contains("gone"), "{err}");
}

/// On timeout the host cancels the gRPC call: the service's handler is
/// dropped mid-flight instead of running to completion.
#[tokio::test]
async fn a_timed_out_call_is_cancelled_on_the_service() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Clone, Default)]
    struct Stuck {
        finished: Arc<AtomicUsize>,
        dropped: Arc<AtomicUsize>,
    }
    struct DropGuard(Arc<AtomicUsize>);
    impl Drop for DropGuard {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[hookwire_server::async_trait]
    impl hookwire_server::Interceptor for Stuck {
        type Response = Verdict;
        fn manifest(&self) -> hookwire::Manifest {
            hookwire_server::manifest("stuck", "1.0.0")
        }
        async fn intercept(&self, ctx: &hookwire::AgentContext) -> Verdict {
            hookwire_testkit::check_context(ctx);
            let _guard = DropGuard(self.dropped.clone());
            tokio::time::sleep(Duration::from_secs(5)).await;
            self.finished.fetch_add(1, Ordering::SeqCst);
            Verdict::allow()
        }
    }

    let service = Stuck::default();
    let server = hookwire_server::spawn_local(service.clone()).await.unwrap();
    let (b, _) = host();
    let h = b
        .bind(
            InterceptorBinding::remote("stuck", server.endpoint())
                .timeout(Duration::from_millis(150)),
        )
        .build()
        .unwrap();
    let session = h.session("s-cancel").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(
        e.reason(),
        Some("host_error:interceptor_timeout"),
        "{:?}",
        e.verdict().message
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    while service.dropped.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(service.dropped.load(Ordering::SeqCst), 1, "handler dropped");
    assert_eq!(
        service.finished.load(Ordering::SeqCst),
        0,
        "handler never completed"
    );
    drop(server);
}

/// `connect` binds a service where its manifest says only when the binding
/// states no `at`: a stated set is kept as stated, wider or narrower than
/// the manifest (the declared path has the same rule,
/// `tests/declared_host.rs`).
#[tokio::test]
async fn connect_narrows_an_absent_at_only_and_keeps_a_stated_one() {
    let tools_only = Scripted::allow_all("tools-only")
        .declaring(&[InterceptionPoint::PreToolCall])
        .serve()
        .await;
    let (b, _) = host();
    let h = b
        .bind(InterceptorBinding::remote(
            "described",
            tools_only.endpoint(),
        ))
        .bind(
            InterceptorBinding::remote("stated", tools_only.endpoint())
                .at([InterceptionPoint::Input, InterceptionPoint::Output]),
        )
        .connect(Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(h.chain(InterceptionPoint::PreToolCall), ["described"]);
    assert_eq!(h.chain(InterceptionPoint::Input), ["stated"]);
    assert_eq!(h.chain(InterceptionPoint::Output), ["stated"]);
    assert!(h.chain(InterceptionPoint::AgentStartup).is_empty());
    tools_only.shutdown().await.unwrap();
}
