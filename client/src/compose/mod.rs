//! The composition engine (AGENT-HOOKS-0.1 §7): pure, deterministic, no I/O.
//!
//! A [`Composer`] is a small state machine. The emission driver asks it what
//! to do next ([`Step`]): dispatch one interceptor (sequential profiles),
//! dispatch all of them on one snapshot (parallel profiles), consult the
//! approval seam, or stop with the [`Combined`] verdict. The driver performs
//! the I/O and feeds the results back. Every profile, knob and verdict mix
//! is therefore testable with plain values and no network.
//!
//! Failure slots (§6.3) are the driver's business: by the time a verdict
//! reaches the composer, a failed interceptor has already become the
//! reserved deny occupying its slot.

mod parallel;
mod sequential;
mod state;
mod unions;

use hookwire::approval::Resolved;
use hookwire::{AgentContext, HostError, ResolvedBy, Verdict, VerdictSummary};

pub use state::Plan;
use state::{Action, Common};

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Call interceptor `index` with the current (folded) context.
    Dispatch(usize),
    /// Call every interceptor with the current context as one snapshot.
    DispatchAll,
    /// Offer `verdict` (a liftable deny) to the approval seam.
    Consult {
        /// The interceptor whose deny is offered; `None` when synthesized.
        index: Option<usize>,
        /// The liftable deny.
        verdict: Verdict,
    },
    /// Composition is complete.
    Done(Combined),
}

/// The outcome of composition: the combined verdict and what the record
/// says about how it was reached (§10.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    /// The combined verdict, with the §7.3 unions of warnings and labels.
    pub verdict: Verdict,
    /// Index of the winning or consulted interceptor.
    pub decided_by: Option<usize>,
    /// One summary per returned verdict, in index order (names unset).
    pub summaries: Vec<VerdictSummary>,
    /// Whether interceptors were skipped (sequential profiles only).
    pub fold_truncated: Option<bool>,
    /// How the approval seam ended, if consulted.
    pub resolved_by: Option<ResolvedBy>,
    /// Whether the context's target was rewritten.
    pub transformed: bool,
}

/// The composition state machine for one emission.
#[derive(Debug)]
pub struct Composer {
    plan: Plan,
    inner: Inner,
    common: Common,
}

#[derive(Debug)]
enum Inner {
    Sequential(Box<sequential::Fold>),
    Parallel(parallel::Snapshot),
    Finished,
}

impl Composer {
    /// How many transforms have been applied to the context so far.
    pub fn context_generation(&self) -> u64 {
        self.common.generation
    }

    /// A composer for one emission under `plan`.
    pub fn new(mut plan: Plan) -> Self {
        plan.composition = plan.composition.resolved();
        let inner = if plan.composition.profile.is_sequential() {
            Inner::Sequential(Box::new(sequential::Fold::new(&plan)))
        } else {
            Inner::Parallel(parallel::Snapshot::default())
        };
        Self {
            plan,
            inner,
            common: Common::default(),
        }
    }

    /// The first step. With no interceptor bound, the emission is the
    /// `host_error:no_interceptor` deny (§7) in either mode.
    pub fn start(&mut self) -> Step {
        if self.plan.interceptors == 0 {
            return self.finish_deny(Verdict::host_error(HostError::NoInterceptor), None);
        }
        match &self.inner {
            Inner::Sequential(_) => Step::Dispatch(0),
            Inner::Parallel(_) => Step::DispatchAll,
            Inner::Finished => unreachable_step(),
        }
    }

    /// Feeds the verdict of interceptor `index` (sequential profiles).
    pub fn on_verdict(&mut self, index: usize, verdict: Verdict, ctx: &mut AgentContext) -> Step {
        self.common.record(index, &verdict);
        match &mut self.inner {
            Inner::Sequential(fold) => {
                let action = fold.on_verdict(&self.plan, index, verdict, ctx, &mut self.common);
                self.apply(action)
            }
            _ => unreachable_step(),
        }
    }

    /// Feeds every verdict of a parallel dispatch, in index order.
    pub fn on_verdicts(&mut self, verdicts: Vec<Verdict>, ctx: &mut AgentContext) -> Step {
        for (i, v) in verdicts.iter().enumerate() {
            self.common.record(i, v);
        }
        match &mut self.inner {
            Inner::Parallel(snapshot) => {
                let action = snapshot.on_verdicts(&self.plan, verdicts, ctx, &mut self.common);
                self.apply(action)
            }
            _ => unreachable_step(),
        }
    }

    /// Feeds the validated outcome of an approval consultation.
    pub fn on_resolution(&mut self, resolved: Resolved, ctx: &mut AgentContext) -> Step {
        let (Resolved::Lifted(v) | Resolved::Stands(v)) = &resolved;
        self.common.unions.add(v);
        self.common.resolved_by = Some(match resolved {
            Resolved::Lifted(_) => ResolvedBy::Approval,
            Resolved::Stands(_) => ResolvedBy::Rejection,
        });
        let action = match &mut self.inner {
            Inner::Sequential(fold) => {
                fold.on_resolution(&self.plan, resolved, ctx, &mut self.common)
            }
            Inner::Parallel(snapshot) => {
                snapshot.on_resolution(&self.plan, resolved, ctx, &mut self.common)
            }
            Inner::Finished => return unreachable_step(),
        };
        self.apply(action)
    }

    fn apply(&mut self, action: Action) -> Step {
        match action {
            Action::Dispatch(i) => Step::Dispatch(i),
            Action::Consult { index, verdict } => Step::Consult { index, verdict },
            Action::Finish {
                verdict,
                decided_by,
                fold_truncated,
            } => {
                self.inner = Inner::Finished;
                let Common {
                    summaries,
                    unions,
                    resolved_by,
                    transformed,
                    ..
                } = std::mem::take(&mut self.common);
                let verdict = unions.stamp(verdict);
                Step::Done(Combined {
                    verdict,
                    decided_by,
                    summaries,
                    fold_truncated,
                    resolved_by,
                    transformed,
                })
            }
        }
    }

    fn finish_deny(&mut self, verdict: Verdict, decided_by: Option<usize>) -> Step {
        let fold_truncated = self
            .plan
            .composition
            .profile
            .is_sequential()
            .then_some(false);
        self.apply(Action::Finish {
            verdict,
            decided_by,
            fold_truncated,
        })
    }
}

/// The driver fed the composer out of order: a programming error inside
/// this crate, surfaced as a fail-closed deny rather than a panic.
fn unreachable_step() -> Step {
    Step::Done(Combined {
        verdict: Verdict::host_error(HostError::InterceptorFailed)
            .with_message("composition driven out of order"),
        decided_by: None,
        summaries: Vec::new(),
        fold_truncated: None,
        resolved_by: None,
        transformed: false,
    })
}

#[cfg(test)]
mod tests;
