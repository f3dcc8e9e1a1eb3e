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
//! Target: added p50 ≤ 0.5 ms.

mod children;
mod client;

use std::fmt::Write as _;

pub use children::{PROXY_FLAG, UPSTREAM_FLAG, serve_proxy, serve_upstream};

use crate::Plan;
use crate::child::Endpoints;
use crate::measure::{Samples, interleaved};
use crate::peer::children::spawn;
use crate::report::Headline;
use client::McpClient;

/// The added p50 the section is held to, in microseconds.
const ADDED_P50_TARGET_US: f64 = 500.0;
/// Sequential calls per path before anything is measured.
const WARMUP: usize = 50;
/// The echoed text: about the bench's 1 KiB arguments.
const TEXT_BYTES: usize = 1024;

/// One transport's results.
struct Row {
    transport: &'static str,
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

    eprintln!("mcp: tools/call over stdio, direct and through the proxy ...");
    let direct = McpClient::stdio(&[UPSTREAM_FLAG.into(), "stdio".into()], &text).await?;
    let proxied = McpClient::stdio(
        &[
            PROXY_FLAG.into(),
            "stdio".into(),
            ep.allow.clone(),
            "--".into(),
            exe.clone(),
            UPSTREAM_FLAG.into(),
            "stdio".into(),
        ],
        &text,
    )
    .await
    .map_err(|e| format!("through the stdio proxy: {e}"))?;
    let (d, p) = measure(proxied, direct).await;
    let stdio = Row {
        transport: "stdio",
        direct: d,
        proxied: p,
    };

    eprintln!("mcp: tools/call over Streamable HTTP, direct and through the proxy ...");
    let (_upstream, ports) = spawn(UPSTREAM_FLAG, &["http"])?;
    let upstream_url = format!("http://127.0.0.1:{}/mcp", ports[0]);
    let (_proxy, ports) = spawn(PROXY_FLAG, &["http", &ep.allow, &upstream_url])?;
    let proxy_url = format!("http://127.0.0.1:{}/mcp", ports[0]);
    let direct = McpClient::http(upstream_url, None, &text).await?;
    let proxied = McpClient::http(proxy_url, Some(children::TOKEN), &text)
        .await
        .map_err(|e| format!("through the HTTP proxy: {e}"))?;
    let (d, p) = measure(proxied, direct).await;
    let http = Row {
        transport: "Streamable HTTP",
        direct: d,
        proxied: p,
    };

    for (row, key, added_key) in [
        (&stdio, "mcp_stdio_vs_direct", "mcp_stdio_added_p50_ms"),
        (&http, "mcp_http_vs_direct", "mcp_http_added_p50_ms"),
    ] {
        headline.push(Headline::latency(
            format!(
                "MCP `tools/call` over {}: `hookwire mcp` + 1 remote allow vs direct",
                row.transport
            ),
            &row.proxied,
            &row.direct,
            key,
            None,
        ));
        headline.push(Headline::ratio_only(
            &format!("MCP over {}: added p50, in ms", row.transport),
            row.added(50.0) / 1000.0,
            added_key,
            (ADDED_P50_TARGET_US / 1000.0, false),
        ));
    }
    tables.push_str(&render(&[stdio, http], plan));
    Ok(())
}

/// The section's table, as Markdown.
fn render(rows: &[Row], plan: Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n### MCP: `tools/call` through `hookwire mcp` against the same call direct\n\n\
         A fast `rmcp` upstream with one `echo` tool ({TEXT_BYTES} B of text each way), \
         reached directly and through the proxy (`hookwire-mcp` in its own process, \
         one remote allow interceptor over gRPC at every point it emits: `pre_tool_call` \
         and `post_tool_call` per call). {} rounds of {} calls per path, alternating, after \
         {WARMUP} warm-up calls each; calls/s is one client calling back to back.\n",
        plan.rounds, plan.remote_per_round
    );
    s.push_str(
        "| transport | direct p50 (p99) | through the proxy p50 (p99) | added p50 (p99) | \
         calls/s direct | calls/s through the proxy | added p50 ≤ 0.5 ms |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let added = r.added(50.0);
        let _ = writeln!(
            s,
            "| {} | {} ({}) | {} ({}) | {} ({}) | {:.0}/s | {:.0}/s | {} |",
            r.transport,
            us(r.direct.median()),
            us(r.direct.pct(99.0)),
            us(r.proxied.median()),
            us(r.proxied.pct(99.0)),
            us(added),
            us(r.added(99.0)),
            rate(&r.direct),
            rate(&r.proxied),
            if added <= ADDED_P50_TARGET_US {
                "met"
            } else {
                "**missed**"
            },
        );
    }
    s
}
