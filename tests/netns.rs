//! Real network faults between a host and its replicas: the test builds
//! its own network namespaces joined by veth pairs (one for the host, one
//! per replica), runs each replica as a child process inside its
//! namespace, runs the host in its own, and then breaks the network under
//! it while sessions emit:
//!
//! 1. baseline: three replicas, nothing denied;
//! 2. partition: replica 1's link goes down mid-run (packets to it vanish
//!    silently); the host keeps serving from the others, and every
//!    emission that failed is a recorded `host_error`;
//! 3. heal: the link comes back and the replica is re-admitted;
//! 4. prohibit: a `prohibit` route to replica 2 in the host's namespace
//!    refuses new connections; the host keeps serving.
//!
//! The kernel here has no `netem` (see the machine notes), so faults are
//! link state and routes. Run as root (CI is); where namespaces cannot be
//! made the test says why and skips. Every namespace (and with it every
//! veth) is deleted when the test ends, failed or not.
//!
//! A plain binary (`harness = false`) that is also its own children:
//! `netns replica ADDR` serves an allow-all interceptor, `netns host
//! ENDPOINTS...` runs the host side and reports on stdout.

use hookwire_testkit as common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Scripted, metric_value};
use hookwire::InterceptionPoint::{AgentStartup, Input, PreToolCall};
use hookwire_client::prometheus_client::encoding::text::encode;
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{
    Host, HostMetrics, InputRole, InterceptorBinding, RecordLog, Session, ToolCall,
};
use serde_json::json;

const REPLICAS: usize = 3;
const PORT: u16 = 50151;
const SESSIONS: usize = 8;
/// The per-call bound: a partitioned replica costs an emission this much.
const TIMEOUT: Duration = Duration::from_millis(800);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("replica") => replica(&args[1]),
        Some("host") => host_side(&args[1..]),
        // libtest-style flags (`--list`, filters) from `cargo test`.
        Some("--list") => println!("netns: test"),
        _ => orchestrate(),
    }
}

// ---------------------------------------------------------------------------
// The replica child: an allow-all interceptor in its namespace.
// ---------------------------------------------------------------------------

fn replica(addr: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .expect("bind the replica");
        println!("listening");
        std::io::stdout().flush().unwrap();
        hookwire_server::Server::builder()
            .service(Scripted::allow_all("replica"))
            .serve_with_listener(listener, std::future::pending())
            .await
            .expect("serve");
    });
}

// ---------------------------------------------------------------------------
// The host child: sessions emitting, phases driven by the orchestrator.
// ---------------------------------------------------------------------------

/// What one phase saw.
#[derive(Default, Debug)]
struct Tally {
    /// Emissions made.
    emitted: usize,
    allowed: usize,
    /// Denies by reason.
    denied: Vec<String>,
    /// Denies in the phase's last second (a fault should be ejected by
    /// then).
    denied_late: usize,
}

