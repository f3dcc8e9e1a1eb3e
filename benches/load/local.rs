//! The `local` section: the host with in-process interceptors against the
//! canonical in-process emitter (`agent_hooks::InterceptionEmitter`), for
//! three chains, and the geometric mean of the three ratios.

use std::sync::Arc;

use hookwire_client::ToolCall;
use serde_json::Value;

use crate::fixtures::{self, Chain};
use crate::measure::{CanonEmit, Emit, interleaved};
use crate::report::Headline;
use crate::{Plan, started};

/// Adds one headline per chain, then `overhead_vs_canonical`.
pub async fn versus_canonical(
    plan: Plan,
    call: &ToolCall,
    args: &Value,
    headline: &mut Vec<Headline>,
) {
    eprintln!("in-process host vs canonical emitter ...");
    let mut overhead = Vec::new();
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
        let host = fixtures::local_host(chain);
        let mut ours = Emit {
            session: started(&host, "s-local").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(chain),
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
            format!("in-process emission vs canonical emitter: {label}"),
            &a,
            &b,
            "",
            None,
        ));
    }
    let geomean = overhead.iter().map(|r| r.ln()).sum::<f64>() / overhead.len() as f64;
    headline.push(Headline::ratio_only(
        "overhead_vs_canonical: geometric mean of the three cases above",
        geomean.exp(),
        "overhead_vs_canonical",
        (1.0, false),
    ));
}
