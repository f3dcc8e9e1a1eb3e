//! The `spawn` section: a command hook spawned per decision (context JSON
//! on stdin, verdict on stdout; `benches/support/command_hook.rs`) against
//! a remote emission: over the `Multiplex` stream, which a host uses with
//! any service the SDK serves (the headline), and unary.

use serde_json::Value;

use crate::measure::{Emit, Spawn, interleaved};
use crate::report::Headline;
use crate::{COMMAND_HOOK, Plan, fixtures};

/// Adds the `spawn_vs_remote` headline, against `stream` (an emission on
/// a started session whose service declares the stream), and the same
/// against `unary` (one whose service does not).
pub async fn versus_remote(
    plan: Plan,
    args: &Value,
    stream: &mut Emit,
    unary: &mut Emit,
    headline: &mut Vec<Headline>,
) {
    eprintln!("process-per-hook vs remote emission ...");
    let mut spawn = Spawn {
        program: COMMAND_HOOK,
        context: fixtures::context(args),
    };
    let rows = [
        (
            stream,
            "Multiplex stream",
            "spawn_vs_remote",
            Some((5.0, true)),
        ),
        (unary, "unary", "", None),
    ];
    for (remote, transport, key, target) in rows {
        let (a, b) = interleaved(
            &mut spawn,
            remote,
            5,
            plan.spawn_rounds,
            plan.spawn_per_round,
        )
        .await;
        headline.push(Headline::latency(
            format!("command hook spawned per decision vs remote emission ({transport})"),
            &a,
            &b,
            key,
            target,
        ));
    }
}
