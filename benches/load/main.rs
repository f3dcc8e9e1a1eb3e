//! The hookwire load tool: `cargo bench --bench load`.
//!
//! Measures hookwire side by side with its baselines in one run, always as
//! ratios of medians taken in the same run (A and B alternate in rounds, so
//! drift on a shared machine hits both alike):
//!
//! - a remote emission (client and interceptor service in separate
//!   processes on loopback) against a bare tonic unary call carrying the
//!   same request bytes;
//! - the host with in-process interceptors against the canonical
//!   in-process emitter (`agent_hooks::InterceptionEmitter`);
//! - a `parallel/strictest` fan-out to four remote interceptors that each
//!   wait 2 ms, against one such interceptor;
//! - throughput with 64 and 256 concurrent sessions against bare tonic
//!   with the same concurrency;
//! - how time and memory per emission grow with the context size, the
//!   number of interceptors and the number of sessions;
//! - a command hook spawned per decision against a remote emission.
//!
//! It prints one report, writes it to `BENCHMARKS.md`, and ends with the
//! `ratios:` line. The child process runs the same binary with `--serve`.
//!
//! Flags (after `--`): `--quick` (fewer rounds, a smoke run that leaves
//! `BENCHMARKS.md` alone); `--no-write`
//! (leave `BENCHMARKS.md` alone); `--only <section>` (one of `deadline`,
//! `remote`, `local`, `fanout`, `throughput`, `spawn`, `growth`; implies
//! `--no-write`); `--profile <what> [n]` (only `n` runs of one operation, for
//! a profiler: `remote`, `floor`, `floor-deadline`, `local`, `canon`,
//! `concurrent`, `concurrent-floor`, or `parts` for native timings of the
//! engine's per-emission work). `HOOKWIRE_BENCH_PORTS="<allow> <delay>
//! <floor>"` points `--profile` at a server started by hand (`--serve`),
//! e.g. one running under `valgrind --tool=callgrind`.

mod fixtures;
mod measure;
mod report;
mod serve;

use std::alloc::System;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::Profile;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::{Host, Session};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

use fixtures::Chain;
use measure::{CanonEmit, Emit, FloorCall, Samples, Spawn, allocs_per_op, interleaved};
use report::{Growth, Headline, Report};

/// Counts every allocation of the process (both sides of each in-process
/// comparison live here, so both pay the same small counting cost).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The command hook built next to this bench (`benches/support/command_hook.rs`).
const COMMAND_HOOK: &str = env!("CARGO_BIN_EXE_hookwire-command-hook");

const KIB: usize = 1024;
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
};

/// The server process, for CPU accounting (`None` when external).
static SERVER_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// CPU time (user + system) a process has used so far, in µs, from
/// `/proc/<pid>/stat` (clock ticks of 10 ms on Linux).
fn cpu_us(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let Ok(stat) = std::fs::read_to_string(path) else {
        return f64::NAN;
    };
    // Fields after the command name (which may contain spaces): state is
    // field 3, utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i - 3).and_then(|v| v.parse::<f64>().ok());
    match (ticks(14), ticks(15)) {
        (Some(u), Some(s)) => (u + s) * 10_000.0,
        _ => f64::NAN,
    }
}

/// Ports of the child's three services.
struct Endpoints {
    allow: String,
    delay: String,
    floor: String,
}

/// Endpoints of a server started by hand (`HOOKWIRE_BENCH_PORTS="<allow>
/// <delay> <floor>"`, e.g. one running under a profiler), or `None`.
fn external_server() -> Option<Endpoints> {
    let ports = std::env::var("HOOKWIRE_BENCH_PORTS").ok()?;
    let ports: Vec<u16> = ports
        .split_whitespace()
        .map(|p| p.parse().expect("a port"))
        .collect();
    Some(endpoints(&ports))
}

