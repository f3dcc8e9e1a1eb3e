//! The hookwire load tool: `cargo bench -p hookwire-bench --bench load`.
//!
//! Measures hookwire side by side with its baselines in one run, always as
//! ratios of medians taken in the same run (A and B alternate in rounds, so
//! drift on a shared machine hits both alike):
//!
//! - a remote emission (client and interceptor service in separate
//!   processes on loopback), called unary and over the `Multiplex` stream
//!   (over TCP, and over an owner-only Unix socket: `uds_stream_vs_tonic`),
//!   against a bare tonic unary call carrying the same request bytes, and
//!   a raw TCP round trip of those bytes (the physical floor);
//! - the host with in-process interceptors against the canonical
//!   in-process emitter (`agent_hooks::InterceptionEmitter`);
//! - a `parallel/strictest` fan-out to four remote interceptors that each
//!   wait 2 ms, against one such interceptor; and four parallel
//!   `pre_tool_call`s of one session against one 2 ms interceptor, over
//!   the stream and unary, against one call;
//! - throughput with 64 and 256 concurrent sessions, unary and stream,
//!   against bare tonic with the same concurrency;
//! - how time and memory per emission grow with the context size, the
//!   number of interceptors and the number of sessions;
//! - a command hook spawned per decision against a remote emission;
//! - a Claude Code `PreToolUse` decided by `hookwire hooks serve` through
//!   the real `hookwire hook` command and on its HTTP route, against a
//!   bare process printing a fixed decision (`hooks.rs`; builds the
//!   release `hookwire` binary first unless `HOOKWIRE_BENCH_HOOKWIRE`
//!   names one);
//! - a remote emission with signed, hash-chained records against one
//!   without (`audit.rs`);
//! - a remote Rego decision (`hookwire policy`) against the hand-written
//!   Rust demo policy, latency and throughput, and one in-process Rego
//!   decision (`policy.rs`), the same decision made in a host by the
//!   `hookwire.rego` binding against the Rust policy bound in process
//!   (`embedded.rs`), and a Cedar decision beside the Rego one on
//!   the same policies (`policy_cedar.rs`);
//! - `hookwire gateway` against the LiteLLM proxy on the same mock
//!   upstream, for each wire API whole and streamed, the gateway deciding
//!   with a remote allow, with a remote Rego service, and with Rego in its
//!   own process: added latency at a fixed rate and the maximum sustained
//!   rate, and the in-process path's p99 at 2 000 requests/s (`peer/`;
//!   installs LiteLLM with `scripts/litellm.sh`, and fails the run when it
//!   cannot);
//! - a `tools/call` through `hookwire mcp` with one remote allow
//!   interceptor, and with Rego in its own process, against the same call
//!   made directly to the same fast
//!   `rmcp` upstream, over stdio and over Streamable HTTP: p50/p99, what
//!   the proxy adds, calls/s (`mcp/`);
//! - one allow policy served by the hookwire Python package over the
//!   `Multiplex` stream and unary, and by the examples' helper from before
//!   the package (from git history), at 64 concurrent sessions, with the
//!   Rust SDK's figure beside them (`python.rs`);
//! - the same allow policy served by the TypeScript package over the
//!   `Multiplex` stream and unary, with the Rust SDK's figure beside them
//!   (`node.rs`).
//!
//! It prints one report, writes it to `BENCHMARKS.md`, and ends with the
//! `ratios:` line. The child process runs the same binary with `--serve`.
//!
//! Flags (after `--`): `--quick` (fewer rounds, a smoke run that leaves
//! `BENCHMARKS.md` alone); `--no-write`
//! (leave `BENCHMARKS.md` alone); `--only <section>` (one of `deadline`,
//! `remote`, `metrics`, `local`, `fanout`, `throughput`, `spawn`, `hooks`, `growth`, `audit`, `policy`,
//! `gateway_peer`, `mcp`, `node`, `python`; implies
//! `--no-write`); `--profile <what> [n]` (only `n` runs of one operation, for
//! a profiler: `remote` (unary), `stream`, `floor`, `floor-deadline`, `local`, `canon`,
//! `concurrent`, `concurrent-stream`, `concurrent-floor`, `policy` (in-process Rego decisions), `gateway`
//! (Chat turns through gateways deciding in process, with each process's CPU per turn), or
//! `parts` for native timings of the engine's per-emission work). `HOOKWIRE_BENCH_PORTS="<allow> <delay>
//! <floor> <unary> <tcp> <delay_unary>"` points `--profile` at a server started by hand (`--serve`),
//! e.g. one running under `valgrind --tool=callgrind`.
//!
//! One file per part: `child.rs` (the services' process and CPU
//! accounting), one per section (`remote.rs` for `remote` and `deadline`,
//! `metrics.rs`, `local.rs`, `fanout.rs`, `throughput.rs`, `spawn.rs`, `hooks.rs`, `growth.rs`,
//! `audit.rs`, `policy.rs` with its own services' process, `embedded.rs`
//! (the policy folder and host of the in-process paths), `node.rs` and
//! `python.rs` with their services' processes, `peer/` with its
//! mock upstream's and gateway's processes, `mcp/` with its upstream's and
//! proxy's),
//! `profile.rs` (`--profile`), and the shared `fixtures.rs`, `measure.rs`,
//! `report.rs` and `serve.rs` (the services themselves).

