//! The `spawn` section: a command hook spawned per decision (context JSON
//! on stdin, verdict on stdout; `benches/support/command_hook.rs`) against
//! a remote emission.

use serde_json::Value;

use crate::measure::{Emit, Spawn, interleaved};
use crate::report::Headline;
use crate::{COMMAND_HOOK, Plan, fixtures};

/// Adds the `spawn_vs_remote` headline, against `remote` (an emission on
/// a started remote session).
pub async fn versus_remote(
    plan: Plan,
    args: &Value,
    remote: &mut Emit,
    headline: &mut Vec<Headline>,
) {
    eprintln!("process-per-hook vs remote emission ...");
    let mut spawn = Spawn {
        program: COMMAND_HOOK,
        context: fixtures::context(args),
    };
    let (a, b) = interleaved(
        &mut spawn,
        remote,
        5,
        plan.spawn_rounds,
        plan.spawn_per_round,
    )
    .await;
    headline.push(Headline::latency(
        "command hook spawned per decision vs remote emission".to_owned(),
        &a,
        &b,
        "spawn_vs_remote",
        Some((5.0, true)),
    ));
}
