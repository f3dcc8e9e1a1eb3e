//! The `gateway_peer` section: the gateway measured against LiteLLM, side
//! by side in one run, on each wire API, whole and streamed.
//!
//! One mock upstream (`children.rs`, its own process) is reached four
//! ways: directly; through `hookwire_gateway::Gateway` (its own process)
//! whose host binds one remote allow interceptor at all eight points (the
//! load bench's allow service, over gRPC in its process); through the same
//! gateway bound to `hookwire policy`'s service with the destructive-command
//! policy (`policy.rs`'s process); and through the LiteLLM proxy with the
//! equivalent custom guardrail on `pre_call` and `post_call`, as many
//! workers as the machine has cores (`litellm.rs`). Per API and path:
//!
//! - latency at a fixed rate, open loop ([`RATE`] requests per second,
//!   each timed from its intended send time), in two rounds with the paths
//!   in alternating order; what a path adds is its p50 (p99) minus the
//!   direct path's;
//! - the maximum sustained rate, closed loop: the concurrency doubles from
//!   [`START_CONCURRENCY`] while the rate grows and no request fails
//!   (`stats::RateSearch`).
//!
//! Before the paths are compared, `replica.rs` times what a replica switch
//! costs the gateway (one conversation's next turn on a replica that never
//! saw it against the one that served it).
//!
//! Every request is checked (status and a complete answer); any failure
//! ends the section with an error, and so does a LiteLLM that cannot be
//! installed or started, or whose guardrail does not refuse its probes:
//! never a number from a path that did not do the work. An API the
//! gateway does not route yet (404 on its route) is shown as such.

mod apis;
pub mod children;
mod litellm;
mod load;
mod replica;
pub mod stats;

use std::fmt::Write as _;

pub use children::{GATEWAY_FLAG, UPSTREAM_FLAG, serve_gateway, serve_upstream};

use crate::Plan;
use crate::child::Endpoints;
use crate::report::Headline;
use apis::Api;
use load::{Http, Kind, Target};
use stats::{Quantiles, RateSearch};

/// The open-loop rate, requests per second.
pub const RATE: f64 = 50.0;
/// Where the rate search starts.
pub const START_CONCURRENCY: usize = 8;
/// Where it stops at the latest.
const MAX_CONCURRENCY: usize = 256;
/// Sequential requests per path before anything is measured.
const WARMUP: u64 = 30;

/// The targets of issue 26: hookwire's added p50 at most this share of
/// LiteLLM's, its maximum rate at least this multiple, and with one
/// remote interceptor at most these added p50 and p99 (µs).
const P50_RATIO_TARGET: f64 = 0.05;
const RATE_RATIO_TARGET: f64 = 20.0;
const ADDED_P50_TARGET_US: f64 = 1000.0;
const ADDED_P99_TARGET_US: f64 = 3000.0;

/// The paths, in the table's order.
const PATHS: [&str; 4] = ["direct", "hookwire + allow", "hookwire + Rego", "LiteLLM"];
const DIRECT: usize = 0;
const ALLOW: usize = 1;
const LITELLM: usize = 3;

/// One API and mode's results, per path (`None`: not measured).
struct Row {
    kind: Kind,
    latency: [Option<Quantiles>; 4],
    rate: [Option<f64>; 4],
}

impl Row {
    fn added(&self, path: usize) -> Option<Quantiles> {
        Some(self.latency[path]?.added_over(&self.latency[DIRECT]?))
    }

    fn p50_ratio(&self) -> f64 {
        match (self.added(ALLOW), self.added(LITELLM)) {
            (Some(a), Some(l)) => a.p50 / l.p50,
            _ => f64::NAN,
        }
    }

    fn rate_ratio(&self) -> f64 {
        match (self.rate[ALLOW], self.rate[LITELLM]) {
            (Some(a), Some(l)) => a / l,
            _ => f64::NAN,
        }
    }
}