fn host_side(endpoints: &[String]) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let records = RecordLog::new();
        let mut registry = Registry::default();
        let metrics = HostMetrics::register(&mut registry);
        let host = Arc::new(
            Host::builder("netns-agent", "hookwire")
                .bind(
                    InterceptorBinding::local("opening", Scripted::allow_all("opening"))
                        .at([AgentStartup, Input]),
                )
                .bind(
                    InterceptorBinding::remote_replicas("fleet", endpoints.iter().cloned())
                        .timeout(TIMEOUT)
                        .at([PreToolCall]),
                )
                .record_sink(records.clone())
                .metrics(metrics)
                .build()
                .unwrap(),
        );
        let mut sessions = Vec::new();
        for i in 0..SESSIONS {
            sessions.push(Arc::new(open(&host, &format!("s{i}")).await));
        }
        let mut counter = 0usize;
        let mut stdin = std::io::stdin().lock().lines();
        let mut ask = |what: &str| {
            println!("{what}");
            std::io::stdout().flush().unwrap();
            stdin.next().expect("the orchestrator answers").unwrap()
        };
        let mut check = Checks::default();

        let a = run_phase(&sessions, &mut counter, Duration::from_secs(1)).await;
        check.that(a.denied.is_empty(), format!("baseline: {a:?}"));
        check.that(a.allowed > 50, format!("baseline served little: {a:?}"));

        ask("partition");
        let b = run_phase(&sessions, &mut counter, Duration::from_secs(4)).await;
        check.that(
            b.allowed > 100,
            format!("partition: the others did not serve: {b:?}"),
        );
        check.that(
            b.denied.iter().all(|r| {
                r == "host_error:interceptor_timeout" || r == "host_error:interceptor_failed"
            }),
            format!("partition: a deny that is not a host error: {b:?}"),
        );
        check.that(
            b.denied_late == 0,
            format!("partition: still denying after 3 s: {b:?}"),
        );

        ask("heal");
        let readmissions = || {
            let mut text = String::new();
            encode(&mut text, &registry).unwrap();
            metric_value(
                &text,
                "hookwire_host_replica_readmissions_total",
                &[("interceptor", "fleet")],
            )
        };
        let healing = Instant::now();
        let mut c = run_phase(&sessions, &mut counter, Duration::from_millis(500)).await;
        while readmissions() < 1.0 && healing.elapsed() < Duration::from_secs(10) {
            let more = run_phase(&sessions, &mut counter, Duration::from_millis(500)).await;
            c.emitted += more.emitted;
            c.allowed += more.allowed;
            c.denied.extend(more.denied);
        }
        check.that(
            readmissions() >= 1.0,
            "heal: the replica was not re-admitted".into(),
        );
        check.that(c.denied.is_empty(), format!("heal: {c:?}"));

        ask("prohibit");
        let d = run_phase(&sessions, &mut counter, Duration::from_secs(4)).await;
        check.that(
            d.allowed > 100,
            format!("prohibit: the others did not serve: {d:?}"),
        );
        check.that(
            d.denied.iter().all(|r| {
                r == "host_error:interceptor_timeout" || r == "host_error:interceptor_failed"
            }),
            format!("prohibit: a deny that is not a host error: {d:?}"),
        );
        check.that(
            d.denied_late == 0,
            format!("prohibit: still denying after 3 s: {d:?}"),
        );

        // Every emission has its record, every deny a host_error record,
        // and no session skipped a sequence number.
        let all = records.records();
        all.iter().for_each(hookwire_testkit::check_record);
        let emitted = 2 * SESSIONS + [&a, &b, &c, &d].iter().map(|t| t.emitted).sum::<usize>();
        check.that(
            all.len() == emitted,
            format!("{} records for {emitted} emissions", all.len()),
        );
        let denied_total = [&a, &b, &c, &d]
            .iter()
            .map(|t| t.denied.len())
            .sum::<usize>();
        let host_errors = all
            .iter()
            .filter(|r| {
                r.verdict
                    .reason
                    .as_deref()
                    .is_some_and(|x| x.starts_with("host_error:"))
            })
            .count();
        check.that(
            host_errors == denied_total,
            format!("{host_errors} host_error records for {denied_total} denies"),
        );
        for i in 0..SESSIONS {
            let id = format!("s{i}");
            let seqs: Vec<i64> = all
                .iter()
                .filter(|r| r.session_id == id)
                .map(|r| r.sequence)
                .collect();
            let contiguous = seqs.windows(2).all(|w| w[1] == w[0] + 1);
            check.that(contiguous, format!("session {id}: sequence gap"));
        }
        println!(
            "summary baseline={} partition={}/{} heal={} prohibit={}/{} records={}",
            a.allowed,
            b.allowed,
            b.denied.len(),
            c.allowed,
            d.allowed,
            d.denied.len(),
            all.len()
        );
        if check.failures.is_empty() {
            println!("ok");
        } else {
            for f in &check.failures {
                println!("FAILED {f}");
            }
        }
        std::io::stdout().flush().unwrap();
    });
}

