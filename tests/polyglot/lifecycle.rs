//! `Describe`-driven binding, the fail-closed meaning of a service
//! author's failures, a graceful stop on SIGTERM, and an informational
//! latency probe.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hookwire::{AgentContext, InterceptionPoint, Verdict};
use hookwire_agent::Agent;
use hookwire_client::{
    BoxError, InputRole, InterceptorBinding, Session, ShutdownReason, ToolCall, interceptor_fn,
};
use hookwire_testkit as testkit;
use serde_json::{Map, json};

use InterceptionPoint::*;

use crate::fixtures::{
    DESCRIBE_TIMEOUT, REMOTE, answer, calls, host_with_passthrough, passthrough, reason, scripted,
};
use crate::service::{Lang, Service};

/// A service that declares `pre_tool_call` alone is bound there alone: it
/// receives nothing else, and a point left with no binding denies with
/// `host_error:no_interceptor` in enforce mode.
pub async fn describe_binds_the_declared_points_only(lang: Lang) {
    let service = Service::spawn(lang, &["--points", "pre_tool_call"]);

    let (host, records, _) = host_with_passthrough(&service).await;
    let manifests = host.describe_remotes(DESCRIBE_TIMEOUT).await;
    let manifest = &manifests[0].1.as_ref().unwrap().manifest;
    assert_eq!(manifest.name, lang.service_name());
    assert_eq!(manifest.spec, "agent-hooks/0.1");
    assert_eq!(manifest.points, [PreToolCall]);
    for point in InterceptionPoint::ALL {
        let expected: &[&str] = if point == PreToolCall {
            &["passthrough", REMOTE]
        } else {
            &["passthrough"]
        };
        assert_eq!(host.chain(point), expected, "{point:?}");
    }
    let (model, _, tools, invoked) = scripted(vec![
        calls(&[
            ("c1", "bash", json!({"cmd": "ls"})),
            ("c2", "bash", json!({"cmd": "rm -rf /"})),
        ]),
        answer("done"),
    ]);
    let mut agent = Agent::new(host.session("subscribed").unwrap(), model, tools);
    let (turn, _) = agent
        .run_once(json!("hello"), InputRole::User)
        .await
        .unwrap();
    assert!(turn.is_completed());
    assert_eq!(
        invoked.lock().unwrap().len(),
        1,
        "rm -rf was denied by the service"
    );
    assert_eq!(
        records.session("subscribed").len(),
        2 + 1 + 2 * 2 + 2 + 1 + 1
    );
    let counts = service.calls_by_point();
    assert_eq!(counts, BTreeMap::from([("pre_tool_call".to_owned(), 2)]));

    // Only the service, bound by its manifest, plus a control at the session
    // boundaries: every other point has no interceptor and denies.
    let (b, _) = testkit::host();
    let boundaries = InterceptorBinding::local(
        "boundaries",
        interceptor_fn(|_ctx: AgentContext| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
    .at([AgentStartup, AgentShutdown]);
    let host = b
        .bind(boundaries)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("unbound").unwrap();
    assert!(session.start(["bash"]).await.unwrap().proceeds());
    let e = session
        .input(json!("hello"), InputRole::User)
        .await
        .unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "host_error:no_interceptor");
    // The denied input began no turn: the typed methods refuse what would
    // result from it (§3.1 rule 3); the raw path still reaches each point.
    let call = ToolCall::new("c3", "bash", json!({"cmd": "ls"}));
    let refused = session.pre_tool_call(&call).await.unwrap_err();
    assert!(
        matches!(refused, hookwire_client::Error::OutOfOrder { .. }),
        "{refused:?}"
    );
    let mut members = Map::new();
    members.insert("tool_call".into(), json!(call));
    let e = session
        .emit(InterceptionPoint::PreToolCall, members.clone())
        .await
        .unwrap();
    assert!(e.proceeds(), "pre_tool_call is bound: {:?}", e.verdict());
    members.insert(
        "tool_result".into(),
        json!({"value": "", "is_error": false}),
    );
    let e = session
        .emit(InterceptionPoint::PostToolCall, members)
        .await
        .unwrap();
    assert_eq!(reason(&e), "host_error:no_interceptor");
    let mut output = Map::new();
    output.insert("output".into(), json!({"content": "bye"}));
    let e = session
        .emit(InterceptionPoint::Output, output)
        .await
        .unwrap();
    assert_eq!(e.reason(), Some("host_error:no_interceptor"));
    assert!(
        session
            .shutdown(ShutdownReason::Completed)
            .await
            .unwrap()
            .proceeds()
    );
    assert_eq!(
        service.calls_by_point(),
        BTreeMap::from([("pre_tool_call".to_owned(), 3)])
    );

    // Without any binding at agent_startup the session never starts.
    let (b, _) = testkit::host();
    let host = b
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("no-start").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(reason(&e), "host_error:no_interceptor");
}

/// What a service author's failures become: a raising handler is
/// `host_error:interceptor_failed`, a slow one `host_error:interceptor_timeout`
/// (the host's deadline, also sent as `grpc-timeout`), and the service keeps
/// serving afterwards.
pub async fn failures_fail_closed(lang: Lang) {
    let service = Service::spawn(lang, &["--probes"]);
    let (pass, _) = passthrough();
    let (b, _) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()).timeout(Duration::from_millis(400)))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("failures").unwrap();
    session.start(["fail", "sleep"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let e = session
        .pre_tool_call(&ToolCall::new("f", "fail", json!({})))
        .await
        .unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "host_error:interceptor_failed");
    assert!(
        !e.verdict()
            .message
            .clone()
            .unwrap_or_default()
            .contains("probe failure"),
        "no handler text leaks"
    );

    let started = Instant::now();
    let e = session
        .pre_tool_call(&ToolCall::new("s", "sleep", json!({"ms": 3000})))
        .await
        .unwrap();
    assert_eq!(
        reason(&e),
        "host_error:interceptor_timeout",
        "{:?}",
        e.verdict()
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );

    let e = session
        .pre_tool_call(&ToolCall::new("s2", "sleep", json!({"ms": 0})))
        .await
        .unwrap();
    assert!(e.proceeds(), "still serving: {:?}", e.verdict());
}

