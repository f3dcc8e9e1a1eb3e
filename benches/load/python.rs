//! The `python` section: one allow policy served by the hookwire Python
//! package over the `Multiplex` stream and unary (`--unary-only`), and by
//! the helper the examples used before the package
//! (`examples/python/hookwire_py.py` as of the commit before the package
//! was merged, materialised from git into a temporary directory; skipped
//! with a message when the checkout has no such history), each from the
//! Rust host at 64 concurrent sessions, with the Rust SDK's allow service
//! over the stream beside them. The sides alternate in rounds; each
//! reports emissions/s, p50/p99 and CPU per call (host, service).
//!
//! What bounds the package's side (py-spy on the stream's service under
//! load): grpc.aio's own per-message cost on the one event loop — the
//! stream's `write` about a third of the samples, the loop's scheduling
//! and epoll another third — while decoding the context, the §5 check and
//! encoding the verdict take under a tenth; the helper's synchronous
//! server spreads grpcio's C-core work over its threads and both cores.
//!
//! Needs the venv `scripts/setup.sh` makes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookwire::Profile;
use hookwire_client::Session;

use crate::child::Endpoints;
use crate::child::{SERVER_PID, cpu_us};
use crate::measure::Samples;
use crate::report::Headline;
use crate::{Plan, REMOTE_TIMEOUT, fixtures, started};

/// Concurrent sessions per side.
const SESSIONS: usize = 64;
/// The commit whose parent still has the helper.
const HELPER_COMMIT: &str = "5446657";
/// Bound on a service printing its port.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A Python service, killed on drop.
struct PyService {
    child: Child,
    endpoint: String,
}

impl Drop for PyService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Starts `script` with `args` and waits for its `PORT <n>` line.
fn spawn(script: &Path, args: &[&str], env: &[(&str, &Path)]) -> Result<PyService, String> {
    let python = root().join(".cache/venv/bin/python");
    let mut cmd = Command::new(&python);
    cmd.arg(script)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot run {}: {e} (run scripts/setup.sh)",
            python.display()
        )
    })?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Keeps reading so the child never blocks on a full pipe.
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    // Killed on drop from here on, the failure paths included.
    let mut service = PyService {
        child,
        endpoint: String::new(),
    };
    let until = Instant::now() + START_TIMEOUT;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .map_err(|e| format!("{} printed no PORT line: {e}", script.display()))?;
        if let Some(port) = line
            .strip_prefix("PORT ")
            .and_then(|p| p.parse::<u16>().ok())
        {
            service.endpoint = format!("http://127.0.0.1:{port}");
            return Ok(service);
        }
    }
}