/// Runs the section: its two ratios go to `headline`, its tables to
/// `tables`. An error means nothing was measured that could be reported.
pub async fn section(
    plan: Plan,
    ep: &Endpoints,
    headline: &mut Vec<Headline>,
    tables: &mut String,
) -> Result<(), String> {
    eprintln!("gateway_peer: the gateway against LiteLLM ...");
    let litellm_cmd = litellm::install()?;
    let (_upstream, ports) = children::spawn(UPSTREAM_FLAG, &[])?;
    let upstream = format!("http://127.0.0.1:{}", ports[0]);
    let (mut policy_child, [rego_url, _rust_url]) = crate::policy::spawn_child();
    let upstream_v1 = format!("{upstream}/v1");
    let spawned = children::spawn(GATEWAY_FLAG, &[&upstream_v1, &ep.allow, &rego_url]);
    let result = async {
        let (_gateways, gw) = spawned?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let http = Http::new();
        let proxy = litellm::LiteLlm::start(&litellm_cmd, &upstream, workers, &http).await?;
        // The gateway forwards the client's key; the mock upstream takes any.
        let client_key = "sk-peer-bench".to_owned();
        let targets = [
            (upstream.clone(), client_key.clone()),
            (format!("http://127.0.0.1:{}", gw[0]), client_key.clone()),
            (format!("http://127.0.0.1:{}", gw[1]), client_key),
            (proxy.base.clone(), proxy.key.clone()),
        ];
        let targets: Vec<Target> = PATHS
            .iter()
            .zip(targets)
            .map(|(label, (base, key))| Target { label, base, key })
            .collect();
        let switch = replica::measure(plan, &http, &targets[ALLOW]).await?;
        let mut rows = Vec::new();
        for api in Api::ALL {
            for stream in [false, true] {
                let kind = Kind { api, stream };
                proxy.check(&http, kind).await?;
                rows.push(measure(plan, &http, &targets, kind).await?);
            }
        }
        Ok::<_, String>((rows, workers, switch))
    }
    .await;
    drop(policy_child.stdin.take());
    let _ = policy_child.kill();
    let _ = policy_child.wait();
    let (rows, workers, switch) = result?;
    headline.push(switch);

    let chat = rows
        .iter()
        .find(|r| r.kind.api == Api::Chat && !r.kind.stream)
        .expect("the Chat Completions row");
    headline.push(Headline::ratio_only(
        "gateway_vs_litellm: added p50, hookwire (one remote allow interceptor) over LiteLLM \
         (custom guardrail), Chat Completions",
        chat.p50_ratio(),
        "gateway_vs_litellm",
        (P50_RATIO_TARGET, false),
    ));
    headline.push(Headline::ratio_only(
        "gateway_rate_vs_litellm: maximum sustained rate, hookwire over LiteLLM, Chat Completions",
        chat.rate_ratio(),
        "gateway_rate_vs_litellm",
        (RATE_RATIO_TARGET, true),
    ));
    tables.push_str(&render(&rows, workers, plan));
    Ok(())
}

/// Measures one API and mode on every path.
async fn measure(plan: Plan, http: &Http, targets: &[Target], kind: Kind) -> Result<Row, String> {
    eprintln!("gateway_peer: {} ...", kind.name());
    let mut served = [true; 4];
    for (i, t) in targets.iter().enumerate() {
        let warmup = format!("{}-warmup", load::prefix(t, kind));
        if let Err(e) = load::once(http, t, kind, &warmup, 0).await {
            if i == ALLOW || i == ALLOW + 1 {
                let (status, _) = load::send(http, t, kind, &warmup, "route check").await?;
                if status == 404 && kind.api != Api::Chat {
                    eprintln!(
                        "gateway_peer: the gateway does not route {} yet (404)",
                        kind.api.path()
                    );
                    served[i] = false;
                    continue;
                }
            }
            return Err(e);
        }
        for n in 1..WARMUP {
            load::once(http, t, kind, &warmup, n).await?;
        }
    }
    let mut samples: [Vec<f64>; 4] = Default::default();
    let rounds = 2;
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order.into_iter().filter(|i| served[*i]) {
            let s = load::open_loop(http, &targets[i], kind, RATE, plan.peer_open / rounds).await?;
            samples[i].extend(s);
        }
    }
    let mut rate = [None; 4];
    for (i, t) in targets.iter().enumerate().filter(|(i, _)| served[*i]) {
        let mut search = RateSearch::new(START_CONCURRENCY, MAX_CONCURRENCY);
        while let Some(c) = search.next() {
            let r = load::closed_loop(http, t, kind, c, plan.peer_window).await;
            if let Err(e) = &r {
                eprintln!("gateway_peer: {} at concurrency {c}: {e}", t.label);
            }
            search.record(c, r.ok());
        }
        rate[i] = Some(
            search
                .best()
                .ok_or_else(|| {
                    format!(
                        "{} {}: no error-free closed-loop step",
                        t.label,
                        kind.name()
                    )
                })?
                .1,
        );
    }
    let latency = samples.map(|s| (!s.is_empty()).then(|| Quantiles::of(&s)));
    Ok(Row {
        kind,
        latency,
        rate,
    })
}

