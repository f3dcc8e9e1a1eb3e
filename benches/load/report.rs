//! The report: one table of headline comparisons (each a ratio of medians
//! from the same run), the growth tables, the machine, and the `ratios:`
//! line.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::measure::Samples;

/// One comparison of hookwire (A) with its baseline (B).
pub struct Headline {
    label: String,
    ours: String,
    base: String,
    ratio: f64,
    /// The key on the `ratios:` line, or empty.
    key: &'static str,
    /// (threshold, whether higher is better).
    target: Option<(f64, bool)>,
}

fn time(us: f64) -> String {
    if us.is_nan() {
        "–".to_owned()
    } else if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn alloc((bytes, calls): (f64, f64)) -> String {
    if bytes < 10.0 * 1024.0 {
        format!("{:.1} KiB, {calls:.0}", bytes / 1024.0)
    } else if bytes < 10.0 * 1024.0 * 1024.0 {
        format!("{:.0} KiB, {calls:.0}", bytes / 1024.0)
    } else {
        format!("{:.1} MiB, {calls:.0}", bytes / (1024.0 * 1024.0))
    }
}

impl Headline {
    /// Latency medians (p99 alongside), ratio A/B.
    pub fn latency(
        label: String,
        a: &Samples,
        b: &Samples,
        key: &'static str,
        target: Option<(f64, bool)>,
    ) -> Self {
        Self {
            label,
            ours: format!("{} (p99 {})", time(a.median()), time(a.pct(99.0))),
            base: format!("{} (p99 {})", time(b.median()), time(b.pct(99.0))),
            ratio: a.median() / b.median(),
            key,
            target,
        }
    }

    /// A measure of hookwire alone, with no baseline and no ratio (the
    /// median, p99 alongside).
    pub fn alone(label: &str, a: &Samples) -> Self {
        Self {
            label: label.to_owned(),
            ours: format!("{} (p99 {})", time(a.median()), time(a.pct(99.0))),
            base: "–".to_owned(),
            ratio: f64::NAN,
            key: "",
            target: None,
        }
    }

    /// A ratio computed from other rows.
    pub fn ratio_only(label: &str, ratio: f64, key: &'static str, target: (f64, bool)) -> Self {
        Self {
            label: label.to_owned(),
            ours: String::new(),
            base: String::new(),
            ratio,
            key,
            target: Some(target),
        }
    }

    /// Rates (median over rounds) with latency p50/p99 and CPU per call
    /// (client, server), ratio A/B.
    pub fn throughput(
        label: String,
        (ours, ours_cpu): (f64, (f64, f64)),
        (base, base_cpu): (f64, (f64, f64)),
        ours_lat: &Samples,
        base_lat: &Samples,
        key: &'static str,
        target: Option<(f64, bool)>,
    ) -> Self {
        let cell = |rate: f64, lat: &Samples, (client, server): (f64, f64)| {
            format!(
                "{rate:.0}/s (p50 {}, p99 {}; CPU/call: client {}, server {})",
                time(lat.median()),
                time(lat.pct(99.0)),
                time(client),
                time(server)
            )
        };
        Self {
            label,
            ours: cell(ours, ours_lat, ours_cpu),
            base: cell(base, base_lat, base_cpu),
            ratio: ours / base,
            key,
            target,
        }
    }

    fn target_cells(&self) -> (String, String) {
        match self.target {
            None => (String::new(), String::new()),
            Some((t, higher)) => {
                let met = if higher {
                    self.ratio >= t
                } else {
                    self.ratio <= t
                };
                (
                    format!("{} {t}", if higher { "≥" } else { "≤" }),
                    if met { "met" } else { "**missed**" }.to_owned(),
                )
            }
        }
    }
}

/// One row of a growth table: medians of each column, and allocations
/// per emission (bytes, calls) for each column.
pub struct GrowthRow {
    pub label: String,
    pub times: Vec<f64>,
    pub memory: Vec<(f64, f64)>,
}

/// One row of the sessions table.
pub struct SessionRow {
    pub sessions: usize,
    pub times: Vec<f64>,
    pub memory: Vec<(f64, f64)>,
    pub per_session: Vec<f64>,
}

#[derive(Default)]
pub struct Growth {
    pub sizes: Vec<GrowthRow>,
    pub chains: Vec<GrowthRow>,
    pub sessions: Vec<SessionRow>,
}

pub struct Report {
    pub headline: Vec<Headline>,
    /// The `gateway_peer` section's tables (Markdown), or empty.
    pub peer: String,
    /// The `mcp` section's table (Markdown), or empty.
    pub mcp: String,
    pub growth: Growth,
    pub request_bytes: usize,
    pub remote_1k_us: f64,
}

impl Report {
    /// The tables, as Markdown.
    pub fn render(&self, elapsed: Duration) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Context: `pre_tool_call`, {} B request on the wire (\"1 KiB\"). \
             Medians over interleaved rounds; p99 in brackets. \
             Measured in {:.0} s.\n",
            self.request_bytes,
            elapsed.as_secs_f64()
        );
        s.push_str("| comparison | hookwire | baseline | ratio | target | |\n");
        s.push_str("| --- | --- | --- | --- | --- | --- |\n");
        for h in &self.headline {
            let (target, met) = h.target_cells();
            let ratio = if h.ratio.is_nan() {
                "–".to_owned()
            } else {
                format!("{:.2}", h.ratio)
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {ratio} | {} | {} |",
                h.label, h.ours, h.base, target, met
            );
        }
        s.push_str(&self.peer);
        s.push_str(&self.mcp);

        s.push_str(
            "\n### Growth: context size (1 allow interceptor)\n\n\
             Time is the median per emission; memory is what the measuring \
             process allocates per emission (bytes, allocation calls) — for \
             the remote columns that is the client process only.\n\n\
             | context | hookwire in-process | canonical in-process | hookwire remote | bare tonic | \
             alloc: hookwire in-process | alloc: canonical | alloc: hookwire remote (client) | alloc: bare tonic (client) |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for r in &self.growth.sizes {
            row(&mut s, r);
        }
        s.push_str(
            "\n### Growth: interceptors (1 KiB context)\n\n\
             | interceptors | hookwire in-process | canonical in-process | hookwire remote sequential | hookwire remote parallel | \
             alloc: hookwire in-process | alloc: canonical | alloc: remote sequential | alloc: remote parallel |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for r in &self.growth.chains {
            row(&mut s, r);
        }
        s.push_str(
            "\n### Growth: sessions (1 allow interceptor, 1 KiB context, all sessions emitting at once)\n\n\
             Time is wall time divided by emissions (the inverse of throughput on 2 cores).\n\n\
             | sessions | hookwire in-process | canonical in-process | hookwire remote | \
             alloc: hookwire in-process | alloc: canonical | alloc: hookwire remote (client) | \
             live bytes per open session: hookwire | canonical (emitter + builder) |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for r in &self.growth.sessions {
            let _ = write!(s, "| {} |", r.sessions);
            for t in &r.times {
                let _ = write!(s, " {} |", time(*t));
            }
            for m in &r.memory {
                let _ = write!(s, " {} |", alloc(*m));
            }
            for b in &r.per_session {
                let _ = write!(s, " {:.0} B |", b);
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "\nRemote emission at 1 KiB: {} median.",
            time(self.remote_1k_us)
        );
        s
    }

    /// The final line: `ratios: key=value ...` in the fixed order, then
    /// any other keyed row in the order measured (so a new key is never
    /// left off).
    pub fn ratios_line(&self) -> String {
        let keys = [
            "remote_vs_tonic",
            "overhead_vs_canonical",
            "parallel4_vs_single",
            "session_parallel4_stream_vs_one",
            "session_parallel4_unary_vs_one",
            "throughput_vs_tonic",
            "spawn_vs_remote",
            "hook_command_vs_spawn",
            "hook_http_vs_budget",
            "metrics_overhead",
            "policy_vs_rust",
            "policy_throughput_vs_rust",
            "cedar_vs_rego",
            "cedar_decide_vs_rego",
            "stream_vs_tonic",
            "stream_throughput_vs_tonic",
            "uds_stream_vs_tonic",
            "gateway_vs_litellm",
            "gateway_rate_vs_litellm",
            "mcp_stdio_vs_direct",
            "mcp_http_vs_direct",
            "mcp_stdio_added_p50_ms",
            "mcp_http_added_p50_ms",
            "node_stream_vs_unary",
            "node_stream_vs_rust",
            "python_stream_vs_helper",
            "python_stream_vs_unary",
        ];
        let mut line = String::from("ratios:");
        for k in keys {
            let v = self
                .headline
                .iter()
                .find(|h| h.key == k)
                .map_or(f64::NAN, |h| h.ratio);
            let _ = write!(line, " {k}={v:.2}");
        }
        for h in &self.headline {
            if !h.key.is_empty() && !keys.contains(&h.key) {
                let _ = write!(line, " {}={:.2}", h.key, h.ratio);
            }
        }
        line
    }

    /// The whole `BENCHMARKS.md`: generated sections, then the notes kept
    /// from the previous file (or an empty notes section).
    pub fn markdown(&self, tables: &str, notes: Option<&str>) -> String {
        let mut s = String::new();
        s.push_str(
            "# hookwire benchmarks\n\n\
             Generated by `cargo bench -p hookwire-bench --bench load` (see `benches/load/`); \
             rerun it to refresh this file.\n\n",
        );
        let _ = writeln!(s, "{}\n", machine());
        s.push_str(tables);
        s.push_str(METHOD);
        let _ = writeln!(s, "\n```text\n{}\n```\n", self.ratios_line());
        match notes {
            Some(kept) => s.push_str(kept),
            None => {
                s.push_str(NOTES_MARK);
                s.push('\n');
            }
        }
        s
    }
}

/// Where the hand-written part of `BENCHMARKS.md` starts.
const NOTES_MARK: &str = "<!-- Written by hand from here on: `cargo bench -p hookwire-bench --bench load` keeps this part. -->";

/// The hand-written tail of a previous `BENCHMARKS.md`, marker included.
pub fn kept_notes(old: &str) -> Option<String> {
    old.find(NOTES_MARK).map(|i| old[i..].to_owned())
}

fn row(s: &mut String, r: &GrowthRow) {
    let _ = write!(s, "| {} |", r.label);
    for t in &r.times {
        let _ = write!(s, " {} |", time(*t));
    }
    for m in &r.memory {
        let _ = write!(s, " {} |", alloc(*m));
    }
    s.push('\n');
}

const METHOD: &str = "
## Method

- One process runs the hosts, the canonical emitter and the clients; a
  second process (the same binary, `--serve`) runs five services on
  127.0.0.1: a hookwire interceptor service that allows (its manifest
  declares the `Multiplex` stream, so hosts use it), the same allow
  service without the stream in its manifest (hosts call it unary), the
  allow service with a 2 ms wait in every hook, the bare tonic floor (the
  generated service answering `PreToolCall` with a prebuilt allow
  response), and a raw TCP echo of length-prefixed frames (the physical
  floor: the request's bytes out, 8 bytes back, on one connection). Both
  processes use a 2-worker tokio runtime and mimalloc as their allocator
  (`benches/load/allocator.rs` says why; `--features system-allocator`
  builds the bench on glibc's malloc, named in the machine line above).
- `remote_vs_tonic` and `throughput_vs_tonic` use the unary host;
  `stream_vs_tonic` and `stream_throughput_vs_tonic` the stream host; both
  against bare tonic *unary*. The other remote sections (metrics, fan-out,
  audit, growth, and `spawn_vs_remote`) use what a host uses with a
  service the SDK serves: the stream; the spawn section also prints the
  unary row.
- The floor carries exactly the request bytes hookwire sends for the same
  context, on a channel configured like hookwire's (`tcp_nodelay`, same
  keep-alive), without hookwire's per-call deadline. The first two rows
  show what that deadline (`grpc-timeout` header plus a local timeout)
  costs the bare transport, and hookwire against a floor that carries it.
- In-process comparisons use the same interceptors on both sides (an
  allow, and a rewrite of `$target.cmd`), the same identity provider
  (`jcs-sha256`), the same per-interceptor bound (5000 ms on both sides,
  then none on either: the canonical emitter spawns a task per call under
  a timeout, which dominates its cost, so `overhead_vs_canonical` is the
  geometric mean of the unbounded pairs), and build the
  context per emission on both sides (hookwire's `Session::pre_tool_call`,
  the canonical `AgentContextBuilder::pre_tool_call`). The canonical
  emitter's record buffer is drained after each emission.
- A and B alternate in rounds (A then B, then B then A) after a warm-up of
  both; every ratio is a ratio of medians from the same run.
  `throughput_vs_tonic` and `stream_throughput_vs_tonic` are the
  64-session cases.
- Throughput: each session (or tonic task) calls in a loop for a fixed
  window; rates are medians over rotating rounds (unary, stream, tonic)
  on one channel each. CPU
  per call is the user + system time of each process over the rounds
  (`/proc/<pid>/stat`) divided by the calls made.
- The process-per-hook baseline spawns `hookwire-command-hook`
  (`benches/support/command_hook.rs`) per decision: the host serializes the
  context, writes it to the program's stdin and parses the verdict it
  prints.
- Coding-agent hooks (`hooks`, `benches/load/hooks.rs`): `hookwire hooks
  serve` (the release `hookwire` binary, its own process) binds the allow
  service above at every point; one Claude Code `PreToolUse` (a `Bash`
  call, a tool use id of its own each time) is decided through `hookwire
  hook --agent claude-code` spawned per decision (payload on stdin,
  `--token-file`), and on `POST /v1/hooks/claude-code` by one keep-alive
  HTTP/1.1 client, against `hookwire-fixed-decision`
  (`benches/support/fixed_decision.rs`: reads stdin, prints `{}`), the
  floor of any command hook; `hookwire hook` with nothing listening shows
  the command's own start. The four rotate through every position over
  the rounds. `hook_command_vs_spawn` is the command path's p50 over the
  bare spawn's (target ≤ 2); `hook_http_vs_budget` the HTTP route's p50
  over 0.5 ms (target ≤ 1).
- The gateway against LiteLLM (`gateway_peer`, `benches/load/peer/`): one
  mock upstream process answers all three APIs from prebuilt bodies; the
  gateway runs in its own process (a 2-worker runtime), bound to the allow
  service above or to `hookwire policy`'s service with
  `examples/policies/destructive_commands.rego`; LiteLLM (pinned by
  `scripts/litellm.sh`) runs `benches/peer/litellm.yaml` with its custom
  guardrail and `--num_workers` set to the cores. Before measuring, the
  bench checks every route on every path, and that the guardrail refuses
  a marked input at `pre_call` and a marked answer at `post_call` (so it
  runs). `gateway_vs_litellm` and `gateway_rate_vs_litellm` are the Chat
  Completions (whole) row with the allow interceptor.
- MCP (`mcp`, `benches/load/mcp/`): a fast upstream on the official Rust
  SDK (`rmcp`, one `echo` tool) reached directly and through the
  `hookwire-mcp` library in its own process (what `hookwire mcp` serves),
  its host bound to the allow service above; over stdio each client
  launches its server (the proxy launches the upstream), over Streamable
  HTTP both reach one upstream process. One minimal JSON-RPC client on
  every path, every answer checked. `mcp_*_added_p50_ms` is the proxied
  p50 minus the direct one, in ms (target ≤ 0.5).
- Memory: the measuring process's allocator counts (only while a memory
  column is measured, so no other row pays for it) bytes and calls
  allocated per emission, and bytes still live per open session.
";

/// `nproc`, the CPU model, rustc, and today's date (UTC).
fn machine() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let rustc = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |s| s.trim().to_owned());
    format!(
        "Machine: nproc {nproc}, CPU {cpu}, {rustc}, measured {} (UTC). Release profile, allocator: {}.",
        today(),
        crate::allocator::NAME
    )
}

/// The UTC date as `YYYY-MM-DD`.
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil date from a day count (proleptic Gregorian, eras of 400 years).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