/// The helper and an allow policy on it, in `dir`; None without the
/// history (a shallow clone, an export).
fn materialise_helper(dir: &Path) -> Option<PathBuf> {
    let out = Command::new("git")
        .current_dir(root())
        .args([
            "show",
            &format!("{HELPER_COMMIT}^:examples/python/hookwire_py.py"),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    std::fs::write(dir.join("hookwire_py.py"), &out.stdout).ok()?;
    let policy = dir.join("helper_allow.py");
    std::fs::write(
        &policy,
        "import hookwire_py as hw\n\n\nclass Allow(hw.Interceptor):\n    name = \"python-helper-allow\"\n    version = \"1.0.0\"\n\n\nif __name__ == \"__main__\":\n    hw.main(Allow())\n",
    )
    .ok()?;
    Some(policy)
}

/// One side: its sessions, the service process (None: the bench's own
/// child), and what it measured.
struct Side {
    label: &'static str,
    sessions: Vec<Arc<Session>>,
    pid: Option<u32>,
    rates: Vec<f64>,
    lat: Samples,
    cpu: (f64, f64, usize),
}

impl Side {
    fn rate(&self) -> f64 {
        Samples(self.rates.clone()).median()
    }

    fn cpu_per_call(&self) -> (f64, f64) {
        let (c, s, n) = self.cpu;
        (c / n as f64, s / n as f64)
    }
}

async fn side(label: &'static str, endpoint: &str, pid: Option<u32>) -> Side {
    let host = fixtures::remote_host(endpoint, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let mut sessions = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        sessions.push(started(&host, &format!("s-py-{label}-{i}")).await);
    }
    Side {
        label,
        sessions,
        pid,
        rates: Vec::new(),
        lat: Samples::default(),
        cpu: (0.0, 0.0, 0),
    }
}

/// Every session emitting `pre_tool_call`s for `window`: completions per
/// second and every latency (µs).
async fn load(
    sessions: &[Arc<Session>],
    call: &hookwire_client::ToolCall,
    window: Duration,
) -> (f64, Vec<f64>) {
    let start = Instant::now();
    let handles: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (s, mut call) = (s.clone(), call.clone());
            tokio::spawn(async move {
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
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("load task"));
    }
    (all.len() as f64 / start.elapsed().as_secs_f64(), all)
}

/// The section: the Python sides and the Rust SDK's, alternating.
pub async fn section(
    plan: Plan,
    ep: &Endpoints,
    call: &hookwire_client::ToolCall,
    headline: &mut Vec<Headline>,
) -> Result<(), String> {
    eprintln!("python: the package over the stream and unary, the old helper ...");
    let script = root().join("benches/load/python_allow.py");
    let stream_service = spawn(&script, &[], &[])?;
    let unary_service = spawn(&script, &["--unary-only"], &[])?;
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let helper_service = match materialise_helper(dir.path()) {
        Some(policy) => {
            // Its stubs are generated from proto/ into the temporary directory.
            let (proto, stubs) = (root().join("proto"), dir.path().join("stubs"));
            let env = [
                ("HOOKWIRE_PROTO_ROOT", &*proto),
                ("HOOKWIRE_PY_STUBS", &*stubs),
            ];
            Some(spawn(&policy, &[], &env)?)
        }
        None => {
            eprintln!(
                "python: the old helper is not in this checkout's history ({HELPER_COMMIT}^); skipped"
            );
            None
        }
    };
    let mut sides = vec![
        side(
            "stream",
            &stream_service.endpoint,
            Some(stream_service.child.id()),
        )
        .await,
        side(
            "unary",
            &unary_service.endpoint,
            Some(unary_service.child.id()),
        )
        .await,
        side("rust", &ep.allow, SERVER_PID.get().copied()).await,
    ];
    if let Some(h) = &helper_service {
        sides.push(side("helper", &h.endpoint, Some(h.child.id())).await);
    }
    for s in &sides {
        load(&s.sessions, call, plan.throughput_window / 4).await;
    }
    let n = sides.len();
    for r in 0..plan.throughput_rounds {
        for k in 0..n {
            let s = &mut sides[(r + k) % n];
            let (c0, s0) = (cpu_us(None), cpu_us(s.pid));
            let (rate, lat) = load(&s.sessions, call, plan.throughput_window).await;
            s.cpu.0 += cpu_us(None) - c0;
            s.cpu.1 += cpu_us(s.pid) - s0;
            s.cpu.2 += lat.len();
            s.rates.push(rate);
            s.lat.0.extend(lat);
        }
    }
    let get = |label| sides.iter().find(|s| s.label == label);
    let (stream, unary, rust) = (
        get("stream").expect("side"),
        get("unary").expect("side"),
        get("rust").expect("side"),
    );
    let row = |label: &str, a: &Side, b: &Side, key, target| {
        Headline::throughput(
            format!("python, {SESSIONS} concurrent sessions, {label}"),
            (a.rate(), a.cpu_per_call()),
            (b.rate(), b.cpu_per_call()),
            &a.lat,
            &b.lat,
            key,
            target,
        )
    };
    if let Some(helper) = get("helper") {
        headline.push(row(
            "the package over the Multiplex stream vs the old helper (unary)",
            stream,
            helper,
            "python_stream_vs_helper",
            Some((3.0, true)),
        ));
        headline.push(row(
            "the package unary vs the old helper (unary)",
            unary,
            helper,
            "",
            None,
        ));
    }
    headline.push(row(
        "the package over the Multiplex stream vs the package unary",
        stream,
        unary,
        "python_stream_vs_unary",
        None,
    ));
    headline.push(row(
        "the package over the Multiplex stream vs the Rust SDK over the stream",
        stream,
        rust,
        "",
        None,
    ));
    Ok(())
}
