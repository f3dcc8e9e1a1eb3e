//! The `policy` section: a Rego decision against the hand-written Rust
//! policy it replaces, both remote.
//!
//! A child process (this binary with `--serve-policy`) serves two
//! interceptor services on loopback: `hookwire policy`'s service with only
//! `examples/policies/destructive_commands.rego` loaded, and the demo's
//! Rust `Policy` (`hookwire_demo`), which decides the same
//! thing. The parent emits the 1 KiB `pre_tool_call` of the other sections
//! (a `bash` command that is not destructive, so every pattern is checked)
//! through a hookwire host bound to each. Its rows in the report, as
//! ratios taken in the same run:
//!
//! - latency: medians of interleaved rounds (target ≤ 1.5× the Rust one,
//!   `policy_vs_rust`);
//! - throughput with 64 concurrent sessions in alternating windows
//!   (target ≥ 0.6×, `policy_throughput_vs_rust`), with CPU per call;
//! - the in-process evaluation time of one Rego decision
//!   (`PolicySet::decide`, no transport), and the same decision handed to
//!   the evaluation workers (`Policies::decide_bounded`, what the service
//!   runs);
//! - how long the caller of a decision stuck inside one built-in waits for
//!   its error (the bound, not the built-in's own time);
//! - the same decision made in a host by the `hookwire.rego` binding
//!   (what `--policy DIR` binds) against the Rust policy bound in
//!   process (target ≤ 3×, `policy_embedded_vs_rust`, `embedded.rs`);
//! - one in-process decision through the service with the decision log
//!   (JSON entries to a discarding sink) and the `hookwire_policy_*`
//!   metrics observing it, against the same service without them.
//!
//! `--profile policy [n]` runs only the in-process evaluation, `n` times,
//! for `valgrind --tool=callgrind`.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::Profile;
use hookwire_client::{Host, Session, ToolCall};
use hookwire_demo as demo_agent;
use hookwire_policy::{Policies, PolicyOptions, PolicyService, PolicySet};
use hookwire_server::Server;
use tokio::net::TcpListener;

use crate::child::cpu_us;
use crate::embedded::PolicyDir;
use crate::measure::{Emit, Samples, interleaved};
use crate::report::Headline;
use crate::{KIB, Plan, REMOTE_TIMEOUT, fixtures, started};

/// The flag that makes this binary the section's server process.
pub const SERVE_FLAG: &str = "--serve-policy";

/// Concurrent sessions of the throughput row.
const CONCURRENCY: usize = 64;

/// The child: both services on loopback; prints `ports <rego> <rust>`,
/// serves until stdin closes.
pub fn serve() -> ! {
    std::thread::spawn(|| {
        let mut line = String::new();
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        while matches!(lock.read_line(&mut line), Ok(n) if n > 0) {
            line.clear();
        }
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("server runtime");
    rt.block_on(async {
        let bind = || TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)));
        let (rego, rust) = (bind().await.expect("bind"), bind().await.expect("bind"));
        let port = |l: &TcpListener| l.local_addr().expect("address").port();
        let policies = {
            let dir = PolicyDir::destructive_only();
            Policies::load(dir.path(), PolicyOptions::default())
                .expect("the destructive-command policy loads")
        };
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "ports {} {}", port(&rego), port(&rust));
            let _ = out.flush();
        }
        let never = std::future::pending::<()>;
        let a = tokio::spawn(
            Server::builder()
                .service(PolicyService::new(policies))
                .serve_with_listener(rego, never()),
        );
        let b = tokio::spawn(
            Server::builder()
                .service(demo_agent::Policy)
                .serve_with_listener(rust, never()),
        );
        let _ = tokio::join!(a, b);
    });
    std::process::exit(1)
}

/// Starts the child and reads its two ports: the Rego service's URL, then
/// the Rust policy's (the `gateway_peer` section binds the first).
pub fn spawn_child() -> (Child, [String; 2]) {
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg(SERVE_FLAG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the policy server process");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ports line");
    let urls: Vec<String> = line
        .strip_prefix("ports ")
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
        .split_whitespace()
        .map(|p| format!("http://127.0.0.1:{}", p.parse::<u16>().expect("a port")))
        .collect();
    let urls: [String; 2] = urls.try_into().expect("two ports");
    (child, urls)
}