fn endpoints(ports: &[u16]) -> Endpoints {
    let url = |p: u16| format!("http://127.0.0.1:{p}");
    Endpoints {
        allow: url(ports[0]),
        delay: url(ports[1]),
        floor: url(ports[2]),
    }
}

fn spawn_server() -> (Child, Endpoints) {
    let exe = std::env::current_exe().expect("own path");
    let mut child = Command::new(exe)
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the server process");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the ports line");
    let ports: Vec<u16> = line
        .strip_prefix("ports ")
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
        .split_whitespace()
        .map(|p| p.parse().expect("a port"))
        .collect();
    (child, endpoints(&ports))
}

async fn started(host: &Host, id: &str) -> Arc<Session> {
    let s = host.session(id).expect("session");
    let e = s.start([fixtures::TOOL]).await.expect("start");
    assert!(e.proceeds(), "startup denied: {:?}", e.verdict());
    Arc::new(s)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--serve") {
        serve::run();
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
        let (child, ep) = match external_server() {
            Some(ep) => (None, ep),
            None => {
                let (c, ep) = spawn_server();
                (Some(c), ep)
            }
        };
        rt.block_on(profile(what, n, &ep));
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
        return;
    }
    let (mut child, ep) = spawn_server();
    let _ = SERVER_PID.set(child.id());
    let started_at = Instant::now();
    let report = rt.block_on(run(plan, &ep, only.as_deref()));
    let elapsed = started_at.elapsed();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();

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