/// SIGTERM stops the service gracefully: it exits 0, promptly.
pub async fn sigterm_stops_gracefully(lang: Lang) {
    let service = Service::spawn(lang, &[]);
    let (host, _, _) = host_with_passthrough(&service).await;
    let session = host.session("stop").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let e = session
        .pre_tool_call(&ToolCall::new("c", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    assert!(e.proceeds());
    let status = service.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}

/// Per-call latency of each service seen from the host (sequential
/// `pre_tool_call` emissions over one channel). Informational:
/// `cargo test --release -p hookwire-tests --test polyglot -- --ignored --nocapture latency`.
pub async fn latency(lang: Lang) {
    let service = Service::spawn(lang, &["--points", "pre_tool_call"]);
    let (b, _) = testkit::host();
    let host = b
        .bind(InterceptorBinding::remote(REMOTE, service.url()).at([
            AgentStartup,
            Input,
            PreToolCall,
        ]))
        .build()
        .unwrap();
    let session: Session = host.session("latency").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    // Each call its own id: a call's pre_tool_call comes once (§3.1 rule 5).
    let call = |i: usize| {
        ToolCall::new(
            format!("c{i}"),
            "bash",
            json!({"cmd": "ls -la /tmp", "timeout_s": 30}),
        )
    };
    for i in 0..50 {
        session.pre_tool_call(&call(i)).await.unwrap();
    }
    let mut samples: Vec<Duration> = Vec::new();
    for i in 50..550 {
        let call = call(i);
        let t = Instant::now();
        assert!(session.pre_tool_call(&call).await.unwrap().proceeds());
        samples.push(t.elapsed());
    }
    samples.sort();
    let pct = |p: usize| samples[samples.len() * p / 100];
    eprintln!(
        "{}: pre_tool_call round trip p50 {:?}, p90 {:?}, p99 {:?}",
        lang.label(),
        pct(50),
        pct(90),
        pct(99)
    );
}