fn ms(us: f64) -> String {
    if us.is_nan() {
        "–".to_owned()
    } else if us.abs() < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// The section's two tables, as Markdown.
fn render(rows: &[Row], workers: usize, plan: Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n### The gateway against LiteLLM (same mock upstream, same run)\n\n\
         One mock upstream (whole answers and stream events, prebuilt) reached directly, \
         through `hookwire gateway` with one remote allow interceptor bound at all eight \
         points (gRPC, its own process) or with `hookwire policy`'s Rego destructive-command \
         policy, and through LiteLLM {} (`benches/peer/`: custom guardrail on `pre_call` and \
         `post_call`, {workers} workers, no database). Each request is one turn of its own \
         conversation. Latency: open loop at {RATE:.0} requests/s for {:.0} s per path, timed \
         from each request's intended send time; *added* is the path's p50 (p99) minus the \
         direct one's. Rate: closed loop, concurrency doubled from {START_CONCURRENCY} while \
         the rate grows by 5 % with no failed request.\n",
        litellm::version(),
        plan.peer_open.as_secs_f64()
    );
    s.push_str(
        "| API | direct p50 (p99) | added: hookwire + allow | added: hookwire + Rego | \
         added: LiteLLM | added p50, hookwire / LiteLLM | targets |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut overloaded = false;
    for r in rows {
        // A path whose maximum rate is below the open-loop rate queues:
        // its latency is mostly waiting, and is marked.
        let mut cell = |path: usize, q: Option<Quantiles>| match q {
            Some(q) => {
                let over = r.rate[path].is_some_and(|x| x < RATE);
                overloaded |= over;
                format!(
                    "{} ({}){}",
                    ms(q.p50),
                    ms(q.p99),
                    if over { " †" } else { "" }
                )
            }
            None => "not routed".to_owned(),
        };
        let cells = [
            cell(DIRECT, r.latency[DIRECT]),
            cell(ALLOW, r.added(ALLOW)),
            cell(ALLOW + 1, r.added(ALLOW + 1)),
            cell(LITELLM, r.added(LITELLM)),
        ];
        let ratio = r.p50_ratio();
        let targets = match r.added(ALLOW) {
            Some(a) => format!(
                "≤ {P50_RATIO_TARGET}: {}; p50 ≤ 1 ms: {}; p99 ≤ 3 ms: {}",
                met(ratio <= P50_RATIO_TARGET),
                met(a.p50 <= ADDED_P50_TARGET_US),
                met(a.p99 <= ADDED_P99_TARGET_US)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {targets} |",
            r.kind.name(),
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            if ratio.is_nan() {
                "–".to_owned()
            } else {
                format!("{ratio:.3}")
            },
        );
    }
    if overloaded {
        let _ = writeln!(
            s,
            "\n† The path's maximum sustained rate (below) is under {RATE:.0} requests/s: \
             at this rate its requests queue, and the latency is mostly that wait."
        );
    }
    s.push_str(
        "\n| API | max rate: direct | hookwire + allow | hookwire + Rego | LiteLLM | \
         hookwire / LiteLLM | target |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let rate = |x: Option<f64>| x.map_or("not routed".to_owned(), |x| format!("{x:.0}/s"));
        let ratio = r.rate_ratio();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.kind.name(),
            rate(r.rate[DIRECT]),
            rate(r.rate[ALLOW]),
            rate(r.rate[ALLOW + 1]),
            rate(r.rate[LITELLM]),
            if ratio.is_nan() {
                "–".to_owned()
            } else {
                format!("{ratio:.1}")
            },
            if ratio.is_nan() {
                String::new()
            } else {
                format!("≥ {RATE_RATIO_TARGET}: {}", met(ratio >= RATE_RATIO_TARGET))
            },
        );
    }
    s
}
