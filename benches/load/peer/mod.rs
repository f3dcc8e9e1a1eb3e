//! The `gateway_peer` section: the gateway measured against LiteLLM, side
//! by side in one run, on each wire API, whole and streamed.
//!
//! One mock upstream (`children.rs`, its own process) is reached five
//! ways: directly; through `hookwire_gateway::Gateway` (its own process)
//! whose host binds one remote allow interceptor at all eight points (the
//! load bench's allow service, over gRPC in its process); through the same
//! gateway bound to `hookwire policy`'s service with the destructive-command
//! policy (`policy.rs`'s process); through the same gateway deciding with a
//! Rego folder in its own process (`embedded.rs`: a decision at each of a
//! Chat turn's four points, as `hookwire gateway --policy DIR` binds it);
//! and through the LiteLLM proxy with the
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
//! saw it against the one that served it). After them, the in-process path
//! and the direct one are run open loop at [`HIGH_RATE`] (Chat
//! Completions, whole): the gateway's p99 under load.
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
pub mod profile;
mod replica;
pub mod stats;

use std::fmt::Write as _;

pub use children::{GATEWAY_FLAG, UPSTREAM_FLAG, serve_gateway, serve_upstream};

use crate::Plan;
use crate::child::Endpoints;
use crate::embedded::PolicyDir;
use crate::report::Headline;
use apis::Api;
use load::{Http, Kind, Target};
use stats::{Quantiles, RateSearch};

/// The open-loop rate, requests per second.
pub const RATE: f64 = 50.0;
/// The open-loop rate of the p99-under-load row, requests per second.
const HIGH_RATE: f64 = 2000.0;
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
/// The targets of issue 41 for the in-process Rego path: added p50 (ms),
/// its share of LiteLLM's, and its p99 at [`HIGH_RATE`] (ms).
const EMBEDDED_P50_TARGET_MS: f64 = 0.25;
const EMBEDDED_RATIO_TARGET: f64 = 0.03;
const EMBEDDED_P99_AT_RATE_TARGET_MS: f64 = 2.0;

/// The paths, in the table's order.
const PATHS: [&str; 5] = [
    "direct",
    "hookwire + allow",
    "hookwire + Rego",
    "hookwire + Rego in process",
    "LiteLLM",
];
const DIRECT: usize = 0;
const ALLOW: usize = 1;
const REGO: usize = 2;
const EMBEDDED: usize = 3;
const LITELLM: usize = 4;

/// One API and mode's results, per path (`None`: not measured).
struct Row {
    kind: Kind,
    latency: [Option<Quantiles>; 5],
    rate: [Option<f64>; 5],
}

impl Row {
    fn added(&self, path: usize) -> Option<Quantiles> {
        Some(self.latency[path]?.added_over(&self.latency[DIRECT]?))
    }

    /// The added p50 of `path` over LiteLLM's.
    fn p50_ratio_of(&self, path: usize) -> f64 {
        match (self.added(path), self.added(LITELLM)) {
            (Some(a), Some(l)) => a.p50 / l.p50,
            _ => f64::NAN,
        }
    }

    fn p50_ratio(&self) -> f64 {
        self.p50_ratio_of(ALLOW)
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
    let policy_dir = PolicyDir::four_points();
    let spawned = children::spawn(
        GATEWAY_FLAG,
        &[&upstream_v1, &ep.allow, &rego_url, &policy_dir.argument()],
    );
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
            (format!("http://127.0.0.1:{}", gw[1]), client_key.clone()),
            (format!("http://127.0.0.1:{}", gw[2]), client_key),
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
        let loaded = under_load(plan, &http, &targets).await?;
        Ok::<_, String>((rows, workers, switch, loaded))
    }
    .await;
    drop(policy_child.stdin.take());
    let _ = policy_child.kill();
    let _ = policy_child.wait();
    let (rows, workers, switch, loaded) = result?;
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
    let embedded_added = chat.added(EMBEDDED).map_or(f64::NAN, |q| q.p50);
    headline.push(Headline::ratio_only(
        "gateway_embedded_added_p50_ms: added p50, hookwire deciding with Rego in process at \
         the four points of a turn, Chat Completions whole, in ms",
        embedded_added / 1000.0,
        "gateway_embedded_added_p50_ms",
        (EMBEDDED_P50_TARGET_MS, false),
    ));
    headline.push(Headline::ratio_only(
        "gateway_embedded_vs_litellm: that added p50 over LiteLLM's (custom guardrail)",
        chat.p50_ratio_of(EMBEDDED),
        "gateway_embedded_vs_litellm",
        (EMBEDDED_RATIO_TARGET, false),
    ));
    headline.push(Headline::ratio_only(
        &format!(
            "gateway_embedded_p99_at_rate_ms: p99 through hookwire deciding with Rego in \
             process, open loop at {HIGH_RATE:.0} requests/s, Chat Completions whole, in ms \
             (direct at the same rate: {:.2} ms)",
            loaded.direct.as_ref().map_or(f64::NAN, |q| q.p99) / 1000.0
        ),
        loaded.embedded_p99() / 1000.0,
        "gateway_embedded_p99_at_rate_ms",
        (EMBEDDED_P99_AT_RATE_TARGET_MS, false),
    ));
    tables.push_str(&render(&rows, workers, plan));
    tables.push_str(&loaded.render(plan));
    Ok(())
}

