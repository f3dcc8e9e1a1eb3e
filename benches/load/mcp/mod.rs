//! The `mcp` section: a `tools/call` round trip through `hookwire mcp`
//! (the `hookwire-mcp` library in its own process, its host bound to the
//! load bench's remote allow interceptor over gRPC) against the same call
//! made directly to the same upstream, over stdio and over Streamable
//! HTTP, in one run.
//!
//! The upstream is a fast MCP server on the official Rust SDK (`rmcp`,
//! `children.rs`) with one `echo` tool, so the figures are the proxy's and
//! not a slow server's. Over stdio each client launches its server (the
//! direct client the upstream, the proxied one the proxy, which launches
//! the upstream), as MCP clients do; over HTTP both clients reach one
//! upstream process, one of them through the proxy's HTTP endpoint. The
//! client (`client.rs`) is the same minimal one on every path. The two
//! paths alternate in rounds after a warm-up (`measure::interleaved`);
//! what the proxy adds is its p50 (p99) minus the direct one's, and
//! calls/s is one client calling back to back (the inverse of the mean).
//! Each transport is measured twice: the proxy's host bound to the load
//! bench's remote allow interceptor (target: added p50 ≤ 0.5 ms), and
//! deciding with a Rego folder in its own process, as `hookwire mcp
//! --policy DIR` does (`embedded.rs`; target ≤ 0.25 ms). Streamable HTTP
//! is measured once more in the stateless revision 2026-07-28 (no
//! session: every request carries its envelope and routing headers), with
//! the remote allow.

mod children;
mod client;

use std::fmt::Write as _;

pub use children::{PROXY_FLAG, UPSTREAM_FLAG, serve_proxy, serve_upstream};

use crate::Plan;
use crate::child::Endpoints;
use crate::embedded::PolicyDir;
use crate::measure::{Samples, interleaved};
use crate::peer::children::spawn;
use crate::report::Headline;
use client::McpClient;

/// The added p50 the section is held to, in microseconds, with one
/// remote interceptor and with the policies in process.
const ADDED_P50_TARGET_US: f64 = 500.0;
const EMBEDDED_ADDED_P50_TARGET_US: f64 = 250.0;
/// Sequential calls per path before anything is measured.
const WARMUP: usize = 50;
/// The echoed text: about the bench's 1 KiB arguments.
const TEXT_BYTES: usize = 1024;

/// One transport and binding's results.
struct Row {
    transport: &'static str,
    /// Who decides: the remote allow interceptor or the in-process Rego.
    decided_by: &'static str,
    direct: Samples,
    proxied: Samples,
}

impl Row {
    fn added(&self, p: f64) -> f64 {
        self.proxied.pct(p) - self.direct.pct(p)
    }
}

/// One client calling back to back: calls per second.
fn rate(s: &Samples) -> f64 {
    let total_us: f64 = s.0.iter().sum();
    s.0.len() as f64 / (total_us / 1e6)
}

fn us(v: f64) -> String {
    if v.abs() < 1000.0 {
        format!("{v:.0} µs")
    } else {
        format!("{:.2} ms", v / 1000.0)
    }
}