mod allocator;
mod audit;
mod child;
mod embedded;
mod fanout;
mod fixtures;
mod growth;
mod hooks;
mod local;
mod mcp;
mod measure;
mod metrics;
mod node;
mod peer;
mod policy;
mod policy_cedar;
mod profile;
mod python;
mod remote;
mod report;
mod serve;
mod spawn;
mod throughput;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire_client::{Host, InputRole, Session};

use child::Endpoints;
use report::{Growth, Report};

/// The system allocator, counting allocations only inside a memory
/// measurement ([`allocator::Counted`]).
#[global_allocator]
static GLOBAL: allocator::SwitchedCounting = allocator::SwitchedCounting;

/// The command hook built next to this bench (`benches/support/command_hook.rs`).
const COMMAND_HOOK: &str = env!("CARGO_BIN_EXE_hookwire-command-hook");

/// One kibibyte, for context sizes.
const KIB: usize = 1024;
/// The host's per-call bound on remote interceptors in every section.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(5);

/// How much work each section does.
#[derive(Debug, Clone, Copy)]
struct Plan {
    rounds: usize,
    remote_per_round: usize,
    local_per_round: usize,
    fanout_rounds: usize,
    fanout_per_round: usize,
    throughput_window: Duration,
    throughput_rounds: usize,
    spawn_rounds: usize,
    spawn_per_round: usize,
    growth_scale: usize,
    /// `gateway_peer`: open-loop time per path and API, closed-loop window
    /// per step of the rate search.
    peer_open: Duration,
    peer_window: Duration,
}

const FULL: Plan = Plan {
    rounds: 30,
    remote_per_round: 100,
    local_per_round: 300,
    fanout_rounds: 12,
    fanout_per_round: 25,
    throughput_window: Duration::from_millis(1500),
    throughput_rounds: 4,
    spawn_rounds: 10,
    spawn_per_round: 20,
    growth_scale: 4,
    peer_open: Duration::from_secs(6),
    peer_window: Duration::from_millis(1200),
};

const QUICK: Plan = Plan {
    rounds: 6,
    remote_per_round: 50,
    local_per_round: 100,
    fanout_rounds: 4,
    fanout_per_round: 10,
    throughput_window: Duration::from_millis(400),
    throughput_rounds: 2,
    spawn_rounds: 4,
    spawn_per_round: 10,
    growth_scale: 1,
    peer_open: Duration::from_secs(2),
    peer_window: Duration::from_millis(500),
};

/// A started session of `host` whose startup and turn-opening input were
/// allowed (tool calls need a turn, §3.1 rule 3), shareable by the tasks
/// of a section.
async fn started(host: &Host, id: &str) -> Arc<Session> {
    let s = host.session(id).expect("session");
    let e = s.start([fixtures::TOOL]).await.expect("start");
    assert!(e.proceeds(), "startup denied: {:?}", e.verdict());
    let e = s
        .input(serde_json::json!("load"), InputRole::User)
        .await
        .expect("input");
    assert!(e.proceeds(), "input denied: {:?}", e.verdict());
    Arc::new(s)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--serve") {
        serve::run();
    }
    if args.iter().any(|a| a == policy::SERVE_FLAG) {
        policy::serve();
    }
    if args.iter().any(|a| a == peer::UPSTREAM_FLAG) {
        peer::serve_upstream();
    }
    if let Some(i) = args.iter().position(|a| a == peer::GATEWAY_FLAG) {
        peer::serve_gateway(&args[i + 1..]);
    }
    // The proxy first: its upstream command (after its `--`) carries the
    // upstream's flag.
    if let Some(i) = args.iter().position(|a| a == mcp::PROXY_FLAG) {
        mcp::serve_proxy(&args[i + 1..]);
    }
    if let Some(i) = args.iter().position(|a| a == mcp::UPSTREAM_FLAG) {
        mcp::serve_upstream(&args[i + 1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let plan = if quick { QUICK } else { FULL };
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    // A smoke run or a partial run never overwrites the report.
    let write = !args.iter().any(|a| a == "--no-write") && !quick && only.is_none();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        let what = args.get(i + 1).map_or("remote", String::as_str);
        let n = args.get(i + 2).and_then(|n| n.parse().ok()).unwrap_or(2000);
        let (child, ep) = match child::external_server() {
            Some(ep) => (None, ep),
            None => {
                let (c, ep) = child::spawn_server();
                (Some(c), ep)
            }
        };
        rt.block_on(profile::profile(what, n, &ep));
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
        return;
    }
    let (mut child, ep) = child::spawn_server();
    let _ = child::SERVER_PID.set(child.id());
    let started_at = Instant::now();
    let report = rt.block_on(run(plan, &ep, only.as_deref()));
    let elapsed = started_at.elapsed();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(1);
        }
    };

    let text = report.render(elapsed);
    println!("{text}");
    if write {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md");
        let notes = std::fs::read_to_string(path)
            .ok()
            .and_then(|old| report::kept_notes(&old));
        std::fs::write(path, report.markdown(&text, notes.as_deref()))
            .expect("write BENCHMARKS.md");
        eprintln!("wrote {path}");
    }
    println!("{}", report.ratios_line());
}

