//! The `local` section: the host with in-process interceptors against the
//! canonical in-process emitter (`agent_hooks::InterceptionEmitter`), for
//! three chains, with timeouts on both sides and without, and the
//! geometric mean of the three unbounded ratios.

use std::sync::Arc;

use hookwire_client::ToolCall;
use serde_json::Value;

use crate::fixtures::{self, Chain};
use crate::measure::{CanonEmit, Emit, interleaved};
use crate::report::Headline;
use crate::{Plan, started};

/// Adds one headline per chain and bound (both sides with the 5000 ms
/// per-interceptor timeout, then both without any), then
/// `overhead_vs_canonical` from the unbounded pairs: a timeout costs the
/// canonical emitter far more than the host (a spawned task per call), so
/// the bounded pairs flatter the host.
pub async fn versus_canonical(
    plan: Plan,
    call: &ToolCall,
    args: &Value,
    headline: &mut Vec<Headline>,
) {
    eprintln!("in-process host vs canonical emitter ...");
    let mut overhead = Vec::new();
    for bounded in [true, false] {
        overhead.clear();
        versus_canonical_bounded(plan, call, args, bounded, &mut overhead, headline).await;
    }
    let geomean = overhead.iter().map(|r| r.ln()).sum::<f64>() / overhead.len() as f64;
    headline.push(Headline::ratio_only(
        "overhead_vs_canonical: geometric mean of the three cases without timeouts",
        geomean.exp(),
        "overhead_vs_canonical",
        (0.5, false),
    ));
}

/// The three chains with timeouts on both sides (`bounded`) or on neither;
/// pushes each ratio to `overhead`.
async fn versus_canonical_bounded(
    plan: Plan,
    call: &ToolCall,
    args: &Value,
    bounded: bool,
    overhead: &mut Vec<f64>,
    headline: &mut Vec<Headline>,
) {
    let bound = if bounded {
        "5000 ms timeouts"
    } else {
        "no timeouts"
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
    ] {
        let host = fixtures::local_host_bounded(chain, bounded);
        let mut ours = Emit {
            session: started(&host, "s-local").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter_bounded(chain, bounded),
            builder: fixtures::canon_builder("s-local"),
            args: Arc::new(args.clone()),
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
            format!("in-process emission vs canonical emitter: {label}, {bound}"),
            &a,
            &b,
            "",
            None,
        ));
    }
}