#[derive(Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn that(&mut self, ok: bool, what: String) {
        if !ok {
            self.failures.push(what);
        }
    }
}

async fn open(host: &Host, id: &str) -> Session {
    let session = host.session(id).unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    session
}

/// Every session emits tool calls back to back for `length`.
async fn run_phase(sessions: &[Arc<Session>], counter: &mut usize, length: Duration) -> Tally {
    let started = Instant::now();
    let late = length.saturating_sub(Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (i, session) in sessions.iter().enumerate() {
        let (session, stop) = (session.clone(), stop.clone());
        let base = *counter + i * 1_000_000;
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let call = ToolCall::new(format!("c{}", base + n), "bash", json!({"cmd": "ls"}));
                n += 1;
                let e = session.pre_tool_call(&call).await.expect("emits");
                if e.proceeds() {
                    tally.allowed += 1;
                } else {
                    tally.denied.push(e.reason().unwrap_or_default().to_owned());
                    if started.elapsed() > late && late > Duration::ZERO {
                        tally.denied_late += 1;
                    }
                }
            }
            (n, tally)
        }));
    }
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = Tally::default();
    for t in tasks {
        let (n, tally) = t.await.unwrap();
        total.emitted += n;
        total.allowed += tally.allowed;
        total.denied.extend(tally.denied);
        total.denied_late += tally.denied_late;
    }
    // Call ids stay distinct across phases.
    *counter += SESSIONS * 1_000_000;
    total
}

// ---------------------------------------------------------------------------
// The orchestrator: namespaces, links, children, faults, cleanup.
// ---------------------------------------------------------------------------

/// Namespaces this run created, deleted on drop (which deletes their
/// veths too), and children killed on drop.
struct Lab {
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<Child>,
}

impl Lab {
    fn host_ns(&self) -> String {
        format!("{}h", self.prefix)
    }
    fn replica_ns(&self, i: usize) -> String {
        format!("{}r{i}", self.prefix)
    }
    /// Host-side and replica-side interface names of replica `i` (≤ 15
    /// characters).
    fn links(&self, i: usize) -> (String, String) {
        (
            format!("{}h{i}", self.prefix),
            format!("{}p{i}", self.prefix),
        )
    }
    fn replica_addr(i: usize) -> String {
        format!("10.213.{}.2", i + 1)
    }

    fn add_namespace(&mut self, name: String) -> Result<(), String> {
        ip(&["netns", "add", &name])?;
        self.namespaces.push(name);
        Ok(())
    }

    fn build(&mut self) -> Result<(), String> {
        self.add_namespace(self.host_ns())?;
        in_ns(&self.host_ns(), &["ip", "link", "set", "lo", "up"])?;
        for i in 0..REPLICAS {
            let ns = self.replica_ns(i);
            self.add_namespace(ns.clone())?;
            let (h, r) = self.links(i);
            ip(&[
                "link",
                "add",
                &h,
                "netns",
                &self.host_ns(),
                "type",
                "veth",
                "peer",
                "name",
                &r,
                "netns",
                &ns,
            ])?;
            let net = i + 1;
            in_ns(
                &self.host_ns(),
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("10.213.{net}.1/30"),
                    "dev",
                    &h,
                ],
            )?;
            in_ns(&self.host_ns(), &["ip", "link", "set", &h, "up"])?;
            in_ns(
                &ns,
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("10.213.{net}.2/30"),
                    "dev",
                    &r,
                ],
            )?;
            in_ns(&ns, &["ip", "link", "set", &r, "up"])?;
            in_ns(&ns, &["ip", "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn spawn_replica(&mut self, i: usize) -> Result<(), String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.replica_ns(i)])
            .arg(&exe)
            .args(["replica", &format!("{}:{PORT}", Self::replica_addr(i))])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn replica {i}: {e}"))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        self.children.push(child);
        if line.trim() != "listening" {
            return Err(format!("replica {i} did not start: {line:?}"));
        }
        Ok(())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in self.namespaces.iter().rev() {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("netns: cleanup of {ns} failed: {e}");
            }
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    run("ip", args)
}

fn in_ns(ns: &str, cmd: &[&str]) -> Result<(), String> {
    let mut args = vec!["netns", "exec", ns];
    args.extend_from_slice(cmd);
    run("ip", &args)
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether this machine lets us make namespaces; the reason when not.
fn namespaces_refused() -> Option<String> {
    let probe = format!("hwprobe{}", std::process::id());
    match ip(&["netns", "add", &probe]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &probe]);
            None
        }
        Err(e) => Some(e),
    }
}

