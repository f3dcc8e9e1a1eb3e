//! A binding with several replicas, against real interceptor servers on
//! 127.0.0.1:0: traffic moves off a replica that stops, a fleet with no
//! replica left denies at once and notices recovery, a call is sent to a
//! second replica only when the first attempt never reached a handler,
//! and a replica whose health `Watch` turns `NOT_SERVING` is ejected.

use hookwire_testkit as common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Scripted, host, metric_value};
use hookwire::InterceptionPoint::{AgentStartup, Input, PreToolCall};
use hookwire::pb::interceptor_server::SERVICE_NAME;
use hookwire::{AgentContext, BoxError, Verdict};
use hookwire_client::prometheus_client::encoding::text::encode;
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{
    Host, HostMetrics, InputRole, InterceptorBinding, RecordLog, Session, ToolCall,
};
use hookwire_server::Server;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tonic_health::ServingStatus;

const FAILED: &str = "host_error:interceptor_failed";

/// Allows the start and the input that open a session's turn (the fleet
/// is bound at tool calls only).
fn opening() -> InterceptorBinding {
    InterceptorBinding::local("opening", Scripted::allow_all("opening")).at([AgentStartup, Input])
}

/// A host whose binding `fleet` (at `pre_tool_call` only) is `binding`.
fn fleet_host(binding: InterceptorBinding) -> (Host, RecordLog, Registry) {
    let (builder, records) = host();
    let mut registry = Registry::default();
    let metrics = HostMetrics::register(&mut registry);
    let host = builder
        .bind(opening())
        .bind(binding.at([PreToolCall]))
        .metrics(metrics)
        .build()
        .expect("valid host");
    (host, records, registry)
}

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).unwrap();
    text
}

/// A started session with its turn open, ready for tool calls.
async fn open(host: &Host, id: &str) -> Session {
    let session = host.session(id).unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    session
}

/// The `n`-th tool call of a session (each with an id of its own).
fn call(n: usize) -> ToolCall {
    ToolCall::new(format!("call-{n}"), "bash", json!({"cmd": "ls"}))
}

/// Emits one tool call: whether it was allowed, and the reason of a deny.
async fn emit(session: &Session, n: usize) -> Result<(), String> {
    let e = session.pre_tool_call(&call(n)).await.unwrap();
    if e.proceeds() {
        Ok(())
    } else {
        Err(e.reason().unwrap_or_default().to_owned())
    }
}

/// An address nothing listens on.
fn gone() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    endpoint
}

