//! The `policy` section: a Rego decision against the hand-written Rust
//! policy it replaces, both remote.
//!
//! A child process (this binary with `--serve-policy`) serves two
//! interceptor services on loopback: `hookwire policy`'s service with only
//! `examples/policies/destructive_commands.rego` loaded, and the demo's
//! Rust `Policy` (`cli/src/demo_agent.rs`), which decides the same thing.
//! The parent emits the 1 KiB `pre_tool_call` of the other sections (a
//! `bash` command that is not destructive, so every pattern is checked)
//! through a hookwire host bound to each and reports, as ratios taken in
//! the same run:
//!
//! - latency: medians of interleaved rounds (target ≤ 1.5× the Rust one);
//! - throughput with 64 concurrent sessions in alternating windows
//!   (target ≥ 0.6×);
//! - the in-process evaluation time of one Rego decision
//!   (`PolicySet::decide`, no transport).

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::Profile;
use hookwire_client::Session;
use hookwire_policy::{Policies, PolicyOptions, PolicyService, PolicySet};
use hookwire_server::Server;
use tokio::net::TcpListener;

use crate::fixtures;
use crate::measure::{Emit, Samples, interleaved};

#[path = "../../cli/src/demo_agent.rs"]
#[allow(dead_code, unused_imports)]
mod demo_agent;

/// The section's name for `--only`.
pub const SECTION: &str = "policy";

/// The flag that makes this binary the section's server process.
pub const SERVE_FLAG: &str = "--serve-policy";

const TIMEOUT: Duration = Duration::from_secs(5);
const CONCURRENCY: usize = 64;

/// A folder holding only the destructive-command policy (the library's
/// other packages would add work the Rust policy does not do).
fn destructive_only() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookwire-bench-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("policy folder");
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/policies/destructive_commands.rego"
    );
    std::fs::copy(source, dir.join("destructive_commands.rego")).expect("copy the policy");
    dir
}

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
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "ports {} {}", port(&rego), port(&rust));
            let _ = out.flush();
        }
        let dir = destructive_only();
        let policies = Policies::load(&dir, PolicyOptions::default())
            .expect("the destructive-command policy loads");
        let _ = std::fs::remove_dir_all(&dir);
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

async fn started(host: &hookwire_client::Host, id: &str) -> Arc<Session> {
    let s = host.session(id).expect("session");
    let e = s.start([fixtures::TOOL]).await.expect("start");
    assert!(e.proceeds(), "startup denied: {:?}", e.verdict());
    Arc::new(s)
}

/// Emissions per second of `sessions` emitting for `window` at once.
async fn per_second(
    sessions: &[Arc<Session>],
    call: &hookwire_client::ToolCall,
    window: Duration,
) -> f64 {
    let started = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (s, call) = (s.clone(), call.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + window;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let e = s.pre_tool_call(&call).await.expect("emits");
                    assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("task");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Runs the section and prints its table.
pub async fn run(quick: bool) {
    eprintln!("policy: Rego decision vs the Rust demo policy ...");
    let (rounds, per_round, window, windows) = if quick {
        (6, 50, Duration::from_millis(400), 2)
    } else {
        (30, 100, Duration::from_millis(1500), 4)
    };
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
    let ports: Vec<u16> = line
        .strip_prefix("ports ")
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
        .split_whitespace()
        .map(|p| p.parse().expect("a port"))
        .collect();
    let url = |p: u16| format!("http://127.0.0.1:{p}");

    let args = fixtures::tool_args(crate::KIB);
    let call = fixtures::tool_call(&args);
    let rego_host = fixtures::remote_host(&url(ports[0]), 1, Profile::SequentialFirstDeny, TIMEOUT);
    let rust_host = fixtures::remote_host(&url(ports[1]), 1, Profile::SequentialFirstDeny, TIMEOUT);
    let mut rego = Emit {
        session: started(&rego_host, "s-rego").await,
        call: call.clone(),
    };
    let mut rust = Emit {
        session: started(&rust_host, "s-rust").await,
        call: call.clone(),
    };
    let (a, b) = interleaved(&mut rego, &mut rust, 200, rounds, per_round).await;
    let (rego_lat, rust_lat) = (a.median(), b.median());

    let mut rego_sessions = Vec::new();
    let mut rust_sessions = Vec::new();
    for i in 0..CONCURRENCY {
        rego_sessions.push(started(&rego_host, &format!("s-rego-{i}")).await);
        rust_sessions.push(started(&rust_host, &format!("s-rust-{i}")).await);
    }
    let (mut rego_tp, mut rust_tp) = (Samples::default(), Samples::default());
    for w in 0..windows {
        if w % 2 == 0 {
            rego_tp
                .0
                .push(per_second(&rego_sessions, &call, window).await);
            rust_tp
                .0
                .push(per_second(&rust_sessions, &call, window).await);
        } else {
            rust_tp
                .0
                .push(per_second(&rust_sessions, &call, window).await);
            rego_tp
                .0
                .push(per_second(&rego_sessions, &call, window).await);
        }
    }
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();

    // In process: one decision, no transport.
    let set = PolicySet::load(&destructive_only(), PolicyOptions::default()).expect("loads");
    let ctx = fixtures::context(&args);
    let n = if quick { 2_000 } else { 20_000 };
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
    // The same, for a command the policy denies (the regex path).
    let denied =
        fixtures::context(&serde_json::json!({"cmd": "rm -rf /srv/app/build", "cwd": "/srv/app"}));
    let mut deny_batches = Samples::default();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..n / 20 {
            let v = set.decide(&denied).expect("decides");
            assert!(!v.is_permit());
        }
        deny_batches
            .0
            .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
    }
    let _ = std::fs::remove_dir_all(destructive_only());

    let latency_ratio = rego_lat / rust_lat;
    let throughput_ratio = rego_tp.median() / rust_tp.median();
    println!(
        "\n## Policy: a Rego decision vs the hand-written Rust policy (remote, 1 KiB context)\n"
    );
    println!("| measure | Rego (`hookwire policy`) | Rust demo policy | ratio | target |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| latency, median of {rounds}×{per_round} | {rego_lat:.1} µs | {rust_lat:.1} µs | {latency_ratio:.2}× | ≤ 1.5× |"
    );
    println!(
        "| throughput, {CONCURRENCY} sessions, median of {windows} windows | {:.0}/s | {:.0}/s | {throughput_ratio:.2}× | ≥ 0.6× |",
        rego_tp.median(),
        rust_tp.median()
    );
    println!(
        "| in-process evaluation per decision | {:.1} µs | — | — | — |",
        batches.median()
    );
    println!(
        "| in-process evaluation, a denied `rm -rf` (regex path) | {:.1} µs | — | — | — |",
        deny_batches.median()
    );
    println!(
        "\npolicy ratios: latency_vs_rust={latency_ratio:.2} throughput_vs_rust={throughput_ratio:.2}"
    );
}
