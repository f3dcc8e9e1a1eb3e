//! The `Multiplex` stream between a host and an interceptor service, with
//! real servers on 127.0.0.1:0: the host uses the stream when the
//! manifest declares it and unary calls otherwise; every failure on the
//! stream is the emission's own fail-closed deny with a record (a killed
//! server fails the emissions in flight at once, and the host reconnects;
//! a deadline or a cancellation stops the service's work on that emission
//! only; a service that lies about ids, repeats an answer or sends an
//! oversized one fails closed).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_server::{Interceptor as PbInterceptor, InterceptorServer};
use hookwire_client::{Host, InputRole, InterceptorBinding, RecordLog, Session, ToolCall};
use hookwire_server::prelude::*;
use hookwire_server::{GrpcAdapter, MultiplexStream};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming};

/// Allows, after sleeping as long as the tool call's `sleep_ms` says;
/// counts hooks that were stopped (their future dropped) before answering.
#[derive(Clone, Default)]
pub(crate) struct Sleepy {
    stopped: Arc<AtomicUsize>,
}

struct StopGuard(Arc<AtomicUsize>, bool);

impl Drop for StopGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl Interceptor for Sleepy {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("sleepy", "0.1.0")
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        let ms = ctx
            .get("tool_call")
            .and_then(|c| c.get("args"))
            .and_then(|a| a.get("sleep_ms"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let mut guard = StopGuard(self.stopped.clone(), false);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        guard.1 = true;
        Verdict::allow()
    }
}

/// The SDK's adapter behind a wrapper that counts which RPCs the host
/// used, and that can leave the stream out of the manifest, refuse it, or
/// hold `Describe`.
#[derive(Clone)]
pub(crate) struct Counted {
    inner: GrpcAdapter,
    pub(crate) unary: Arc<AtomicUsize>,
    pub(crate) streams: Arc<AtomicUsize>,
    /// Declares the stream but refuses it (`UNIMPLEMENTED`).
    pub(crate) refuse_streams: bool,
    /// Holds each `Describe` until it takes a permit from here.
    pub(crate) describe_gate: Option<Arc<tokio::sync::Semaphore>>,
    /// `Describe` calls answered.
    pub(crate) described: Arc<AtomicUsize>,
}

macro_rules! counted_rpcs {
    ($($method:ident: $req:ty),*) => {
        #[tonic::async_trait]
        impl PbInterceptor for Counted {
            $(async fn $method(&self, r: Request<$req>) -> Result<Response<pb::InterceptorResponse>, Status> {
                self.unary.fetch_add(1, Ordering::SeqCst);
                PbInterceptor::$method(&self.inner, r).await
            })*
            async fn describe(&self, r: Request<pb::DescribeRequest>) -> Result<Response<pb::Manifest>, Status> {
                if let Some(gate) = &self.describe_gate {
                    let _held = gate.acquire().await;
                }
                self.described.fetch_add(1, Ordering::SeqCst);
                PbInterceptor::describe(&self.inner, r).await
            }
            type MultiplexStream = MultiplexStream;
            async fn multiplex(&self, r: Request<Streaming<pb::MultiplexRequest>>) -> Result<Response<MultiplexStream>, Status> {
                self.streams.fetch_add(1, Ordering::SeqCst);
                if self.refuse_streams {
                    return Err(Status::unimplemented("no stream here"));
                }
                PbInterceptor::multiplex(&self.inner, r).await
            }
        }
    };
}

counted_rpcs!(
    agent_startup: pb::AgentStartupRequest, input: pb::InputRequest,
    pre_model_call: pb::PreModelCallRequest, post_model_call: pb::PostModelCallRequest,
    pre_tool_call: pb::PreToolCallRequest, post_tool_call: pb::PostToolCallRequest,
    output: pb::OutputRequest, agent_shutdown: pb::AgentShutdownRequest
);

/// A server in a runtime of its own, so that killing it closes every
/// connection at once, as a crashed process would.
pub(crate) struct Killable {
    addr: SocketAddr,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Killable {
    /// Serves `service` on `addr` (`127.0.0.1:0` for a fresh port).
    pub(crate) fn serve<S>(addr: SocketAddr, service: S) -> Self
    where
        S: PbInterceptor,
    {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (kill, killed) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::bind(addr).await.unwrap();
                ready_tx.send(listener.local_addr().unwrap()).unwrap();
                let serve = tonic::transport::Server::builder()
                    .add_service(InterceptorServer::new(service))
                    .serve_with_incoming(TcpListenerStream::new(listener));
                tokio::select! {
                    _ = serve => {}
                    _ = killed => {}
                }
            });
            // Drops every connection task: no graceful anything.
            rt.shutdown_background();
        });
        let addr = ready_rx.recv().unwrap();
        Self {
            addr,
            kill: Some(kill),
            thread: Some(thread),
        }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Killable {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn counted(unary_only: bool) -> (Counted, Sleepy) {
    let policy = Sleepy::default();
    let adapter = GrpcAdapter::new(policy.clone());
    let inner = if unary_only {
        adapter.unary_only()
    } else {
        adapter
    };
    let counted = Counted {
        inner,
        unary: Arc::default(),
        streams: Arc::default(),
        refuse_streams: false,
        describe_gate: None,
        described: Arc::default(),
    };
    (counted, policy)
}

fn host(endpoint: &str, timeout: Duration) -> (Host, RecordLog) {
    host_with(endpoint, timeout, None)
}

/// A host whose binding keeps `streams` streams (`None`: the default).
pub(crate) fn host_with(
    endpoint: &str,
    timeout: Duration,
    streams: Option<usize>,
) -> (Host, RecordLog) {
    let records = RecordLog::new();
    let mut binding = InterceptorBinding::remote("policy", endpoint).timeout(timeout);
    if let Some(n) = streams {
        binding = binding.multiplex_streams(n);
    }
    let host = Host::builder("agent", "hookwire")
        .bind(binding)
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .build()
        .unwrap();
    (host, records)
}

pub(crate) async fn started(host: &Host, id: &str) -> Arc<Session> {
    let s = host.session(id).unwrap();
    assert!(s.start(["bash"]).await.unwrap().proceeds());
    assert!(
        s.input(json!("go"), InputRole::User)
            .await
            .unwrap()
            .proceeds()
    );
    Arc::new(s)
}

pub(crate) fn call(id: &str, sleep_ms: u64) -> ToolCall {
    ToolCall::new(id, "bash", json!({"cmd": "ls", "sleep_ms": sleep_ms}))
}

/// Starts `sessions` sessions on `host`, then has each make `calls`
/// allowed `pre_tool_call`s in turn (sleeping `sleep_ms` in the hook), all
/// sessions at once. The sessions are returned open (a dropped one would
/// emit its `agent_shutdown`).
async fn concurrent_tool_calls(
    host: &Host,
    sessions: usize,
    calls: usize,
    sleep_ms: u64,
) -> Vec<Arc<Session>> {
    let mut started_sessions = Vec::new();
    for i in 0..sessions {
        started_sessions.push(started(host, &format!("s-{i}")).await);
    }
    let tasks: Vec<_> = started_sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s = s.clone();
            tokio::spawn(async move {
                for j in 0..calls {
                    let e = s.pre_tool_call(&call(&format!("c{i}-{j}"), sleep_ms)).await;
                    assert!(e.unwrap().proceeds());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    started_sessions
}

#[tokio::test]
async fn the_stream_is_used_when_declared_and_unary_calls_otherwise() {
    for unary_only in [false, true] {
        let (service, _) = counted(unary_only);
        let (unary, streams) = (service.unary.clone(), service.streams.clone());
        let server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
        let (host, records) = host_with(&server.endpoint(), Duration::from_secs(5), Some(1));
        let _open = concurrent_tool_calls(&host, 4, 1, 5).await;
        // 4 startups, 4 inputs, 4 tool calls.
        assert_eq!(records.records().len(), 12);
        if unary_only {
            assert_eq!(unary.load(Ordering::SeqCst), 12, "every emission unary");
            assert_eq!(streams.load(Ordering::SeqCst), 0);
        } else {
            assert_eq!(unary.load(Ordering::SeqCst), 0, "no unary call");
            assert_eq!(streams.load(Ordering::SeqCst), 1, "one stream for all");
        }
    }
}

#[tokio::test]
async fn sessions_spread_over_the_streams_each_keeping_its_own() {
    let (service, _) = counted(false);
    let (unary, streams) = (service.unary.clone(), service.streams.clone());
    let server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    let (host, records) = host_with(&server.endpoint(), Duration::from_secs(5), Some(3));
    let _open = concurrent_tool_calls(&host, 12, 3, 1).await;
    // 12 startups, 12 inputs, 36 tool calls.
    assert_eq!(records.records().len(), 60);
    assert_eq!(unary.load(Ordering::SeqCst), 0, "no unary call");
    let opened = streams.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&opened),
        "12 sessions over at most 3 streams, more than one used: {opened}"
    );
    let zero = Host::builder("agent", "hookwire")
        .bind(InterceptorBinding::remote("p", server.endpoint()).multiplex_streams(0))
        .build();
    assert!(zero.is_err(), "zero streams is refused");
}

#[tokio::test]
async fn a_killed_server_fails_the_emissions_in_flight_at_once_and_the_host_reconnects() {
    let (service, _) = counted(false);
    let mut server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    let addr = server.addr;
    let (host, records) = host(&server.endpoint(), Duration::from_secs(30));
    let mut sessions = Vec::new();
    for i in 0..3 {
        sessions.push(started(&host, &format!("s-{i}")).await);
    }
    let before = records.records().len();
    let began = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s = s.clone();
            tokio::spawn(async move { s.pre_tool_call(&call(&format!("c{i}"), 20_000)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    for t in tasks {
        let e = t.await.unwrap().unwrap();
        assert!(!e.proceeds());
        assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    }
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "failed at once, not at the 30 s timeout nor the 20 s hook"
    );
    assert_eq!(
        records.records().len(),
        before + 3,
        "each failure has its record"
    );

    // A new server on the same port: once the host has re-admitted the
    // endpoint (its probes back off), emissions go over a new stream.
    let (service, _) = counted(false);
    let (streams, unary) = (service.streams.clone(), service.unary.clone());
    let _again = Killable::serve(addr, service);
    let waited = Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let e = sessions[0]
            .pre_tool_call(&call(&format!("c-again-{n}"), 0))
            .await
            .unwrap();
        if e.proceeds() {
            break;
        }
        assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "never reconnected: {:?}",
            e.verdict()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(streams.load(Ordering::SeqCst), 1, "one new stream");
    assert_eq!(unary.load(Ordering::SeqCst), 0, "no unary call");
}

#[tokio::test]
async fn a_deadline_and_a_cancellation_end_one_emission_only() {
    let (service, policy) = counted(false);
    let server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    let (host, records) = host(&server.endpoint(), Duration::from_millis(300));
    let slow = started(&host, "s-slow").await;
    let fast = started(&host, "s-fast").await;

    // The deadline: this emission's own deny; the service stops its hook.
    let began = Instant::now();
    let (slow_call, fast_call) = (call("c-slow", 10_000), call("c-fast", 0));
    let (timed_out, other) = tokio::join!(
        slow.pre_tool_call(&slow_call),
        fast.pre_tool_call(&fast_call),
    );
    let timed_out = timed_out.unwrap();
    assert_eq!(timed_out.reason(), Some("host_error:interceptor_timeout"));
    assert!(began.elapsed() < Duration::from_secs(3));
    assert!(other.unwrap().proceeds(), "the other session is unaffected");
    let stopped = || policy.stopped.load(Ordering::SeqCst);
    let waited = Instant::now();
    while stopped() < 1 && waited.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stopped(), 1, "the service stopped the timed-out hook");

    // A cancellation: the caller goes away long before the deadline.
    let (host, _) = self::host(&server.endpoint(), Duration::from_secs(30));
    let s = started(&host, "s-cancel").await;
    let gone = tokio::time::timeout(
        Duration::from_millis(200),
        s.pre_tool_call(&call("c-gone", 20_000)),
    )
    .await;
    assert!(gone.is_err(), "the caller gave up");
    let waited = Instant::now();
    while stopped() < 2 && waited.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stopped(), 2, "the service stopped the cancelled hook");
    let s2 = started(&host, "s-after").await;
    assert!(
        s2.pre_tool_call(&call("c-after", 0))
            .await
            .unwrap()
            .proceeds(),
        "the stream still carries emissions"
    );
    drop(records);
}

/// How a lying service answers on the stream.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Every answer under an id the host never sent.
    WrongId,
    /// Holds the first request until a second arrives, then answers the
    /// first twice.
    Duplicate,
    /// An answer larger than the host decodes.
    Oversize,
    /// An answer with neither a response nor an error.
    NoOutcome,
}

#[derive(Clone)]
struct Liar(Lie);

fn allow(id: u64) -> pb::MultiplexResponse {
    pb::MultiplexResponse {
        id,
        outcome: Some(pb::multiplex_response::Outcome::Response(
            pb::InterceptorResponse::from(&hookwire::InterceptorResponse::from(Verdict::allow())),
        )),
    }
}

macro_rules! liar_rpcs {
    ($($method:ident: $req:ty),*) => {
        #[tonic::async_trait]
        impl PbInterceptor for Liar {
            $(async fn $method(&self, _: Request<$req>) -> Result<Response<pb::InterceptorResponse>, Status> {
                Ok(Response::new(pb::InterceptorResponse::from(
                    &hookwire::InterceptorResponse::from(Verdict::allow()),
                )))
            })*
            async fn describe(&self, _: Request<pb::DescribeRequest>) -> Result<Response<pb::Manifest>, Status> {
                let mut m = pb::Manifest::from(&manifest("liar", "0"));
                hookwire::wire::declare_multiplex(&mut m);
                Ok(Response::new(m))
            }
            type MultiplexStream = MultiplexStream;
            async fn multiplex(&self, r: Request<Streaming<pb::MultiplexRequest>>) -> Result<Response<MultiplexStream>, Status> {
                let mut incoming = r.into_inner();
                let (tx, rx) = tokio::sync::mpsc::channel(16);
                let lie = self.0;
                tokio::spawn(async move {
                    let mut held = None;
                    while let Ok(Some(m)) = incoming.message().await {
                        if m.body.as_ref().is_some_and(|b| matches!(b, pb::multiplex_request::Body::Cancel(_))) {
                            continue;
                        }
                        let answers = match (lie, held.take()) {
                            (Lie::WrongId, _) => vec![allow(m.id + 1000)],
                            (Lie::Duplicate, None) => { held = Some(m.id); vec![] }
                            (Lie::Duplicate, Some(first)) => vec![allow(first), allow(first), allow(m.id)],
                            (Lie::Oversize, _) => {
                                let mut a = allow(m.id);
                                if let Some(pb::multiplex_response::Outcome::Response(r)) = &mut a.outcome {
                                    r.extensions.insert("big".into(), pb::JsonValue {
                                        // Above the host's decode limit: refused by the
                                        // transport, not by validation.
                                        json: format!("\"{}\"", "x".repeat(hookwire::WIRE_RESPONSE_MAX_BYTES + 1024)),
                                    });
                                }
                                vec![a]
                            }
                            (Lie::NoOutcome, _) => vec![pb::MultiplexResponse { id: m.id, outcome: None }],
                        };
                        for a in answers {
                            if tx.send(Ok(a)).await.is_err() {
                                return;
                            }
                        }
                    }
                });
                Ok(Response::new(Box::pin(ReceiverStream::new(rx)) as MultiplexStream))
            }
        }
    };
}

liar_rpcs!(
    agent_startup: pb::AgentStartupRequest, input: pb::InputRequest,
    pre_model_call: pb::PreModelCallRequest, post_model_call: pb::PostModelCallRequest,
    pre_tool_call: pb::PreToolCallRequest, post_tool_call: pb::PostToolCallRequest,
    output: pb::OutputRequest, agent_shutdown: pb::AgentShutdownRequest
);

#[tokio::test]
async fn a_lying_service_fails_closed() {
    for lie in [Lie::WrongId, Lie::Oversize, Lie::NoOutcome] {
        let server = Killable::serve("127.0.0.1:0".parse().unwrap(), Liar(lie));
        let (host, records) = host(&server.endpoint(), Duration::from_secs(10));
        let began = Instant::now();
        let s = host.session("s-lied-to").unwrap();
        let e = s.start(["bash"]).await.unwrap();
        assert!(!e.proceeds(), "{lie:?}");
        assert_eq!(e.reason(), Some("host_error:interceptor_failed"), "{lie:?}");
        assert!(began.elapsed() < Duration::from_secs(5), "{lie:?}: at once");
        assert_eq!(records.records().len(), 1, "{lie:?}");
    }

    // The first request is answered twice: the first answer stands, the
    // repeat breaks the stream and the other emission in flight fails.
    let server = Killable::serve("127.0.0.1:0".parse().unwrap(), Liar(Lie::Duplicate));
    // Both sessions on the one stream the liar repeats itself on.
    let (host, records) = host_with(&server.endpoint(), Duration::from_secs(10), Some(1));
    let (a, b) = (host.session("s-a").unwrap(), host.session("s-b").unwrap());
    let first = a.start(["bash"]);
    let second = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        b.start(["bash"]).await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(first.unwrap().proceeds(), "the first answer stands");
    let second = second.unwrap();
    assert!(!second.proceeds());
    assert_eq!(second.reason(), Some("host_error:interceptor_failed"));
    assert_eq!(records.records().len(), 2);
}

#[tokio::test]
async fn a_stream_refused_by_a_replacement_falls_back_to_unary() {
    let (service, _) = counted(false);
    let mut server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    let addr = server.addr;
    let (host, _records) = host(&server.endpoint(), Duration::from_secs(5));
    let s = started(&host, "s-0").await;
    server.kill();

    // Replaced by a service that declares the stream and then refuses it:
    // once the host reaches it, the refused emission is sent again as a
    // unary call, and so are the next ones.
    let (mut refusing, _) = counted(false);
    refusing.refuse_streams = true;
    let (refused, unary) = (refusing.streams.clone(), refusing.unary.clone());
    let _server = Killable::serve(addr, refusing);
    let waited = Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let e = s.pre_tool_call(&call(&format!("c-{n}"), 0)).await.unwrap();
        if e.proceeds() {
            break;
        }
        // Unreachable while the endpoint is re-admitted.
        assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
        assert!(waited.elapsed() < Duration::from_secs(20), "never reached");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused.load(Ordering::SeqCst) >= 1, "the stream was tried");
    assert_eq!(
        unary.load(Ordering::SeqCst),
        1,
        "and the emission sent unary"
    );
    let e = s.pre_tool_call(&call("c-next", 0)).await.unwrap();
    assert!(e.proceeds());
    assert_eq!(
        unary.load(Ordering::SeqCst),
        2,
        "the next one unary at once"
    );
}
