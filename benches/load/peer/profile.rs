//! `--profile gateway [n]`: where a governed Chat Completions turn spends
//! the gateway's CPU.
//!
//! Starts the mock upstream and one gateway process per binding (an
//! in-process allow at every point, and the four-point Rego folder decided
//! in process, `embedded.rs`), sends `n` sequential whole Chat
//! Completions turns directly and through each gateway, and prints per
//! path the p50 latency and the CPU time per turn of the gateway's and the
//! upstream's processes (from `/proc`), so that the gateway's own work is
//! separated from the client's and the upstream's. `HOOKWIRE_BENCH_GATEWAY`
//! (`http://127.0.0.1:PORT`, with `HOOKWIRE_BENCH_UPSTREAM` its upstream's
//! base URL) measures a gateway started by hand instead, e.g. under `perf
//! record` or `valgrind --tool=callgrind`.

use super::apis::Api;
use super::children::{self, GATEWAY_FLAG, UPSTREAM_FLAG};
use super::load::{self, Http, Kind, Target};
use super::stats::Quantiles;
use crate::child::cpu_us;
use crate::embedded::{LOCAL_ALLOW, PolicyDir};

/// One path's figures.
struct Figures {
    latency: Quantiles,
    /// CPU per turn of the gateway's process, µs (NaN: not ours to read).
    gateway_cpu: f64,
    /// CPU per turn of the upstream's process, µs.
    upstream_cpu: f64,
}

/// Runs `n` turns against `target` after a warm-up, reading the CPU of
/// `gateway` and `upstream` around them.
async fn turns(
    http: &Http,
    target: &Target,
    n: u64,
    gateway: Option<u32>,
    upstream: Option<u32>,
) -> Result<Figures, String> {
    let kind = Kind {
        api: Api::Chat,
        stream: false,
    };
    let session = format!("{}-profile", load::prefix(target, kind));
    for i in 0..50 {
        load::once(http, target, kind, &session, i).await?;
    }
    let (g0, u0) = (cpu(gateway), cpu(upstream));
    let mut samples = Vec::with_capacity(n as usize);
    for i in 0..n {
        let t = std::time::Instant::now();
        load::once(http, target, kind, &session, i).await?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(Figures {
        latency: Quantiles::of(&samples),
        gateway_cpu: (cpu(gateway) - g0) / n as f64,
        upstream_cpu: (cpu(upstream) - u0) / n as f64,
    })
}

fn cpu(pid: Option<u32>) -> f64 {
    pid.map_or(f64::NAN, |p| cpu_us(Some(p)))
}

/// `--profile gateway [n]`.
pub async fn profile(n: usize) -> Result<(), String> {
    let http = Http::new();
    let n = n as u64;
    let key = "sk-profile".to_owned();
    let target = |label: &'static str, base: String| Target {
        label,
        base,
        key: key.clone(),
    };
    if let Ok(base) = std::env::var("HOOKWIRE_BENCH_GATEWAY") {
        let f = turns(&http, &target("gateway", base), n, None, None).await?;
        println!(
            "{n} Chat turns through the given gateway: p50 {:.0} µs, p99 {:.0} µs",
            f.latency.p50, f.latency.p99
        );
        return Ok(());
    }
    let (upstream, ports) = children::spawn(UPSTREAM_FLAG, &[])?;
    let upstream_url = format!("http://127.0.0.1:{}", ports[0]);
    let dir = PolicyDir::four_points();
    let (gateways, gw) = children::spawn(
        GATEWAY_FLAG,
        &[&format!("{upstream_url}/v1"), LOCAL_ALLOW, &dir.argument()],
    )?;
    let paths = [
        ("direct", upstream_url.clone(), None),
        (
            "gateway, allow in process",
            format!("http://127.0.0.1:{}", gw[0]),
            Some(gateways.id()),
        ),
        (
            "gateway, Rego in process (four points)",
            format!("http://127.0.0.1:{}", gw[1]),
            Some(gateways.id()),
        ),
    ];
    for (label, base, gateway) in paths {
        let f = turns(&http, &target(label, base), n, gateway, Some(upstream.id())).await?;
        println!(
            "{label:<40} p50 {:>6.0} µs  p99 {:>6.0} µs  CPU per turn: gateway {:>6.1} µs, upstream {:>5.1} µs",
            f.latency.p50, f.latency.p99, f.gateway_cpu, f.upstream_cpu
        );
    }
    Ok(())
}
