//! What every composition profile shares: the [`Plan`] an emission is
//! composed under, the [`Common`] state (summaries, unions, approval
//! outcome, transform generation), the [`Action`] a profile answers with,
//! and [`apply_transform`]. A leaf of `compose`: the profiles and the
//! [`Composer`](super::Composer) depend on it, never the other way round.

use hookwire::path;
use hookwire::{
    AgentContext, Composition, ContextLimits, Decision, HostError, InterceptionPoint, Mode,
    ResolvedBy, Verdict, VerdictSummary,
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
    /// The §12.3 bounds every transformed context is checked against.
    pub limits: ContextLimits,
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

/// Why a transform was not applied: the reserved reason of the host's
/// deny, and what the deny's message says (value-free).
#[derive(Debug)]
pub(super) struct Unapplied {
    reason: HostError,
    message: Option<String>,
}

impl Unapplied {
    /// The host's deny in the transform's place.
    pub(super) fn deny(self) -> Verdict {
        let deny = Verdict::host_error(self.reason);
        match self.message {
            Some(m) => deny.with_message(m),
            None => deny,
        }
    }
}

impl From<HostError> for Unapplied {
    fn from(reason: HostError) -> Self {
        Self {
            reason,
            message: None,
        }
    }
}

/// Applies (enforce) or checks (evaluate_only, §8) a transform against the
/// context's target. Fails with the reserved reason of a path that does
/// not resolve (§5.2), or `host_error:context_invalid` when the
/// transformed context breaks the §12.3 bounds (size or depth; §12.3
/// names that reason for any breach). A context a transform would push
/// past the bounds is left as it was, in both modes: the oversized value
/// reaches neither a later interceptor nor the action.
pub(super) fn apply_transform(
    plan: &Plan,
    verdict: &Verdict,
    ctx: &mut AgentContext,
    common: &mut Common,
) -> Result<(), Unapplied> {
    debug_assert_eq!(verdict.decision, Decision::Transform);
    if !plan.point.permits_transform() {
        return Err(HostError::TransformTargetForbidden.into());
    }
    let Some(t) = &verdict.transform else {
        return Err(HostError::VerdictInvalid.into());
    };
    let target = ctx.target_mut().ok_or(HostError::TransformInvalid)?;
    let replaced = path::replace(target, &t.path, t.value.clone()).map_err(|e| e.host_error())?;
    let bounded = ctx.check_limits(&plan.limits);
    if plan.mode == Mode::EvaluateOnly || bounded.is_err() {
        // evaluate_only validates without applying (§8); a breach is
        // never applied.
        let target = ctx.target_mut().expect("the target was just written");
        path::replace(target, &t.path, replaced).expect("the path resolved a moment ago");
    }
    bounded.map_err(|e| Unapplied {
        reason: HostError::ContextInvalid,
        message: Some(format!("the transformed context is out of bounds: {e}")),
    })?;
    if plan.mode == Mode::Enforce {
        common.transformed = true;
        common.generation += 1;
    }
    Ok(())
}
