//! Sequential profiles (§7.4): interceptors run in registration order and
//! each transform folds into the context before the next interceptor sees
//! it. `first_deny` stops at the first deny (consulting the seam for a
//! liftable one, then `stop` or `resume`); `run_all` runs everything and
//! aggregates by severity, consulting the seam at most once.

use hookwire::approval::Resolved;
use hookwire::{AgentContext, Decision, OnApproval, Profile, Verdict};

use super::state::{Action, Common, Plan, apply_transform};

/// Fold state of one sequential emission.
#[derive(Debug)]
pub(super) struct Fold {
    /// The last transform that folded, with its index (§7.3: in sequential
    /// profiles the last transform returned wins among permits).
    last_transform: Option<(usize, Verdict)>,
    /// `run_all`: every deny returned, in index order.
    denies: Vec<(usize, Verdict)>,
    /// The interceptor whose deny is being offered to the seam.
    consulting: Option<usize>,
    /// `first_deny`/`resume`: the last interceptor whose deny was lifted.
    lifted: Option<usize>,
}

impl Fold {
    pub(super) fn new(_plan: &Plan) -> Self {
        Self {
            last_transform: None,
            denies: Vec::new(),
            consulting: None,
            lifted: None,
        }
    }

    pub(super) fn on_verdict(
        &mut self,
        plan: &Plan,
        index: usize,
        verdict: Verdict,
        ctx: &mut AgentContext,
        common: &mut Common,
    ) -> Action {
        let remaining = index + 1 < plan.interceptors;
        match verdict.decision {
            Decision::Transform => {
                if let Err(unapplied) = apply_transform(plan, &verdict, ctx, common) {
                    // §7.4: a failed fold-transform short-circuits both profiles.
                    return finish(unapplied.deny(), None, remaining);
                }
                self.last_transform = Some((index, verdict));
            }
            Decision::Deny if plan.composition.profile == Profile::SequentialFirstDeny => {
                if verdict.is_liftable() && plan.may_consult() {
                    self.consulting = Some(index);
                    return Action::Consult {
                        index: Some(index),
                        verdict,
                    };
                }
                return finish(verdict, Some(index), remaining);
            }
            Decision::Deny => self.denies.push((index, verdict)),
            Decision::Allow => {}
        }
        self.advance(plan, index)
    }

    pub(super) fn on_resolution(
        &mut self,
        plan: &Plan,
        resolved: Resolved,
        ctx: &mut AgentContext,
        common: &mut Common,
    ) -> Action {
        let Some(index) = self.consulting.take() else {
            return finish(
                Verdict::host_error(hookwire::HostError::ApprovalResolverFailed),
                None,
                false,
            );
        };
        let run_all = plan.composition.profile == Profile::SequentialRunAll;
        let remaining = !run_all && index + 1 < plan.interceptors;
        match resolved {
            Resolved::Stands(deny) => finish(deny, Some(index), remaining),
            Resolved::Lifted(permit) => {
                if permit.decision == Decision::Transform
                    && let Err(unapplied) = apply_transform(plan, &permit, ctx, common)
                {
                    return finish(unapplied.deny(), None, remaining);
                }
                let resume = !run_all && plan.composition.on_approval == Some(OnApproval::Resume);
                if !resume {
                    return finish(permit, Some(index), remaining);
                }
                // §7.4 resume: the permit takes the deny's place and the fold
                // goes on; later liftable denies are consulted in turn.
                self.lifted = Some(index);
                if permit.decision == Decision::Transform {
                    self.last_transform = Some((index, permit));
                }
                self.advance(plan, index)
            }
        }
    }

    /// Moves to the next interceptor, or completes the fold.
    fn advance(&mut self, plan: &Plan, index: usize) -> Action {
        if index + 1 < plan.interceptors {
            return Action::Dispatch(index + 1);
        }
        if plan.composition.profile == Profile::SequentialRunAll
            && let Some(action) = self.aggregate_denies(plan)
        {
            return action;
        }
        match self.last_transform.take() {
            Some((i, t)) => finish(t, Some(i), false),
            None => finish(Verdict::allow(), self.lifted, false),
        }
    }

    /// `run_all` severity-max over the denies: a plain deny wins over a
    /// liftable one, ties go to the lowest index; the seam is consulted once,
    /// and only if every deny is liftable.
    fn aggregate_denies(&mut self, plan: &Plan) -> Option<Action> {
        let (index, winner) = self
            .denies
            .iter()
            .find(|(_, v)| !v.is_liftable())
            .or_else(|| self.denies.first())?
            .clone();
        if winner.is_liftable() && plan.may_consult() {
            self.consulting = Some(index);
            return Some(Action::Consult {
                index: Some(index),
                verdict: winner,
            });
        }
        Some(finish(winner, Some(index), false))
    }
}

fn finish(verdict: Verdict, decided_by: Option<usize>, truncated: bool) -> Action {
    Action::Finish {
        verdict,
        decided_by,
        fold_truncated: Some(truncated),
    }
}
