//! What a verdict becomes in an agent's answer: the text of a deny, the
//! block of a rewrite the agent cannot apply, and the `extensions`
//! namespace the core's members go under. A leaf shared by the host and
//! its turns.

use hookwire_client::Emission;

use crate::agents::Agent;
use crate::event::Outcome;

/// The `extensions` namespace of the members this crate adds to contexts.
pub(super) const NAMESPACE: &str = "agent_hooks";

/// The block of a rewrite the agent cannot apply.
pub(super) fn unapplied(agent: Agent, point: &str) -> Outcome {
    Outcome::Block {
        reason: format!(
            "hookwire: the verdict at {point} rewrites what {} cannot rewrite from this hook; blocked instead",
            agent.name()
        ),
    }
}

/// The text of a deny at `point`: the verdict's reason and, so that the
/// model can correct itself, its message — the interceptor's own words,
/// meant for the agent — by every edge's rule (`hookwire::notice_message`:
/// one line, bounded).
pub(super) fn denied(point: &str, verdict: &hookwire::Verdict) -> String {
    let reason = verdict.reason.as_deref().unwrap_or("no reason given");
    let mut text = if verdict.is_liftable() {
        format!("hookwire: denied at {point} pending approval: {reason}")
    } else {
        format!("hookwire: denied at {point}: {reason}")
    };
    if let Some(line) = hookwire::notice_message(verdict.message.as_deref()) {
        text.push_str(" — ");
        text.push_str(&line);
    }
    text
}

/// An emission's reason, or the point's name.
pub(super) fn reason_of(e: &Emission, point: &str) -> String {
    e.reason()
        .map_or_else(|| format!("denied at {point}"), str::to_owned)
}