/// `--profile <what> [n]`: only `n` runs of one operation (after a short
/// warm-up), for a profiler such as `valgrind --tool=callgrind`. `what` is
/// `remote`, `floor`, `local` or `canon`.
async fn profile(what: &str, n: usize, ep: &Endpoints) {
    let args = fixtures::tool_args(KIB);
    let call = fixtures::tool_call(&args);
    match what {
        "remote" => {
            let host =
                fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
            let mut op = Emit {
                session: started(&host, "s-profile").await,
                call,
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "floor" | "floor-deadline" => {
            let mut op = FloorCall {
                client: InterceptorClient::new(measure::channel(&ep.floor).await),
                request: fixtures::floor_request(&args),
                deadline: (what == "floor-deadline").then_some(REMOTE_TIMEOUT),
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "local" => {
            let host = fixtures::local_host(Chain::allow(1));
            let mut op = Emit {
                session: started(&host, "s-profile").await,
                call,
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "canon" => {
            let mut op = CanonEmit {
                emitter: fixtures::canon_emitter(Chain::allow(1)),
                builder: fixtures::canon_builder("s-profile"),
                args: Arc::new(args),
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "concurrent" | "concurrent-floor" => {
            // 64 sessions (or tonic tasks) with n/64 calls each, all at once.
            let host =
                fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
            let client = InterceptorClient::new(measure::channel(&ep.floor).await);
            let request = fixtures::floor_request(&args);
            let mut handles = Vec::new();
            for i in 0..64 {
                let session = started(&host, &format!("s-{i}")).await;
                let (call, mut client, request) = (call.clone(), client.clone(), request.clone());
                let floor = what == "concurrent-floor";
                handles.push(tokio::spawn(async move {
                    for _ in 0..n / 64 {
                        if floor {
                            client
                                .pre_tool_call(tonic::Request::new(request.clone()))
                                .await
                                .expect("floor answers");
                        } else {
                            session.pre_tool_call(&call).await.expect("emits");
                        }
                    }
                }));
            }
            for h in handles {
                h.await.expect("task");
            }
        }
        "parts" => parts(&args, n),
        "sessions" => {
            let host = fixtures::local_host(Chain::allow(1));
            for sessions in [1usize, 10, 100, 1000] {
                let per = (n / sessions).max(2);
                let (us, mem, per_open) = sessions_load(&host, &call, sessions, per).await;
                println!(
                    "{sessions:>5} sessions x {per:>5}: {us:>8.1} µs/emission, {:.0} B, {:.0} allocs per emission, {per_open:.0} B per open session",
                    mem.0, mem.1
                );
            }
        }
        other => panic!("unknown --profile target {other:?}"),
    }
}

/// Native time of each piece of work an emission does with the context,
/// `n` runs each, printed as medians of batches.
fn parts(args: &serde_json::Value, n: usize) {
    use hookwire::ContextLimits;
    use hookwire::wire::{context_from_request, context_to_request};
    let ctx = fixtures::context(args);
    let limits = ContextLimits::default();
    let request = context_to_request(&ctx).expect("encodes");
    let call = fixtures::tool_call(args);
    let time = |name: &str, f: &mut dyn FnMut()| {
        let mut batches = Samples::default();
        for _ in 0..20 {
            let t = Instant::now();
            for _ in 0..n / 20 {
                f();
            }
            batches
                .0
                .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
        }
        println!("{name:<28} {:>8.2} µs", batches.median());
    };
    time("validate", &mut || assert!(ctx.validate().is_ok()));
    time("check_limits", &mut || {
        assert!(ctx.check_limits(&limits).is_ok())
    });
    time("jcs_sha256_identity", &mut || {
        assert!(ctx.jcs_sha256_identity(&limits).is_ok());
    });
    time("identity preimage only", &mut || {
        let mut s = String::with_capacity(256);
        assert!(ctx.write_identity_preimage(&limits, &mut s).is_ok());
    });
    time("context_to_request", &mut || {
        assert!(context_to_request(&ctx).is_ok());
    });
    time("clone request", &mut || {
        drop(std::hint::black_box(request.clone()))
    });
    time("context_from_request", &mut || {
        assert!(context_from_request(request.clone()).is_ok());
    });
    time("clone tool args", &mut || {
        drop(std::hint::black_box(call.args.clone()))
    });
    time("clone + drop context", &mut || {
        drop(std::hint::black_box(ctx.clone()))
    });
    let text = hookwire::wire::json::encode(args);
    time("json::decode (args)", &mut || {
        assert!(hookwire::wire::json::decode(&text).is_ok());
    });
    time("serde_json::from_str (args)", &mut || {
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    });
    time("json::encode (args)", &mut || {
        drop(std::hint::black_box(hookwire::wire::json::encode(args)));
    });
}

async fn run(plan: Plan, ep: &Endpoints, only: Option<&str>) -> Report {
    let want = |section: &str| only.is_none_or(|o| o == section);
    let args_1k = fixtures::tool_args(KIB);
    let call_1k = fixtures::tool_call(&args_1k);
    let bytes_1k = fixtures::request_len(&args_1k);
    let mut headline = Vec::new();

    // --- remote emission vs the transport floor ---------------------------
    eprintln!("remote emission vs bare tonic ...");
    let remote = fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let remote_session = started(&remote, "s-remote").await;
    let mut ours = Emit {
        session: remote_session.clone(),
        call: call_1k.clone(),
    };
    let floor_channel = measure::channel(&ep.floor).await;
    let mut floor = FloorCall {
        client: InterceptorClient::new(floor_channel.clone())
            .max_decoding_message_size(16 * 1024 * 1024),
        request: fixtures::floor_request(&args_1k),
        deadline: None,
    };
    if want("deadline") {
        // What a per-call deadline costs the bare transport.
        let mut bounded = FloorCall {
            client: floor.client.clone(),
            request: floor.request.clone(),
            deadline: Some(REMOTE_TIMEOUT),
        };
        let (a, b) = interleaved(
            &mut bounded,
            &mut floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "bare tonic with a per-call deadline vs without".to_owned(),
            &a,
            &b,
            "",
            None,
        ));
        let (a, b) = interleaved(
            &mut ours,
            &mut bounded,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "remote emission vs bare tonic with the same deadline".to_owned(),
            &a,
            &b,
            "",
            None,
        ));
    }
    let mut remote_1k = f64::NAN;
    if want("remote") {
        let (a, b) = interleaved(
            &mut ours,
            &mut floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        remote_1k = a.median();
        headline.push(Headline::latency(
            format!("remote emission vs bare tonic unary ({bytes_1k} B request, 2 processes)"),
            &a,
            &b,
            "remote_vs_tonic",
            Some((1.25, false)),
        ));
    }

    // --- in-process host vs the canonical emitter --------------------------
    let mut overhead = Vec::new();
    let local_cases = if want("local") {
        eprintln!("in-process host vs canonical emitter ...");
        3
    } else {
        0
    };
    for (label, chain) in [
        ("1 allow", Chain::allow(1)),
        ("3 allow", Chain::allow(3)),
        (
            "allow, transform, allow",
            Chain {
                len: 3,
                transform_at: Some(1),
            },
        ),
    ]
    .into_iter()
    .take(local_cases)
    {
        let host = fixtures::local_host(chain);
        let mut ours = Emit {
            session: started(&host, "s-local").await,
            call: call_1k.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(chain),
            builder: fixtures::canon_builder("s-local"),
            args: Arc::new(args_1k.clone()),
        };
        let (a, b) = interleaved(
            &mut ours,
            &mut canon,
            500,
            plan.rounds,
            plan.local_per_round,
        )
        .await;
        overhead.push(a.median() / b.median());
        headline.push(Headline::latency(
            format!("in-process emission vs canonical emitter: {label}"),
            &a,
            &b,
            "",
            None,
        ));
    }
    if !overhead.is_empty() {
        let geomean = overhead.iter().map(|r| r.ln()).sum::<f64>() / overhead.len() as f64;
        headline.push(Headline::ratio_only(
            "overhead_vs_canonical: geometric mean of the three cases above",
            geomean.exp(),
            "overhead_vs_canonical",
            (1.0, false),
        ));
    }

    if want("fanout") {
        fanout(plan, ep, &call_1k, &mut headline).await;
    }
    if want("throughput") {
        for concurrency in [64, 256] {
            eprintln!("throughput with {concurrency} sessions ...");
            let t = throughput(
                &remote,
                &floor.client,
                &floor.request,
                &call_1k,
                concurrency,
                plan,
            )
            .await;
            headline.push(t.into_headline(concurrency));
        }
    }
    if want("spawn") {
        eprintln!("process-per-hook vs remote emission ...");
        let mut spawn = Spawn {
            program: COMMAND_HOOK,
            context: fixtures::context(&args_1k),
        };
        let (a, b) = interleaved(
            &mut spawn,
            &mut ours,
            5,
            plan.spawn_rounds,
            plan.spawn_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "command hook spawned per decision vs remote emission".to_owned(),
            &a,
            &b,
            "spawn_vs_remote",
            Some((5.0, true)),
        ));
    }
    let growth = if want("growth") {
        eprintln!("growth ...");
        growth(plan, ep, &floor_channel).await
    } else {
        Growth::default()
    };

    Report {
        headline,
        growth,
        request_bytes: bytes_1k,
        remote_1k_us: remote_1k,
    }
}

/// `parallel/strictest` to four remote interceptors that each wait
/// [`serve::DELAY`], against one.
async fn fanout(
    plan: Plan,
    ep: &Endpoints,
    call_1k: &hookwire_client::ToolCall,
    headline: &mut Vec<Headline>,
) {
    eprintln!("parallel fan-out ...");
    let delay_ms = serve::DELAY.as_millis();
    let four = fixtures::remote_host(&ep.delay, 4, Profile::ParallelStrictest, REMOTE_TIMEOUT);
    let one = fixtures::remote_host(&ep.delay, 1, Profile::ParallelStrictest, REMOTE_TIMEOUT);
    let mut fan = Emit {
        session: started(&four, "s-fan4").await,
        call: call_1k.clone(),
    };
    let mut single = Emit {
        session: started(&one, "s-fan1").await,
        call: call_1k.clone(),
    };
    let (a, b) = interleaved(
        &mut fan,
        &mut single,
        20,
        plan.fanout_rounds,
        plan.fanout_per_round,
    )
    .await;
    headline.push(Headline::latency(
        format!("parallel/strictest, 4 remote interceptors ({delay_ms} ms each) vs 1"),
        &a,
        &b,
        "parallel4_vs_single",
        Some((1.2, false)),
    ));
}

/// Emissions per second from `concurrency` sessions against one remote
/// interceptor service, and bare tonic calls per second from as many tasks
/// on one channel, alternating in rounds.
struct Throughput {
    ours_rate: f64,
    tonic_rate: f64,
    ours_lat: Samples,
    tonic_lat: Samples,
    /// CPU per call (client µs, server µs), summed over the rounds.
    ours_cpu: (f64, f64),
    tonic_cpu: (f64, f64),
}

impl Throughput {
    fn into_headline(self, concurrency: usize) -> Headline {
        Headline::throughput(
            format!("throughput, {concurrency} concurrent sessions vs bare tonic"),
            (self.ours_rate, self.ours_cpu),
            (self.tonic_rate, self.tonic_cpu),
            &self.ours_lat,
            &self.tonic_lat,
            if concurrency == 64 {
                "throughput_vs_tonic"
            } else {
                ""
            },
            (concurrency == 64).then_some((0.8, true)),
        )
    }
}

async fn throughput(
    host: &Host,
    client: &InterceptorClient<tonic::transport::Channel>,
    request: &hookwire::pb::PreToolCallRequest,
    call: &hookwire_client::ToolCall,
    concurrency: usize,
    plan: Plan,
) -> Throughput {
    let mut sessions = Vec::with_capacity(concurrency);
    for i in 0..concurrency {
        sessions.push(started(host, &format!("s-load-{i}")).await);
    }
    let run_ours = |window: Duration| {
        let tasks: Vec<_> = sessions
            .iter()
            .map(|s| {
                let (s, call) = (s.clone(), call.clone());
                async move {
                    let mut lat = Vec::new();
                    let deadline = Instant::now() + window;
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        let e = s.pre_tool_call(&call).await.expect("emits");
                        assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                }
            })
            .collect();
        run_tasks(tasks)
    };
    let run_tonic = |window: Duration| {
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (mut c, req) = (client.clone(), request.clone());
                async move {
                    let mut lat = Vec::new();
                    let deadline = Instant::now() + window;
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        c.pre_tool_call(tonic::Request::new(req.clone()))
                            .await
                            .expect("floor answers");
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                }
            })
            .collect();
        run_tasks(tasks)
    };
    let warm = plan.throughput_window / 4;
    run_ours(warm).await;
    run_tonic(warm).await;
    let (mut ours, mut tonic) = (Vec::new(), Vec::new());
    let (mut ours_lat, mut tonic_lat) = (Samples::default(), Samples::default());
    // CPU used by (client, server) and calls made, per side.
    let mut cpu = [(0.0, 0.0, 0usize); 2];
    let server = SERVER_PID.get().copied();
    for r in 0..plan.throughput_rounds {
        for side in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            let (c0, s0) = (cpu_us(None), cpu_us(server));
            let (rate, lat) = if side == 0 {
                run_ours(plan.throughput_window).await
            } else {
                run_tonic(plan.throughput_window).await
            };
            let acc = &mut cpu[side];
            acc.0 += cpu_us(None) - c0;
            acc.1 += cpu_us(server) - s0;
            acc.2 += lat.len();
            if side == 0 {
                ours.push(rate);
                ours_lat.0.extend(lat);
            } else {
                tonic.push(rate);
                tonic_lat.0.extend(lat);
            }
        }
    }
    let per_call = |(c, s, n): (f64, f64, usize)| (c / n as f64, s / n as f64);
    Throughput {
        ours_rate: Samples(ours).median(),
        tonic_rate: Samples(tonic).median(),
        ours_lat,
        tonic_lat,
        ours_cpu: per_call(cpu[0]),
        tonic_cpu: per_call(cpu[1]),
    }
}

/// Runs the tasks concurrently; returns completions per second and every
/// latency sample.
async fn run_tasks<F>(tasks: Vec<F>) -> (f64, Vec<f64>)
where
    F: std::future::Future<Output = Vec<f64>> + Send + 'static,
{
    let start = Instant::now();
    let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("load task"));
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    (rate, all)
}

/// Time and memory per emission as the context, the chain and the number
/// of sessions grow.
async fn growth(plan: Plan, ep: &Endpoints, floor_channel: &tonic::transport::Channel) -> Growth {
    let s = plan.growth_scale;
    let mut g = Growth::default();

    // Context size: 1 allow interceptor.
    for (label, bytes, per_round) in [
        ("1 KiB", KIB, 50 * s),
        ("100 KiB", 100 * KIB, 5 * s),
        ("1 MiB", 1024 * KIB, s),
    ] {
        let args = fixtures::tool_args(bytes);
        let call = fixtures::tool_call(&args);
        let local = fixtures::local_host(Chain::allow(1));
        let mut local = Emit {
            session: started(&local, "s-size").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(1)),
            builder: fixtures::canon_builder("s-size"),
            args: Arc::new(args.clone()),
        };
        let remote =
            fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let mut remote = Emit {
            session: started(&remote, "s-size").await,
            call,
        };
        let mut floor = FloorCall {
            client: InterceptorClient::new(floor_channel.clone())
                .max_decoding_message_size(16 * 1024 * 1024),
            request: fixtures::floor_request(&args),
            deadline: None,
        };
        let rounds = 4;
        let (l, c) = interleaved(&mut local, &mut canon, 2, rounds, per_round).await;
        let (r, f) = interleaved(&mut remote, &mut floor, 2, rounds, per_round).await;
        let n = per_round.max(3);
        let mem = [
            allocs_per_op(&mut local, n).await,
            allocs_per_op(&mut canon, n).await,
            allocs_per_op(&mut remote, n).await,
            allocs_per_op(&mut floor, n).await,
        ];
        g.sizes.push(report::GrowthRow {
            label: format!("{label} ({} B request)", fixtures::request_len(&args)),
            times: vec![l.median(), c.median(), r.median(), f.median()],
            memory: mem.to_vec(),
        });
    }

    // Chain length: in-process (hookwire, canonical) and remote (sequential
    // and parallel), 1 KiB context.
    let args = fixtures::tool_args(KIB);
    let call = fixtures::tool_call(&args);
    for n in [1, 4, 16] {
        let local = fixtures::local_host(Chain::allow(n));
        let mut local = Emit {
            session: started(&local, "s-chain").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(n)),
            builder: fixtures::canon_builder("s-chain"),
            args: Arc::new(args.clone()),
        };
        let seq = fixtures::remote_host(&ep.allow, n, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let mut seq = Emit {
            session: started(&seq, "s-chain").await,
            call: call.clone(),
        };
        let par = fixtures::remote_host(&ep.allow, n, Profile::ParallelStrictest, REMOTE_TIMEOUT);
        let mut par = Emit {
            session: started(&par, "s-chain").await,
            call: call.clone(),
        };
        let per_round = 40 * s / n.max(1) + 5;
        let (l, c) = interleaved(&mut local, &mut canon, 20, 4, per_round).await;
        let (r, p) = interleaved(&mut seq, &mut par, 20, 4, per_round).await;
        let m = per_round.max(10);
        let mem = [
            allocs_per_op(&mut local, m).await,
            allocs_per_op(&mut canon, m).await,
            allocs_per_op(&mut seq, m).await,
            allocs_per_op(&mut par, m).await,
        ];
        g.chains.push(report::GrowthRow {
            label: format!("{n}"),
            times: vec![l.median(), c.median(), r.median(), p.median()],
            memory: mem.to_vec(),
        });
    }

    // Sessions: open N at once, each emitting concurrently.
    for sessions in [1usize, 1000] {
        let per_session = (2500 * s).div_ceil(sessions).max(10);
        let local = fixtures::local_host(Chain::allow(1));
        let remote =
            fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let (ours_us, ours_mem, ours_session) =
            sessions_load(&local, &call, sessions, per_session).await;
        let (canon_us, canon_mem, canon_session) =
            canon_sessions_load(&args, sessions, per_session).await;
        let (remote_us, remote_mem, _) = sessions_load(&remote, &call, sessions, per_session).await;
        g.sessions.push(report::SessionRow {
            sessions,
            times: vec![ours_us, canon_us, remote_us],
            memory: vec![ours_mem, canon_mem, remote_mem],
            per_session: vec![ours_session, canon_session],
        });
    }
    g
}

/// Opens `sessions` sessions of `host` (started), then runs `per_session`
/// emissions in each, all sessions released at once (their tasks are
/// spawned first). Returns wall time per emission (µs), allocations per
/// emission, and live bytes per open session.
async fn sessions_load(
    host: &Host,
    call: &hookwire_client::ToolCall,
    sessions: usize,
    per_session: usize,
) -> (f64, (f64, f64), f64) {
    let region = Region::new(GLOBAL);
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let s = host.session(format!("s-many-{i}")).expect("session");
        open.push(Arc::new(s));
    }
    let per_open = measure::live_bytes(&region) / sessions as f64;
    for s in &open {
        let e = s.start([fixtures::TOOL]).await.expect("start");
        assert!(e.proceeds());
    }
    let gate = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let handles: Vec<_> = open
        .iter()
        .map(|s| {
            let (s, call, gate) = (s.clone(), call.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                for _ in 0..per_session {
                    let e = s.pre_tool_call(&call).await.expect("emits");
                    assert!(e.proceeds());
                }
            })
        })
        .collect();
    released(gate, handles, sessions * per_session, per_open).await
}

