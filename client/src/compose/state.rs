//! What every composition profile shares: the [`Plan`] an emission is
//! composed under, the [`Common`] state (summaries, unions, approval
//! outcome, transform generation), the [`Action`] a profile answers with,
//! and [`apply_transform`]. A leaf of `compose`: the profiles and the
//! [`Composer`](super::Composer) depend on it, never the other way round.

use hookwire::path;
use hookwire::{
    AgentContext, Composition, Decision, HostError, InterceptionPoint, Mode, ResolvedBy, Verdict,
    VerdictSummary,
};

use super::unions::Unions;

/// What one emission is composed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Profile and knobs (resolved on construction of the composer).
    pub composition: Composition,
    /// Enforcement mode.
    pub mode: Mode,
    /// The emission's point.
    pub point: InterceptionPoint,
    /// Number of interceptors bound at this point.
    pub interceptors: usize,
    /// Whether a resolver is registered. The composer consults it only in
    /// enforce mode and never at `agent_shutdown` (§6.1a, §8, §9).
    pub resolver: bool,
}

impl Plan {
    pub(super) fn may_consult(&self) -> bool {
        self.resolver
            && self.mode == Mode::Enforce
            && self.point != InterceptionPoint::AgentShutdown
    }
}

/// State shared by every profile.
#[derive(Debug, Default)]
pub(super) struct Common {
    pub(super) summaries: Vec<VerdictSummary>,
    pub(super) unions: Unions,
    pub(super) resolved_by: Option<ResolvedBy>,
    pub(super) transformed: bool,
    /// Bumped on every applied transform, so the driver knows when an
    /// encoded copy of the context went stale.
    pub(super) generation: u64,
}

/// What a profile decided after an input.
#[derive(Debug)]
pub(super) enum Action {
    Dispatch(usize),
    Consult {
        index: Option<usize>,
        verdict: Verdict,
    },
    Finish {
        verdict: Verdict,
        decided_by: Option<usize>,
        fold_truncated: Option<bool>,
    },
}

impl Common {
    pub(super) fn record(&mut self, index: usize, v: &Verdict) {
        self.summaries.push(VerdictSummary {
            index,
            decision: v.decision,
            reason: v.reason.clone(),
            name: None,
        });
        self.unions.add(v);
    }
}

/// Applies (enforce) or checks (evaluate_only, §8) a transform against the
/// context's target. Returns the reserved reason on failure.
pub(super) fn apply_transform(
    plan: &Plan,
    verdict: &Verdict,
    ctx: &mut AgentContext,
    common: &mut Common,
) -> Result<(), HostError> {
    debug_assert_eq!(verdict.decision, Decision::Transform);
    if !plan.point.permits_transform() {
        return Err(HostError::TransformTargetForbidden);
    }
    let Some(t) = &verdict.transform else {
        return Err(HostError::VerdictInvalid);
    };
    let target = ctx.target_mut().ok_or(HostError::TransformInvalid)?;
    let result = match plan.mode {
        Mode::Enforce => path::apply(target, &t.path, t.value.clone()),
        Mode::EvaluateOnly => path::check(target, &t.path),
    };
    result.map_err(|e| e.host_error())?;
    if plan.mode == Mode::Enforce {
        common.transformed = true;
        common.generation += 1;
    }
    Ok(())
}
