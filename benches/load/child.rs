//! The interceptor services' process: the bench re-runs its own binary
//! with `--serve` (see `serve.rs`) so client and services are measured in
//! separate processes, or reaches a server started by hand
//! (`HOOKWIRE_BENCH_PORTS`); and the CPU accounting of both sides.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// The server process, for CPU accounting (`None` when external).
pub static SERVER_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// CPU time (user + system) a process has used so far, in µs, from
/// `/proc/<pid>/stat` (clock ticks of 10 ms on Linux).
pub fn cpu_us(pid: Option<u32>) -> f64 {
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

/// Ports of the child's services.
pub struct Endpoints {
    /// The allow-all service (declares the `Multiplex` stream).
    pub allow: String,
    /// The service that waits [`crate::serve::DELAY`] before allowing.
    pub delay: String,
    /// The bare tonic service: the transport floor.
    pub floor: String,
    /// The allow-all service without the stream in its manifest: hosts
    /// call it unary.
    pub unary: String,
    /// The raw TCP echo (`host:port`, no scheme): the physical floor.
    pub tcp: String,
    /// The delayed service without the stream in its manifest.
    pub delay_unary: String,
    /// The allow service on an owner-only Unix socket (`unix:/path`);
    /// `None` for a server started by hand.
    pub uds: Option<String>,
}

/// Endpoints of a server started by hand (`HOOKWIRE_BENCH_PORTS="<allow>
/// <delay> <floor> <unary> <tcp> <delay_unary>"`, e.g. one running under a profiler), or
/// `None`.
pub fn external_server() -> Option<Endpoints> {
    let ports = std::env::var("HOOKWIRE_BENCH_PORTS").ok()?;
    let ports: Vec<u16> = ports
        .split_whitespace()
        .map(|p| p.parse().expect("a port"))
        .collect();
    Some(endpoints(&ports, None))
}

fn endpoints(ports: &[u16], uds: Option<String>) -> Endpoints {
    let url = |p: u16| format!("http://127.0.0.1:{p}");
    Endpoints {
        allow: url(ports[0]),
        delay: url(ports[1]),
        floor: url(ports[2]),
        unary: url(ports[3]),
        tcp: format!("127.0.0.1:{}", ports[4]),
        delay_unary: url(ports[5]),
        uds,
    }
}

/// Starts this binary with `--serve` and reads the ports it prints.
pub fn spawn_server() -> (Child, Endpoints) {
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
    let words: Vec<&str> = line
        .strip_prefix("ports ")
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
        .split_whitespace()
        .collect();
    let uds = words
        .iter()
        .find(|w| w.starts_with("unix:"))
        .map(|w| (*w).to_owned());
    let ports: Vec<u16> = words
        .iter()
        .filter(|w| !w.starts_with("unix:"))
        .map(|p| p.parse().expect("a port"))
        .collect();
    (child, endpoints(&ports, uds))
}
