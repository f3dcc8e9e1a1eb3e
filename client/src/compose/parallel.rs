//! Parallel profiles (§7.5): every interceptor sees its own copy of one
//! untransformed snapshot; nothing folds. `strictest` takes the
//! severity-max verdict (two transforms are a conflict); `unanimous` accepts
//! only a unanimous allow. Synthesized denies may be offered to the seam per
//! `on_transform_conflict` / `on_disagreement`.

use hookwire::approval::Resolved;
use hookwire::{AgentContext, Decision, HostError, Profile, Synthesis, Verdict};

use super::state::{Action, Common, Plan, apply_transform};

/// State of one parallel emission between dispatch and resolution.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    /// The consulted interceptor (`None` for a synthesized deny).
    consulted: Option<usize>,
}

impl Snapshot {
    pub(super) fn on_verdicts(
        &mut self,
        plan: &Plan,
        verdicts: Vec<Verdict>,
        ctx: &mut AgentContext,
        common: &mut Common,
    ) -> Action {
        match plan.composition.profile {
            Profile::ParallelUnanimous => {
                if verdicts.iter().all(|v| v.decision == Decision::Allow) {
                    return finish(Verdict::allow(), None);
                }
                self.synthesize(
                    plan,
                    HostError::CompositionDisagreement,
                    plan.composition.on_disagreement,
                )
            }
            _ => self.strictest(plan, verdicts, ctx, common),
        }
    }

    fn strictest(
        &mut self,
        plan: &Plan,
        verdicts: Vec<Verdict>,
        ctx: &mut AgentContext,
        common: &mut Common,
    ) -> Action {
        let winner = verdicts
            .iter()
            .enumerate()
            .max_by(|(ia, a), (ib, b)| a.severity().cmp(&b.severity()).then(ib.cmp(ia)));
        let Some((index, winner)) = winner else {
            return finish(Verdict::allow(), None);
        };
        match winner.decision {
            Decision::Allow => finish(Verdict::allow(), None),
            Decision::Deny => {
                if winner.is_liftable() && plan.may_consult() {
                    self.consulted = Some(index);
                    return Action::Consult {
                        index: Some(index),
                        verdict: winner.clone(),
                    };
                }
                finish(winner.clone(), Some(index))
            }
            Decision::Transform => {
                let transforms = verdicts
                    .iter()
                    .filter(|v| v.decision == Decision::Transform)
                    .count();
                if transforms > 1 {
                    return self.synthesize(
                        plan,
                        HostError::TransformConflict,
                        plan.composition.on_transform_conflict,
                    );
                }
                match apply_transform(plan, winner, ctx, common) {
                    Ok(()) => finish(winner.clone(), Some(index)),
                    Err(unapplied) => finish(unapplied.deny(), None),
                }
            }
        }
    }

    /// A profile-synthesized deny (§7.5): plain, or liftable and offered to
    /// the seam when the knob says `approval`.
    fn synthesize(&mut self, plan: &Plan, reason: HostError, knob: Option<Synthesis>) -> Action {
        let mut deny = Verdict::host_error(reason);
        if knob == Some(Synthesis::Approval) {
            deny.approval = Some(Default::default());
            if plan.may_consult() {
                self.consulted = None;
                return Action::Consult {
                    index: None,
                    verdict: deny,
                };
            }
        }
        finish(deny, None)
    }

    pub(super) fn on_resolution(
        &mut self,
        plan: &Plan,
        resolved: Resolved,
        ctx: &mut AgentContext,
        common: &mut Common,
    ) -> Action {
        let index = self.consulted;
        match resolved {
            Resolved::Stands(deny) => finish(deny, index),
            Resolved::Lifted(permit) => {
                if permit.decision == Decision::Transform
                    && let Err(unapplied) = apply_transform(plan, &permit, ctx, common)
                {
                    return finish(unapplied.deny(), None);
                }
                finish(permit, index)
            }
        }
    }
}

fn finish(verdict: Verdict, decided_by: Option<usize>) -> Action {
    Action::Finish {
        verdict,
        decided_by,
        fold_truncated: None,
    }
}