/// A TCP front for a replica that can be killed like a process: its
/// listener and every connection closed at once, nothing drained. It can
/// come back on the same address.
struct Front {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Front {
    /// Forwards `addr` (127.0.0.1:0 for any port) to `backend`.
    async fn open(backend: SocketAddr, addr: SocketAddr) -> Self {
        let listener = TcpListener::bind(addr).await.expect("bind the front");
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self { addr, task }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Kills it: the accept loop and every connection end now.
    async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// Polls `done` until it holds; fails the test after 20 s (a bound on a
/// broken host, not a timing the assertions rely on).
async fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "waited for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_moves_to_the_other_replicas_when_one_is_killed() {
    let services: Vec<Scripted> = (0..3)
        .map(|i| Scripted::allow_all(&format!("r{i}")))
        .collect();
    let mut servers = Vec::new();
    let mut fronts = Vec::new();
    for s in &services {
        let server = s.clone().serve().await;
        fronts.push(Some(Front::open(server.addr(), any_port()).await));
        servers.push(server);
    }
    let endpoints: Vec<String> = fronts
        .iter()
        .map(|f| f.as_ref().unwrap().endpoint())
        .collect();
    let (host, records, registry) = fleet_host(
        InterceptorBinding::remote_replicas("fleet", endpoints).timeout(Duration::from_secs(3)),
    );
    let host = Arc::new(host);

    const SESSIONS: usize = 16;
    let running = Arc::new(AtomicBool::new(true));
    let mut workers = Vec::new();
    for s in 0..SESSIONS {
        let (host, running) = (host.clone(), running.clone());
        workers.push(tokio::spawn(async move {
            let session = open(&host, &format!("s{s}")).await;
            let (mut allowed, mut denied) = (0usize, Vec::new());
            let mut n = 0;
            while running.load(Ordering::Relaxed) {
                match emit(&session, n).await {
                    Ok(()) => allowed += 1,
                    Err(reason) => denied.push(reason),
                }
                n += 1;
            }
            (allowed, denied)
        }));
    }
    // Every replica serves before the kill.
    wait_for("every replica to serve", || {
        services.iter().all(|s| !s.seen().is_empty())
    })
    .await;
    fronts[0].take().unwrap().kill().await;
    let at_kill = services[0].seen().len();
    let others_at_kill: usize = services[1..].iter().map(|s| s.seen().len()).sum();
    // The others carry the traffic on: a few hundred more emissions.
    wait_for("the other replicas to serve on", || {
        services[1..].iter().map(|s| s.seen().len()).sum::<usize>() >= others_at_kill + 300
    })
    .await;
    running.store(false, Ordering::Relaxed);

    let (mut allowed, mut denied) = (0, Vec::new());
    for w in workers {
        let (a, d) = w.await.unwrap();
        allowed += a;
        denied.extend(d);
    }
    // The killed replica took nothing after it died but the calls the
    // front had already passed on (at most one per session in flight).
    let late = services[0].seen().len() - at_kill;
    assert!(late <= SESSIONS, "{late} calls reached the killed replica");
    // No deny beyond the calls in flight when it stopped, each one a
    // recorded host error.
    assert!(denied.len() <= SESSIONS, "{} denies", denied.len());
    assert!(denied.iter().all(|r| r == FAILED), "{denied:?}");
    let recorded_failures = records
        .records()
        .iter()
        .filter(|r| r.verdict.reason.as_deref() == Some(FAILED))
        .count();
    assert_eq!(recorded_failures, denied.len());
    assert!(allowed >= 300, "{allowed}");
    // Its health turned NOT_SERVING or its connection was refused: it was
    // ejected, one way or the other.
    let text = scrape(&registry);
    let ejected: f64 = ["refused", "health", "unreachable", "failures"]
        .iter()
        .map(|cause| {
            metric_value(
                &text,
                "hookwire_host_replica_ejections_total",
                &[("interceptor", "fleet"), ("cause", cause)],
            )
        })
        .sum();
    assert!(ejected >= 1.0, "{text}");
    drop(servers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_replica_down_an_emission_is_denied_at_once_and_recovery_is_noticed() {
    let service = Scripted::allow_all("policy");
    let server = service.clone().serve().await;
    let mut replicas = Vec::new();
    for _ in 0..2 {
        replicas.push(Front::open(server.addr(), any_port()).await);
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let timeout = Duration::from_secs(4);
    let (host, records, registry) = fleet_host(
        InterceptorBinding::remote_replicas("fleet", addrs.iter().map(|a| format!("http://{a}")))
            .timeout(timeout),
    );
    let session = open(&host, "s").await;
    emit(&session, 0).await.unwrap();
    for r in replicas {
        r.kill().await;
    }

    // Every replica gone: denied at once, recorded, well under the bound.
    for n in 1..=5 {
        let started = Instant::now();
        assert_eq!(emit(&session, n).await, Err(FAILED.to_owned()));
        let took = started.elapsed();
        // Failed fast: nowhere near the per-call timeout.
        assert!(took < timeout / 2, "emission {n} took {took:?}");
    }
    let last = records.records().last().cloned().unwrap();
    assert_eq!(last.verdict.reason.as_deref(), Some(FAILED));
    let text = scrape(&registry);
    assert!(
        metric_value(
            &text,
            "hookwire_host_replica_unavailable_total",
            &[("interceptor", "fleet")]
        ) >= 1.0,
        "{text}"
    );

    // One replica comes back on its port: the probe notices, emissions
    // are allowed again without the host being told anything.
    let back = Front::open(server.addr(), addrs[1]).await;
    let started = Instant::now();
    let mut n = 100;
    loop {
        n += 1;
        match emit(&session, n).await {
            Ok(()) => break,
            Err(reason) => assert_eq!(reason, FAILED),
        }
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "recovery not noticed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = scrape(&registry);
    assert!(
        metric_value(
            &text,
            "hookwire_host_replica_readmissions_total",
            &[("interceptor", "fleet")]
        ) >= 1.0,
        "{text}"
    );
    back.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_retried_on_another_replica_within_the_deadline() {
    let healthy = Scripted::allow_all("healthy");
    let server = healthy.clone().serve().await;
    let (host, records, registry) = fleet_host(
        InterceptorBinding::remote_replicas("fleet", [gone(), gone()])
            .replica(server.endpoint())
            .timeout(Duration::from_secs(3)),
    );
    let session = open(&host, "s").await;
    for n in 0..40 {
        assert_eq!(emit(&session, n).await, Ok(()), "emission {n}");
    }
    // Each emission reached exactly one handler.
    assert_eq!(healthy.seen().len(), 40);
    assert!(records.records().iter().all(|r| r.verdict.reason.is_none()));
    let text = scrape(&registry);
    let retries = metric_value(
        &text,
        "hookwire_host_replica_retries_total",
        &[("interceptor", "fleet")],
    );
    // Each refusing replica was tried at most once before its ejection
    // took it out of the balancer (its monitor may have been first).
    assert!(retries <= 2.0, "{retries}");
    drop(server);
}

/// Fails every tool call in its handler, after counting it: a server that
/// accepted the call and failed after receiving it (the host sees an error
/// status, over the unary RPC or the multiplexed stream alike).
struct FailingAfterReceipt(Arc<AtomicUsize>);

#[hookwire::async_trait]
impl hookwire::Interceptor for FailingAfterReceipt {
    type Response = Result<Verdict, BoxError>;

    fn manifest(&self) -> hookwire::Manifest {
        hookwire::manifest("failing", "1.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        if ctx.point() == PreToolCall {
            self.0.fetch_add(1, Ordering::SeqCst);
            return Err("the backend went away after receipt".into());
        }
        Ok(Verdict::allow())
    }
}

async fn serve_failing_after_receipt(count: Arc<AtomicUsize>) -> hookwire_server::RunningServer {
    hookwire_server::spawn_local(FailingAfterReceipt(count))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_reached_a_server_is_never_retried() {
    // A server that received the call and answered UNAVAILABLE.
    let failed_after_receipt = Arc::new(AtomicUsize::new(0));
    let failing = serve_failing_after_receipt(failed_after_receipt.clone()).await;
    let healthy = Scripted::allow_all("healthy");
    let healthy_server = healthy.clone().serve().await;
    let (host, records, _registry) = fleet_host(
        InterceptorBinding::remote_replicas(
            "fleet",
            [failing.endpoint(), healthy_server.endpoint()],
        )
        .timeout(Duration::from_secs(3)),
    );
    let session = open(&host, "s").await;
    const N: usize = 60;
    let mut denied = 0;
    for n in 0..N {
        match emit(&session, n).await {
            Ok(()) => {}
            Err(reason) => {
                assert_eq!(reason, FAILED);
                denied += 1;
            }
        }
    }
    let reached_failing = failed_after_receipt.load(Ordering::SeqCst);
    // Every call that reached the failing server was denied, not sent on:
    // the handlers were invoked exactly once per emission in all.
    assert!(reached_failing >= 1, "the failing replica was never picked");
    assert_eq!(denied, reached_failing);
    assert_eq!(reached_failing + healthy.seen().len(), N);
    let recorded = records
        .records()
        .iter()
        .filter(|r| r.verdict.reason.as_deref() == Some(FAILED))
        .count();
    assert_eq!(recorded, denied);
    drop((failing, healthy_server));
}

/// Forwards TCP to `backend` and closes every connection as soon as the
/// backend's handler has received a call (its `seen` grew): a replica
/// whose connection breaks after the request was sent.
async fn resetting_proxy(
    backend: SocketAddr,
    seen: Scripted,
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        let mut known = seen.seen().len();
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((mut inbound, _)) = accepted else { continue };
                    connections.spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(backend).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                }
                _ = tick.tick() => {
                    let now = seen.seen().len();
                    if now > known {
                        known = now;
                        connections.abort_all();
                    }
                }
            }
        }
    });
    (format!("http://{addr}"), task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_broken_after_the_request_was_sent_is_not_retried() {
    // The handler takes 300 ms; the proxy breaks the connection as soon as
    // the handler has the call, before any answer.
    let slow = Scripted::allow_all("slow").with_delay(Duration::from_millis(300));
    let slow_server = slow.clone().serve().await;
    let (proxy, proxy_task) = resetting_proxy(slow_server.addr(), slow.clone()).await;
    let healthy = Scripted::allow_all("healthy");
    let healthy_server = healthy.clone().serve().await;
    let (host, records, _registry) = fleet_host(
        InterceptorBinding::remote_replicas("fleet", [proxy, healthy_server.endpoint()])
            .timeout(Duration::from_secs(3)),
    );
    let session = open(&host, "s").await;
    const N: usize = 30;
    let mut denied = 0;
    for n in 0..N {
        if let Err(reason) = emit(&session, n).await {
            assert_eq!(reason, FAILED);
            denied += 1;
        }
    }
    let reached_broken = slow.seen().len();
    assert!(reached_broken >= 1, "the broken replica was never picked");
    // Every call the broken replica's handler received was denied, none
    // was sent on: what was allowed was answered by the healthy replica
    // alone, once each. (A call caught in a connection as it broke is
    // denied too, even if no handler saw it: it may have been sent.)
    assert!(denied >= reached_broken, "{denied} < {reached_broken}");
    assert_eq!(healthy.seen().len(), N - denied);
    assert!(reached_broken + healthy.seen().len() <= N);
    let recorded = records
        .records()
        .iter()
        .filter(|r| r.verdict.reason.as_deref() == Some(FAILED))
        .count();
    assert_eq!(recorded, denied);
    proxy_task.abort();
    drop((slow_server, healthy_server));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_watch_turning_not_serving_ejects_and_serving_readmits() {
    let watched = Scripted::allow_all("watched");
    let router = Server::builder().service(watched.clone());
    let reporter = router.health_reporter();
    let watched_server = router.spawn_local().await.unwrap();
    let other = Scripted::allow_all("other");
    let other_server = other.clone().serve().await;
    let (host, _records, registry) = fleet_host(
        InterceptorBinding::remote_replicas(
            "fleet",
            [watched_server.endpoint(), other_server.endpoint()],
        )
        .timeout(Duration::from_secs(3)),
    );
    let session = open(&host, "s").await;
    let mut n = 0;
    // Until both have been picked (the monitors start with the first call).
    while watched.seen().is_empty() || other.seen().is_empty() {
        emit(&session, n).await.unwrap();
        n += 1;
        assert!(n < 500);
    }
    reporter
        .set_service_status(SERVICE_NAME, ServingStatus::NotServing)
        .await;
    let health_ejections = || {
        metric_value(
            &scrape(&registry),
            "hookwire_host_replica_ejections_total",
            &[("interceptor", "fleet"), ("cause", "health")],
        )
    };
    let started = Instant::now();
    while health_ejections() < 1.0 {
        assert!(started.elapsed() < Duration::from_secs(5), "not ejected");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let frozen = watched.seen().len();
    for _ in 0..50 {
        emit(&session, n).await.unwrap();
        n += 1;
    }
    assert_eq!(
        watched.seen().len(),
        frozen,
        "an ejected replica was called"
    );

    reporter
        .set_service_status(SERVICE_NAME, ServingStatus::Serving)
        .await;
    let started = Instant::now();
    while watched.seen().len() == frozen {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "not re-admitted"
        );
        emit(&session, n).await.unwrap();
        n += 1;
    }
    drop((watched_server, other_server));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dns_name_becomes_one_replica_per_address() {
    // `localhost` resolves to 127.0.0.1 (served) and, on most machines,
    // ::1 (nothing there): the refused address is ejected and every call
    // is answered by the served one.
    let service = Scripted::allow_all("named");
    let server = service.clone().serve().await;
    let port = server.addr().port();
    let (host, _records, _registry) = fleet_host(
        InterceptorBinding::remote("fleet", format!("http://localhost:{port}"))
            .resolve_every(Duration::from_millis(200))
            .timeout(Duration::from_secs(3)),
    );
    let session = open(&host, "s").await;
    for n in 0..20 {
        assert_eq!(emit(&session, n).await, Ok(()), "emission {n}");
    }
    assert_eq!(service.seen().len(), 20);
    let health = host.health_remotes(Duration::from_secs(2)).await;
    assert_eq!(health.len(), 1);
    assert!(
        health[0].1.as_ref().is_ok_and(|s| s.contains("SERVING")),
        "{health:?}"
    );
    drop(server);
}

#[test]
fn replica_settings_on_an_in_process_binding_are_refused() {
    let local = || InterceptorBinding::local("l", Scripted::allow_all("l"));
    for binding in [
        local().replica("http://127.0.0.1:1"),
        local().resolve_every(Duration::from_secs(1)),
        local().multiplex_streams(2),
    ] {
        let err = host().0.bind(binding).build().unwrap_err();
        assert!(err.to_string().contains("remote bindings only"), "{err}");
    }
}