fn orchestrate() {
    if let Some(why) = namespaces_refused() {
        hookwire_testkit::require(
            false,
            "network namespaces (root and iproute2)",
            &format!("the netns scenario runs replicas in namespaces it creates; refused: {why}"),
        );
        return;
    }
    let mut lab = Lab {
        prefix: format!("hw{}", std::process::id() % 100_000),
        namespaces: Vec::new(),
        children: Vec::new(),
    };
    let outcome = scenario(&mut lab);
    drop(lab);
    match outcome {
        Ok(summary) => println!("netns: ok ({summary})"),
        Err(e) => {
            eprintln!("netns: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn scenario(lab: &mut Lab) -> Result<String, String> {
    let started = Instant::now();
    lab.build()?;
    for i in 0..REPLICAS {
        lab.spawn_replica(i)?;
    }
    let endpoints: Vec<String> = (0..REPLICAS)
        .map(|i| format!("http://{}:{PORT}", Lab::replica_addr(i)))
        .collect();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut host = Command::new("ip")
        .args(["netns", "exec", &lab.host_ns()])
        .arg(&exe)
        .arg("host")
        .args(&endpoints)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn host: {e}"))?;
    let stdin = host.stdin.take().unwrap();
    let stdout = BufReader::new(host.stdout.take().unwrap());
    lab.children.push(host);
    drive(lab, stdin, stdout, started)
}

/// Answers the host's phase requests with faults, then reads its verdict.
fn drive(
    lab: &Lab,
    mut stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    started: Instant,
) -> Result<String, String> {
    let (_, r0) = lab.links(0);
    let (h1, _) = lab.links(1);
    let mut summary = String::new();
    let mut failures = Vec::new();
    for line in stdout.lines() {
        let line = line.map_err(|e| e.to_string())?;
        match line.as_str() {
            // Replica 0's end of its link goes down: its packets vanish.
            "partition" => in_ns(&lab.replica_ns(0), &["ip", "link", "set", &r0, "down"])?,
            "heal" => in_ns(&lab.replica_ns(0), &["ip", "link", "set", &r0, "up"])?,
            // New connections to replica 1 are refused by a route.
            "prohibit" => {
                let _ = &h1;
                in_ns(
                    &lab.host_ns(),
                    &[
                        "ip",
                        "route",
                        "add",
                        "prohibit",
                        &format!("{}/32", Lab::replica_addr(1)),
                    ],
                )?;
            }
            "ok" => {
                return Ok(format!(
                    "{summary}; {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
            }
            l if l.starts_with("summary ") => summary = l["summary ".len()..].to_owned(),
            l if l.starts_with("FAILED ") => failures.push(l.to_owned()),
            other => eprintln!("host: {other}"),
        }
        if matches!(line.as_str(), "partition" | "heal" | "prohibit") {
            writeln!(stdin, "done").map_err(|e| e.to_string())?;
            stdin.flush().map_err(|e| e.to_string())?;
        }
    }
    Err(format!(
        "{summary}: {}",
        if failures.is_empty() {
            "the host ended without a verdict".into()
        } else {
            failures.join("; ")
        }
    ))
}