/// Runs the sections `only` selects (all by default) and collects the
/// report; a section that cannot measure what it reports (`gateway_peer`
/// without LiteLLM) fails the run.
async fn run(plan: Plan, ep: &Endpoints, only: Option<&str>) -> Result<Report, String> {
    let want = |section: &str| only.is_none_or(|o| o == section);
    let args_1k = fixtures::tool_args(KIB);
    let call_1k = fixtures::tool_call(&args_1k);
    let bytes_1k = fixtures::request_len(&args_1k);
    let mut headline = Vec::new();

    eprintln!("remote emission vs bare tonic ...");
    let mut remote = remote::RemoteSetup::new(ep, &call_1k, &args_1k).await;
    if want("deadline") {
        remote.deadline(plan, &mut headline).await;
    }
    let mut remote_1k = f64::NAN;
    if want("remote") {
        remote_1k = remote.versus_floor(plan, bytes_1k, &mut headline).await;
    }
    if want("metrics") {
        metrics::overhead(plan, ep, &call_1k, &mut headline).await;
    }
    if want("local") {
        local::versus_canonical(plan, &call_1k, &args_1k, &mut headline).await;
    }
    if want("fanout") {
        fanout::fanout(plan, ep, &call_1k, &mut headline).await;
        fanout::parallel_in_a_session(plan, ep, &call_1k, &mut headline).await;
    }
    if want("throughput") {
        for concurrency in [64, 256] {
            eprintln!("throughput with {concurrency} sessions ...");
            let t = throughput::throughput(
                &remote.host,
                &remote.stream_host,
                &remote.floor.client,
                &remote.floor.request,
                &call_1k,
                concurrency,
                plan,
            )
            .await;
            headline.extend(t.into_headlines(concurrency));
        }
    }
    if want("spawn") {
        spawn::versus_remote(
            plan,
            &args_1k,
            &mut remote.stream,
            &mut remote.ours,
            &mut headline,
        )
        .await;
    }
    if want("hooks") {
        hooks::section(plan, &ep.allow, &mut headline)
            .await
            .map_err(|e| format!("hooks: {e}"))?;
    }
    if want("audit") {
        audit::section(plan, &ep.allow, &call_1k, &mut headline).await;
    }
    if want("policy") {
        policy::section(plan, &mut headline).await;
    }
    let mut peer_tables = String::new();
    if want("gateway_peer") {
        peer::section(plan, ep, &mut headline, &mut peer_tables)
            .await
            .map_err(|e| format!("gateway_peer: {e}"))?;
    }
    if want("python") {
        python::section(plan, ep, &call_1k, &mut headline)
            .await
            .map_err(|e| format!("python: {e}"))?;
    }
    let mut mcp_tables = String::new();
    if want("mcp") {
        mcp::section(plan, ep, &mut headline, &mut mcp_tables)
            .await
            .map_err(|e| format!("mcp: {e}"))?;
    }
    if want("node") {
        node::section(plan, ep, &call_1k, &mut headline)
            .await
            .map_err(|e| format!("node: {e}"))?;
    }
    let growth = if want("growth") {
        eprintln!("growth ...");
        growth::growth(plan, ep, &remote.floor_channel).await
    } else {
        Growth::default()
    };

    Ok(Report {
        headline,
        peer: peer_tables,
        mcp: mcp_tables,
        growth,
        request_bytes: bytes_1k,
        remote_1k_us: remote_1k,
    })
}