/// Releases the session tasks waiting at `gate` all at once and times
/// them to the end: (µs per emission, allocations per emission, the
/// given live bytes per open session).
async fn released(
    gate: Arc<tokio::sync::Barrier>,
    handles: Vec<tokio::task::JoinHandle<()>>,
    emissions: usize,
    per_open: f64,
) -> (f64, (f64, f64), f64) {
    let region = Region::new(GLOBAL);
    let start = Instant::now();
    gate.wait().await;
    for h in handles {
        h.await.expect("session task");
    }
    let total = emissions as f64;
    let us = start.elapsed().as_secs_f64() * 1e6 / total;
    let st = region.change();
    let mem = (
        (st.bytes_allocated as f64 + st.bytes_reallocated.max(0) as f64) / total,
        (st.allocations + st.reallocations) as f64 / total,
    );
    (us, mem, per_open)
}

/// The canonical emitter's counterpart of [`sessions_load`]: one emitter
/// and one context builder per session (its emitter is per session).
async fn canon_sessions_load(
    args: &serde_json::Value,
    sessions: usize,
    per_session: usize,
) -> (f64, (f64, f64), f64) {
    let args = Arc::new(args.clone());
    let region = Region::new(GLOBAL);
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        open.push(CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(1)),
            builder: fixtures::canon_builder(&format!("s-many-{i}")),
            args: Arc::clone(&args),
        });
    }
    let per_open = measure::live_bytes(&region) / sessions as f64;
    let gate = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let handles: Vec<_> = open
        .into_iter()
        .map(|mut op| {
            let gate = gate.clone();
            tokio::spawn(async move {
                gate.wait().await;
                for _ in 0..per_session {
                    measure::Op::once(&mut op).await;
                }
            })
        })
        .collect();
    released(gate, handles, sessions * per_session, per_open).await
}
