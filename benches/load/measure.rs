//! Measuring: one operation at a time, interleaved with its baseline in
//! rounds, and allocation counts from the counting global allocator.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::allocator::Counted;
use agent_hooks::{AgentContextBuilder, InterceptionEmitter};
use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::{Session, ToolCall};
use serde_json::Value;
use tonic::transport::Channel;

/// Latency samples in microseconds.
#[derive(Debug, Default, Clone)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    /// The `p`-th percentile (0–100), nearest rank on the sorted samples.
    pub fn pct(&self, p: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[rank.min(v.len() - 1)]
    }

    pub fn median(&self) -> f64 {
        self.pct(50.0)
    }
}

/// One unit of work whose latency is measured.
pub trait Op {
    async fn once(&mut self);
}

/// Times `n` runs of `op`, one sample each.
pub async fn sample<O: Op>(op: &mut O, n: usize, out: &mut Samples) {
    for _ in 0..n {
        let t = Instant::now();
        op.once().await;
        out.0.push(t.elapsed().as_secs_f64() * 1e6);
    }
}

/// Warms both operations up, then alternates them in `rounds` batches of
/// `per_round` (A then B in even rounds, B then A in odd ones) so drift on
/// a shared machine hits both alike.
pub async fn interleaved<A: Op, B: Op>(
    a: &mut A,
    b: &mut B,
    warmup: usize,
    rounds: usize,
    per_round: usize,
) -> (Samples, Samples) {
    let (mut sa, mut sb) = (Samples::default(), Samples::default());
    let mut discard = Samples::default();
    sample(a, warmup, &mut discard).await;
    sample(b, warmup, &mut discard).await;
    for r in 0..rounds {
        if r % 2 == 0 {
            sample(a, per_round, &mut sa).await;
            sample(b, per_round, &mut sb).await;
        } else {
            sample(b, per_round, &mut sb).await;
            sample(a, per_round, &mut sa).await;
        }
    }
    (sa, sb)
}

/// Allocations made by the whole process during `n` runs of `op`, per run:
/// (bytes allocated, allocation calls). Reallocations count as calls and
/// their growth as bytes.
pub async fn allocs_per_op<O: Op>(op: &mut O, n: usize) -> (f64, f64) {
    let region = Counted::start();
    for _ in 0..n {
        op.once().await;
    }
    let s = region.change();
    let bytes = s.bytes_allocated as f64 + s.bytes_reallocated.max(0) as f64;
    let calls = (s.allocations + s.reallocations) as f64;
    (bytes / n as f64, calls / n as f64)
}

/// Bytes allocated and not freed since `region` was made.
pub fn live_bytes(region: &Counted) -> f64 {
    let s = region.change();
    s.bytes_allocated as f64 - s.bytes_deallocated as f64 + s.bytes_reallocated as f64
}

// ---------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------

/// One `pre_tool_call` emission through a hookwire session (in-process or
/// remote chain: whatever the session's host has), each with a call id of
/// its own ([`crate::fixtures::renumber`]).
pub struct Emit {
    pub session: Arc<Session>,
    pub call: ToolCall,
}

impl Op for Emit {
    async fn once(&mut self) {
        crate::fixtures::renumber(&mut self.call);
        let e = self.session.pre_tool_call(&self.call).await.expect("emits");
        assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
    }
}

/// One emission of the canonical emitter, context built by its builder.
pub struct CanonEmit {
    pub emitter: InterceptionEmitter,
    pub builder: AgentContextBuilder,
    pub args: Arc<Value>,
}

impl Op for CanonEmit {
    async fn once(&mut self) {
        let mut ctx = self.builder.pre_tool_call(
            crate::fixtures::CALL_ID,
            crate::fixtures::TOOL,
            Value::clone(&self.args),
        );
        let outcome = self.emitter.emit(&mut ctx).await;
        assert!(outcome.is_ok(), "unexpected block");
        // Drain the emitter's record buffer, as a long-running host must.
        drop(self.emitter.take_records());
    }
}

/// One bare tonic unary call carrying the prebuilt request; with
/// `deadline`, bounded the way hookwire bounds a remote call (the
/// `grpc-timeout` header and a local timeout around the call).
pub struct FloorCall {
    pub client: InterceptorClient<Channel>,
    pub request: pb::PreToolCallRequest,
    pub deadline: Option<Duration>,
}

impl Op for FloorCall {
    async fn once(&mut self) {
        let mut request = tonic::Request::new(self.request.clone());
        let r = match self.deadline {
            None => self.client.pre_tool_call(request).await,
            Some(d) => {
                request.set_timeout(d);
                tokio::time::timeout(d, self.client.pre_tool_call(request))
                    .await
                    .expect("within the deadline")
            }
        }
        .expect("floor answers");
        assert!(r.get_ref().verdict.is_some());
    }
}

/// One round trip on a raw TCP connection to the child's echo: the
/// request's bytes out (length-prefixed), the short answer back. The
/// physical floor under any RPC on loopback.
pub struct TcpRoundTrip {
    pub conn: tokio::net::TcpStream,
    /// The framed request (length prefix included).
    pub frame: Vec<u8>,
    pub answer: Vec<u8>,
}

impl TcpRoundTrip {
    /// Connects to `addr` (`host:port`) with `request_bytes` per request.
    pub async fn connect(addr: &str, request_bytes: usize) -> Self {
        let conn = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connect the TCP floor");
        conn.set_nodelay(true).expect("nodelay");
        let mut frame = (request_bytes as u32).to_be_bytes().to_vec();
        frame.resize(4 + request_bytes, b'x');
        Self {
            conn,
            frame,
            answer: vec![0; 4 + crate::serve::TCP_ANSWER.len()],
        }
    }
}

impl Op for TcpRoundTrip {
    async fn once(&mut self) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.conn.write_all(&self.frame).await.expect("TCP write");
        self.conn
            .read_exact(&mut self.answer)
            .await
            .expect("TCP read");
    }
}

/// One decision by a spawned command hook: serialize the context, spawn the
/// program, write the context to its stdin, read and parse its verdict.
pub struct Spawn {
    pub program: &'static str,
    pub context: hookwire::AgentContext,
}

impl Op for Spawn {
    async fn once(&mut self) {
        use std::io::Write;
        let body = serde_json::to_vec(&self.context.to_json()).expect("serializes");
        let mut child = Command::new(self.program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the command hook");
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(&body).expect("write the context");
        drop(stdin);
        let out = child.wait_with_output().expect("hook output");
        let verdict: Value = serde_json::from_slice(&out.stdout).expect("a JSON verdict");
        assert_eq!(verdict["decision"], "allow", "unexpected verdict {verdict}");
    }
}

/// A channel like the one hookwire's host opens for a remote binding.
pub async fn channel(endpoint: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(endpoint.to_owned())
        .expect("endpoint")
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true)
        .connect()
        .await
        .expect("connect")
}