/// One window of `sessions` emitting at once: (emissions per second,
/// latency of each emission in µs).
async fn window(sessions: &[Arc<Session>], call: &ToolCall, window: Duration) -> (f64, Vec<f64>) {
    let started = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (s, mut call) = (s.clone(), call.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + window;
                let mut lat = Vec::new();
                while Instant::now() < deadline {
                    // A distinct id per emission (§3.1 rule 5).
                    crate::fixtures::renumber(&mut call);
                    let t = Instant::now();
                    let e = s.pre_tool_call(&call).await.expect("emits");
                    assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    (all.len() as f64 / started.elapsed().as_secs_f64(), all)
}

/// Throughput of both hosts in alternating windows: per side, (median
/// rate, CPU per call (client µs, server µs)) and the latencies.
async fn throughput(
    hosts: [&Host; 2],
    call: &ToolCall,
    plan: Plan,
    server: u32,
) -> [((f64, (f64, f64)), Samples); 2] {
    let mut sessions: [Vec<Arc<Session>>; 2] = [Vec::new(), Vec::new()];
    for (side, host) in hosts.iter().enumerate() {
        for i in 0..CONCURRENCY {
            sessions[side].push(started(host, &format!("s-policy-{side}-{i}")).await);
        }
    }
    for s in &sessions {
        window(s, call, plan.throughput_window / 4).await;
    }
    let mut rates = [Samples::default(), Samples::default()];
    let mut lats = [Samples::default(), Samples::default()];
    let mut cpu = [(0.0, 0.0, 0usize); 2];
    for r in 0..plan.throughput_rounds {
        for side in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            let (c0, s0) = (cpu_us(None), cpu_us(Some(server)));
            let (rate, lat) = window(&sessions[side], call, plan.throughput_window).await;
            cpu[side].0 += cpu_us(None) - c0;
            cpu[side].1 += cpu_us(Some(server)) - s0;
            cpu[side].2 += lat.len();
            rates[side].0.push(rate);
            lats[side].0.extend(lat);
        }
    }
    let [lat_a, lat_b] = lats;
    let per_call = |(c, s, n): (f64, f64, usize)| (c / n as f64, s / n as f64);
    [
        ((rates[0].median(), per_call(cpu[0])), lat_a),
        ((rates[1].median(), per_call(cpu[1])), lat_b),
    ]
}

/// The median time of one in-process decision, in batches of `n / 20`.
fn in_process(n: usize) -> Samples {
    let dir = PolicyDir::destructive_only();
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    let mut batches = Samples::default();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..n / 20 {
            let v = set.decide(&ctx).expect("decides");
            assert!(v.is_permit());
        }
        batches
            .0
            .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
    }
    batches
}

/// Median time per decision through `PolicyService::intercept` with the
/// decision log and metrics observing, then without, in interleaved
/// batches of `n / 20`.
async fn observed(n: usize) -> (Samples, Samples) {
    use hookwire::Interceptor as _;
    use hookwire_policy::decision_log::{DecisionLog, Inclusion, JsonLines};
    use hookwire_policy::metrics::PolicyMetrics;

    let dir = PolicyDir::destructive_only();
    let policies = Policies::load(dir.path(), PolicyOptions::default()).expect("loads");
    let log = Arc::new(
        DecisionLog::start(
            JsonLines::new(Box::new(std::io::sink())),
            n,
            Inclusion::default(),
        )
        .expect("a decision log"),
    );
    let mut registry = hookwire_server::prometheus_client::registry::Registry::default();
    let metrics = PolicyMetrics::register(&mut registry);
    let logged = PolicyService::new(Arc::clone(&policies))
        .observe(log.clone())
        .observe(Arc::new(metrics));
    let plain = PolicyService::new(policies);
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    let (mut with, mut without) = (Samples::default(), Samples::default());
    for round in 0..40 {
        let (service, into) = if round % 2 == 0 {
            (&logged, &mut with)
        } else {
            (&plain, &mut without)
        };
        let t = Instant::now();
        for _ in 0..n / 20 {
            let v = service.intercept(&ctx).await.expect("decides");
            assert!(v.is_permit());
        }
        into.0
            .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
    }
    let summary = log.close();
    assert_eq!(
        summary.dropped, 0,
        "the bench's log buffer holds every entry"
    );
    (with, without)
}

/// The same decision handed to the evaluation workers and awaited
/// (`Policies::decide_bounded`, what the service runs): the median per
/// decision, in batches of `n / 20`.
async fn in_process_bounded(n: usize) -> Samples {
    let dir = PolicyDir::destructive_only();
    let policies = Policies::load(dir.path(), PolicyOptions::default()).expect("loads");
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    let mut batches = Samples::default();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..n / 20 {
            let v = policies.decide_bounded(&ctx).await.expect("decides");
            assert!(v.is_permit());
        }
        batches
            .0
            .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
    }
    batches
}

