//! How the host dispatches: sequences under concurrency, parallel profiles,
//! binding by manifest, cancelling timed-out calls.

use super::*;

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