/// The two bindings each transport is measured with: a label and the
/// binding argument the proxy's process reads (`embedded::host`).
fn bindings(ep: &Endpoints, dir: &PolicyDir) -> [(&'static str, String); 2] {
    [(REMOTE, ep.allow.clone()), (IN_PROCESS, dir.argument())]
}

const REMOTE: &str = "1 remote allow";
/// The stateless revision's row.
const STATELESS_HTTP: &str = "Streamable HTTP, 2026-07-28";
const IN_PROCESS: &str = "Rego in process";

/// Runs the section: its rows go to `headline`, its table to `tables`.
pub async fn section(
    plan: Plan,
    ep: &Endpoints,
    headline: &mut Vec<Headline>,
    tables: &mut String,
) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("own path: {e}"))?
        .to_string_lossy()
        .into_owned();
    let text = "x".repeat(TEXT_BYTES);
    let dir = PolicyDir::four_points();
    let measure = |mut proxied: McpClient, mut direct: McpClient| async move {
        let (p, d) = interleaved(
            &mut proxied,
            &mut direct,
            WARMUP,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        (d, p)
    };
    let mut rows = Vec::new();

    for (decided_by, binding) in bindings(ep, &dir) {
        eprintln!("mcp: tools/call over stdio, direct and through the proxy ({decided_by}) ...");
        let direct = McpClient::stdio(&[UPSTREAM_FLAG.into(), "stdio".into()], &text).await?;
        let proxied = McpClient::stdio(
            &[
                PROXY_FLAG.into(),
                "stdio".into(),
                binding,
                "--".into(),
                exe.clone(),
                UPSTREAM_FLAG.into(),
                "stdio".into(),
            ],
            &text,
        )
        .await
        .map_err(|e| format!("through the stdio proxy ({decided_by}): {e}"))?;
        let (d, p) = measure(proxied, direct).await;
        rows.push(Row {
            transport: "stdio",
            decided_by,
            direct: d,
            proxied: p,
        });
    }

    let (_upstream, ports) = spawn(UPSTREAM_FLAG, &["http"])?;
    let upstream_url = format!("http://127.0.0.1:{}/mcp", ports[0]);
    for (decided_by, binding) in bindings(ep, &dir) {
        eprintln!(
            "mcp: tools/call over Streamable HTTP, direct and through the proxy ({decided_by}) ..."
        );
        let (_proxy, ports) = spawn(PROXY_FLAG, &["http", &binding, &upstream_url])?;
        let proxy_url = format!("http://127.0.0.1:{}/mcp", ports[0]);
        let direct = McpClient::http(upstream_url.clone(), None, &text).await?;
        let proxied = McpClient::http(proxy_url, Some(children::TOKEN), &text)
            .await
            .map_err(|e| format!("through the HTTP proxy ({decided_by}): {e}"))?;
        let (d, p) = measure(proxied, direct).await;
        rows.push(Row {
            transport: "Streamable HTTP",
            decided_by,
            direct: d,
            proxied: p,
        });
    }

    eprintln!(
        "mcp: tools/call over Streamable HTTP in 2026-07-28, direct and through the proxy ..."
    );
    let (_proxy, ports) = spawn(PROXY_FLAG, &["http", &ep.allow, &upstream_url])?;
    let proxy_url = format!("http://127.0.0.1:{}/mcp", ports[0]);
    let direct = McpClient::http_stateless(upstream_url.clone(), None, &text)
        .await
        .map_err(|e| format!("the upstream in 2026-07-28: {e}"))?;
    let proxied = McpClient::http_stateless(proxy_url, Some(children::TOKEN), &text)
        .await
        .map_err(|e| format!("through the HTTP proxy in 2026-07-28: {e}"))?;
    let (d, p) = measure(proxied, direct).await;
    rows.push(Row {
        transport: STATELESS_HTTP,
        decided_by: REMOTE,
        direct: d,
        proxied: p,
    });

    let row = |transport: &str, decided_by: &str| {
        rows.iter()
            .find(|r| r.transport == transport && r.decided_by == decided_by)
            .expect("every transport is measured with every binding")
    };
    for (transport, key, added_key) in [
        ("stdio", "mcp_stdio_vs_direct", "mcp_stdio_added_p50_ms"),
        (
            "Streamable HTTP",
            "mcp_http_vs_direct",
            "mcp_http_added_p50_ms",
        ),
        (
            STATELESS_HTTP,
            "mcp_stateless_http_vs_direct",
            "mcp_stateless_http_added_p50_ms",
        ),
    ] {
        let r = row(transport, REMOTE);
        headline.push(Headline::latency(
            format!("MCP `tools/call` over {transport}: `hookwire mcp` + 1 remote allow vs direct"),
            &r.proxied,
            &r.direct,
            key,
            None,
        ));
        headline.push(Headline::ratio_only(
            &format!("MCP over {transport}: added p50, in ms"),
            r.added(50.0) / 1000.0,
            added_key,
            (ADDED_P50_TARGET_US / 1000.0, false),
        ));
    }
    let embedded = [row("stdio", IN_PROCESS), row("Streamable HTTP", IN_PROCESS)];
    headline.push(Headline::ratio_only(
        &format!(
            "mcp_embedded_added_p50_ms: `tools/call` added p50 deciding with Rego in process, \
             the larger of stdio ({:.2}) and Streamable HTTP ({:.2}), in ms",
            embedded[0].added(50.0) / 1000.0,
            embedded[1].added(50.0) / 1000.0
        ),
        embedded
            .iter()
            .map(|r| r.added(50.0) / 1000.0)
            .fold(f64::NAN, f64::max),
        "mcp_embedded_added_p50_ms",
        (EMBEDDED_ADDED_P50_TARGET_US / 1000.0, false),
    ));
    tables.push_str(&render(&rows, plan));
    Ok(())
}

/// The section's table, as Markdown.
fn render(rows: &[Row], plan: Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n### MCP: `tools/call` through `hookwire mcp` against the same call direct\n\n\
         A fast `rmcp` upstream with one `echo` tool ({TEXT_BYTES} B of text each way), \
         reached directly and through the proxy (`hookwire-mcp` in its own process), \
         deciding at every point it emits (`pre_tool_call` and `post_tool_call` per call) \
         either with one remote allow interceptor over gRPC or with a Rego folder in its \
         own process (the library's `destructive_commands` and `secrets` at those points, \
         as `hookwire mcp --policy DIR` binds them). {} rounds of {} calls per path, \
         alternating with a direct client of their own, after {WARMUP} warm-up calls each; \
         calls/s is one client calling back to back.\n",
        plan.rounds, plan.remote_per_round
    );
    s.push_str(
        "| transport | decided by | direct p50 (p99) | through the proxy p50 (p99) | \
         added p50 (p99) | calls/s direct | calls/s through the proxy | target |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let added = r.added(50.0);
        let target = if r.decided_by == IN_PROCESS {
            EMBEDDED_ADDED_P50_TARGET_US
        } else {
            ADDED_P50_TARGET_US
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({}) | {} ({}) | {} ({}) | {:.0}/s | {:.0}/s | added p50 ≤ {}: {} |",
            r.transport,
            r.decided_by,
            us(r.direct.median()),
            us(r.direct.pct(99.0)),
            us(r.proxied.median()),
            us(r.proxied.pct(99.0)),
            us(added),
            us(r.added(99.0)),
            rate(&r.direct),
            rate(&r.proxied),
            us(target),
            if added <= target { "met" } else { "**missed**" },
        );
    }
    s
}
