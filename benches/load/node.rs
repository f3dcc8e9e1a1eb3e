//! The `node` section: the same allow policy served by the TypeScript
//! package (`sdks/typescript`, `benches/node/allow.mjs`) over the
//! `Multiplex` stream and unary, from the Rust host at 64 concurrent
//! sessions, with the Rust SDK's allow service over the stream beside it.
//! Each Node service is its own process (one thread, as Node runs); the
//! three sides alternate in rounds like the `throughput` section.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::Profile;
use hookwire_client::{Host, Session, ToolCall};

use crate::child::{SERVER_PID, cpu_us};
use crate::measure::Samples;
use crate::report::Headline;
use crate::throughput::run_tasks;
use crate::{Endpoints, Plan, REMOTE_TIMEOUT, fixtures, started};

/// Sessions at once, the figure.
const CONCURRENCY: usize = 64;

/// A Node service process: killed on drop.
struct NodeService {
    child: Child,
    url: String,
}

impl Drop for NodeService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workspace root (the bench crate's parent).
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Starts `benches/node/allow.mjs` (unary only when `unary`) and reads its
/// `PORT <n>` line; an error names what is missing.
fn spawn(unary: bool) -> Result<NodeService, String> {
    let built = root().join("sdks/typescript/node_modules/.hookwire-build-sha256");
    if !built.exists() {
        return Err(format!(
            "{} is missing: run scripts/setup.sh (it builds sdks/typescript)",
            built.display()
        ));
    }
    let mut cmd = Command::new("node");
    cmd.arg(root().join("benches/node/allow.mjs"))
        .args(["--host", "127.0.0.1", "--port", "0"]);
    if unary {
        cmd.arg("--unary-only");
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("could not start node: {e}"))?;
    let mut line = String::new();
    // The child prints its port or exits: a read never outlives it.
    let read =
        std::io::BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line);
    let port = read
        .ok()
        .and_then(|_| line.trim().strip_prefix("PORT ")?.parse::<u16>().ok());
    let Some(port) = port else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("the Node service printed no PORT line ({line:?})"));
    };
    Ok(NodeService {
        child,
        url: format!("http://127.0.0.1:{port}"),
    })
}

/// One side's rates, latencies and CPU.
#[derive(Default)]
struct Side {
    rates: Vec<f64>,
    lat: Samples,
    /// CPU used by (client, server) and calls made.
    cpu: (f64, f64, usize),
}

impl Side {
    fn measured(&self) -> (f64, (f64, f64)) {
        let (c, s, n) = self.cpu;
        (
            Samples(self.rates.clone()).median(),
            (c / n as f64, s / n as f64),
        )
    }
}

/// `pre_tool_call` emissions from every session at once for `window`:
/// completions per second and every latency sample (µs).
async fn window(sessions: &[Arc<Session>], call: &ToolCall, window: Duration) -> (f64, Vec<f64>) {
    let tasks: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (s, mut call) = (s.clone(), call.clone());
            async move {
                let mut lat = Vec::new();
                let deadline = Instant::now() + window;
                while Instant::now() < deadline {
                    let t = Instant::now();
                    fixtures::renumber(&mut call);
                    let e = s.pre_tool_call(&call).await.expect("emits");
                    assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                lat
            }
        })
        .collect();
    run_tasks(tasks).await
}

/// Runs the section and adds its two headlines: the Node package over the
/// stream against its unary calls (target ≥ 2×), and against the Rust
/// SDK's stream.
pub async fn section(
    plan: Plan,
    ep: &Endpoints,
    call: &ToolCall,
    headline: &mut Vec<Headline>,
) -> Result<(), String> {
    eprintln!("node package: Multiplex vs unary vs the Rust SDK, {CONCURRENCY} sessions ...");
    let (stream, unary) = (spawn(false)?, spawn(true)?);
    let host =
        |url: &str| fixtures::remote_host(url, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let hosts: [Host; 3] = [host(&stream.url), host(&unary.url), host(&ep.allow)];
    let pids = [
        Some(stream.child.id()),
        Some(unary.child.id()),
        SERVER_PID.get().copied(),
    ];
    let mut sessions: [Vec<Arc<Session>>; 3] = Default::default();
    for (side, h) in hosts.iter().enumerate() {
        for i in 0..CONCURRENCY {
            sessions[side].push(started(h, &format!("s-node-{side}-{i}")).await);
        }
    }
    for s in &sessions {
        window(s, call, plan.throughput_window / 4).await;
    }
    let mut sides: [Side; 3] = Default::default();
    for r in 0..plan.throughput_rounds {
        // Each side goes first, second and last in turn.
        for k in 0..3 {
            let side = (r + k) % 3;
            let (c0, s0) = (cpu_us(None), cpu_us(pids[side]));
            let (rate, lat) = window(&sessions[side], call, plan.throughput_window).await;
            let acc = &mut sides[side];
            acc.cpu.0 += cpu_us(None) - c0;
            acc.cpu.1 += cpu_us(pids[side]) - s0;
            acc.cpu.2 += lat.len();
            acc.rates.push(rate);
            acc.lat.0.extend(lat);
        }
    }
    let [node_stream, node_unary, rust_stream] = &sides;
    headline.push(Headline::throughput(
        format!("node package, {CONCURRENCY} concurrent sessions, Multiplex stream, vs its unary"),
        node_stream.measured(),
        node_unary.measured(),
        &node_stream.lat,
        &node_unary.lat,
        "node_stream_vs_unary",
        Some((2.0, true)),
    ));
    headline.push(Headline::throughput(
        format!(
            "node package, {CONCURRENCY} concurrent sessions, Multiplex stream, vs the Rust SDK's stream"
        ),
        node_stream.measured(),
        rust_stream.measured(),
        &node_stream.lat,
        &rust_stream.lat,
        "node_stream_vs_rust",
        None,
    ));
    Ok(())
}