/// Latency at [`HIGH_RATE`], direct and through the in-process path; a
/// path that could not keep the rate (more requests in flight than the
/// open loop allows) is its error, shown as such.
struct UnderLoad {
    direct: Result<Quantiles, String>,
    embedded: Result<Quantiles, String>,
}

impl UnderLoad {
    /// The in-process path's p99 in µs (NaN when it could not keep the rate).
    fn embedded_p99(&self) -> f64 {
        self.embedded.as_ref().map_or(f64::NAN, |q| q.p99)
    }

    fn render(&self, plan: Plan) -> String {
        let path = |q: &Result<Quantiles, String>| match q {
            Ok(q) => format!("p50 {} (p99 {})", ms(q.p50), ms(q.p99)),
            Err(e) => format!("did not keep the rate ({e})"),
        };
        let p99 = self.embedded_p99();
        format!(
            "\nAt {HIGH_RATE:.0} requests/s (open loop, {:.0} s per path, Chat Completions \
             whole): direct {}; through hookwire deciding with Rego in process {}; target p99 \
             ≤ {EMBEDDED_P99_AT_RATE_TARGET_MS} ms: {}.\n",
            plan.peer_open.as_secs_f64(),
            path(&self.direct),
            path(&self.embedded),
            met(p99 <= EMBEDDED_P99_AT_RATE_TARGET_MS * 1000.0)
        )
    }
}

/// The direct path and the in-process one, each open loop at
/// [`HIGH_RATE`] for the section's open-loop time after a short warm-up at
/// the same rate.
async fn under_load(plan: Plan, http: &Http, targets: &[Target]) -> Result<UnderLoad, String> {
    eprintln!("gateway_peer: p99 at {HIGH_RATE:.0} requests/s ...");
    let kind = Kind {
        api: Api::Chat,
        stream: false,
    };
    let mut quantiles = Vec::new();
    for path in [DIRECT, EMBEDDED] {
        // A client of its own: the section's earlier clients filled their
        // session quotas, and this row measures a steady rate, not their
        // sessions being displaced (the mock upstream takes any key).
        // Its conversations are its own too: a conversation belongs to the
        // client that opened it.
        let target = Target {
            label: if path == DIRECT {
                "direct (own client)"
            } else {
                "hookwire + Rego in process (own client)"
            },
            key: "sk-peer-bench-rate".to_owned(),
            ..targets[path].clone()
        };
        let run = async {
            load::open_loop(http, &target, kind, HIGH_RATE, plan.peer_open / 6).await?;
            let s = load::open_loop(http, &target, kind, HIGH_RATE, plan.peer_open).await?;
            Ok::<_, String>(Quantiles::of(&s))
        };
        let q = run.await;
        if let Err(e) = &q {
            eprintln!(
                "gateway_peer: {} at {HIGH_RATE:.0}/s: {e}",
                targets[path].label
            );
            // Let the requests still in flight drain before the next path.
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
        quantiles.push(q);
    }
    let embedded = quantiles.pop().expect("two paths");
    let direct = quantiles.pop().expect("two paths");
    Ok(UnderLoad { direct, embedded })
}

/// Measures one API and mode on every path.
async fn measure(plan: Plan, http: &Http, targets: &[Target], kind: Kind) -> Result<Row, String> {
    eprintln!("gateway_peer: {} ...", kind.name());
    let mut served = [true; 5];
    for (i, t) in targets.iter().enumerate() {
        let warmup = format!("{}-warmup", load::prefix(t, kind));
        if let Err(e) = load::once(http, t, kind, &warmup, 0).await {
            if (ALLOW..LITELLM).contains(&i) {
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
    let mut samples: [Vec<f64>; 5] = Default::default();
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
    let mut rate = [None; 5];
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
         points (gRPC, its own process), with `hookwire policy`'s Rego destructive-command \
         policy, or deciding in its own process with a Rego folder that decides at each of \
         a turn's four points (`input`, `pre_model_call`, `post_model_call`, `output`: the \
         library's `pii`, `destructive_commands` and `secrets` and a model-call package, as \
         `--policy DIR` binds them), and through LiteLLM {} (`benches/peer/`: custom guardrail on `pre_call` and \
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
         added: hookwire + Rego in process | added: LiteLLM | added p50, hookwire / LiteLLM \
         | targets |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
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
            cell(REGO, r.added(REGO)),
            cell(EMBEDDED, r.added(EMBEDDED)),
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
            "| {} | {} | {} | {} | {} | {} | {} | {targets} |",
            r.kind.name(),
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
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
        "\n| API | max rate: direct | hookwire + allow | hookwire + Rego | \
         hookwire + Rego in process | LiteLLM | hookwire / LiteLLM | target |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let rate = |x: Option<f64>| x.map_or("not routed".to_owned(), |x| format!("{x:.0}/s"));
        let ratio = r.rate_ratio();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.kind.name(),
            rate(r.rate[DIRECT]),
            rate(r.rate[ALLOW]),
            rate(r.rate[REGO]),
            rate(r.rate[EMBEDDED]),
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