/// How long the caller waits for the answer to a decision spending its
/// time inside one built-in call within the caps (`net.cidr_expand` of a
/// /16 under a 5 ms bound): the error arrives at the bound, not when the
/// call returns.
async fn runaway_answered(rounds: usize) -> Samples {
    let dir = PolicyDir::destructive_only();
    std::fs::write(
        dir.path().join("runaway.rego"),
        "package hookwire.runaway\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains \"policy:never\" if count(net.cidr_expand(\"10.0.0.0/16\")) == -1\n",
    )
    .expect("runaway policy");
    let options = PolicyOptions {
        eval_limit: Duration::from_millis(5),
        ..PolicyOptions::default()
    };
    let policies = Policies::load(dir.path(), options).expect("loads");
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    let mut answered = Samples::default();
    for _ in 0..rounds {
        let t = Instant::now();
        let refused = policies.decide_bounded(&ctx).await.is_err();
        answered.0.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(refused, "a runaway decision is an error");
        // Let the stuck worker return before the next round.
        while policies.bound_status().stuck > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    answered
}

/// `--profile policy [n]`: `n` in-process decisions after a short warm-up,
/// for a profiler; prints the median time per decision.
pub fn profile(n: usize) {
    let dir = PolicyDir::destructive_only();
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    for _ in 0..20 {
        assert!(set.decide(&ctx).expect("decides").is_permit());
    }
    let t = Instant::now();
    for _ in 0..n {
        assert!(set.decide(&ctx).expect("decides").is_permit());
    }
    println!(
        "{n} in-process Rego decisions: {:.1} µs each",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}

/// Runs the section: its rows go to `headline`.
pub async fn section(plan: Plan, headline: &mut Vec<Headline>) {
    eprintln!("policy: Rego decision vs the Rust demo policy ...");
    let (mut child, [rego_url, rust_url]) = spawn_child();
    let args = fixtures::tool_args(KIB);
    let call = fixtures::tool_call(&args);
    let host =
        |url: &str| fixtures::remote_host(url, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let (rego_host, rust_host) = (host(&rego_url), host(&rust_url));
    let mut rego = Emit {
        session: started(&rego_host, "s-rego").await,
        call: call.clone(),
    };
    let mut rust = Emit {
        session: started(&rust_host, "s-rust").await,
        call: call.clone(),
    };
    let (a, b) = interleaved(
        &mut rego,
        &mut rust,
        200,
        plan.rounds,
        plan.remote_per_round,
    )
    .await;
    headline.push(Headline::latency(
        "remote Rego decision (`hookwire policy`, destructive commands) vs the Rust demo policy"
            .to_owned(),
        &a,
        &b,
        "policy_vs_rust",
        Some((1.5, false)),
    ));
    let [(rego_tp, rego_lat), (rust_tp, rust_lat)] =
        throughput([&rego_host, &rust_host], &call, plan, child.id()).await;
    headline.push(Headline::throughput(
        format!(
            "throughput, {CONCURRENCY} concurrent sessions: Rego decision vs the Rust demo policy"
        ),
        rego_tp,
        rust_tp,
        &rego_lat,
        &rust_lat,
        "policy_throughput_vs_rust",
        Some((0.6, true)),
    ));
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();

    let n = if plan.rounds < 10 { 2_000 } else { 20_000 };
    headline.push(Headline::alone(
        "in-process Rego decision (`PolicySet::decide`, no transport)",
        &in_process(n),
    ));
    let (with, without) = observed(n).await;
    headline.push(Headline::latency(
        "in-process decision with the decision log and policy metrics vs without (`PolicyService`)"
            .to_owned(),
        &with,
        &without,
        "",
        None,
    ));
    headline.push(Headline::alone(
        "in-process Rego decision on the evaluation workers (`Policies::decide_bounded`)",
        &in_process_bounded(n).await,
    ));
    headline.push(Headline::alone(
        "a decision stuck inside one built-in, 5 ms bound: the error answered after",
        &runaway_answered(if plan.rounds < 10 { 5 } else { 20 }).await,
    ));
    crate::embedded::versus_rust(plan, headline).await;
    crate::policy_cedar::rows(plan, headline).await;
}
