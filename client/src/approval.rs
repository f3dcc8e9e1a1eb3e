//! The approval seam on the host side (§9): the resolver trait and the
//! [`ApprovalAnswer`] it returns, the optional redactor, and the
//! consultation that turns whatever the resolver does — answer, fail,
//! panic, hang, lie about the identity — into a validated [`Resolved`] and
//! the approver it named.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use hookwire::approval::{ApprovalRequest, ApprovalResolution, Resolved, validate_resolution};
use hookwire::{AgentContext, ContextLimits, HostError, InterceptionPoint, Verdict};

use crate::identity::IdentityProvider;
use crate::interceptor::{BoxError, BoxFuture};

/// Longest approver name the host records.
const MAX_APPROVER_NAME: usize = 128;

/// Default time a resolver has to answer: sized for humans.
pub const DEFAULT_APPROVAL_DEADLINE: Duration = Duration::from_secs(300);

/// Decides whether a liftable deny is lifted (§9): a human queue, a ticket
/// system, an approval UI. Errors, panics and missed deadlines fail closed
/// as `host_error:approval_resolver_failed`.
pub trait ApprovalResolver: Send + Sync + 'static {
    /// Answers one request: the resolution, and who made it when the
    /// resolver knows (`Ok(resolution.into())` when it does not).
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>>;
}

/// What an [`ApprovalResolver`] answers: the §9 resolution, validated by
/// the seam, and the approver who made it, when the resolver knows one (a
/// service that authenticated its approvers names them). The name never
/// affects enforcement; the host's interception record carries it under
/// `extensions.hookwire.approval.approver` (payload-free, at most 128
/// characters).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAnswer {
    /// The resolution, exactly as the resolver made it.
    pub resolution: ApprovalResolution,
    /// Who decided; `None` (or empty) when unknown.
    pub approver: Option<String>,
}

impl ApprovalAnswer {
    /// The same answer, naming who made it.
    #[must_use]
    pub fn by(mut self, approver: impl Into<String>) -> Self {
        self.approver = Some(approver.into());
        self
    }

    /// The approver as the record carries it: bounded, `None` when empty.
    fn recorded_approver(&self) -> Option<String> {
        let name: String = self
            .approver
            .as_deref()?
            .chars()
            .take(MAX_APPROVER_NAME)
            .collect();
        (!name.is_empty()).then_some(name)
    }
}

impl From<ApprovalResolution> for ApprovalAnswer {
    /// A resolution whose approver the resolver does not know.
    fn from(resolution: ApprovalResolution) -> Self {
        Self {
            resolution,
            approver: None,
        }
    }
}

/// Produces the context placed in an approval request (§9 redaction seam):
/// a pure function that removes what the approver must not see.
pub type ApprovalRedactor = dyn Fn(&AgentContext) -> AgentContext + Send + Sync;

/// The registered resolver with its redactor and deadline.
#[derive(Clone)]
pub(crate) struct ApprovalSeam {
    pub(crate) resolver: Arc<dyn ApprovalResolver>,
    pub(crate) redactor: Option<Arc<ApprovalRedactor>>,
    /// `None`: unbounded (a declaration's `approval_resolver_ms: null`).
    pub(crate) deadline: Option<Duration>,
}

impl ApprovalSeam {
    /// Offers `verdict` to the resolver with `ctx` as presented at
    /// consultation time, and validates the answer in the §9 order. Also
    /// returns the approver the resolver named, if any.
    pub(crate) async fn consult(
        &self,
        identity: &IdentityProvider,
        limits: &ContextLimits,
        point: InterceptionPoint,
        verdict: Verdict,
        ctx: &AgentContext,
    ) -> (Resolved, Option<String>) {
        let failed = || {
            let stands = Verdict::host_error(HostError::ApprovalResolverFailed);
            (Resolved::Stands(stands), None)
        };
        // The approval service and its approvers never see a callback
        // token (module `sealed`).
        let ctx = &crate::sealed::without_callback(ctx);
        let presented = match &self.redactor {
            None => ctx.clone(),
            Some(redact) => match std::panic::catch_unwind(AssertUnwindSafe(|| redact(ctx))) {
                Ok(c) => c,
                Err(_) => return failed(),
            },
        };
        // §9: the identity binds exactly what the approver is shown.
        let Ok(context_identity) = identity.compute(&presented, limits) else {
            return failed();
        };
        let request = ApprovalRequest {
            context_identity,
            interception_point: point,
            verdict,
            context: presented,
        };
        let answer = AssertUnwindSafe(self.resolver.resolve(&request)).catch_unwind();
        let answered = match self.deadline {
            Some(deadline) => match tokio::time::timeout(deadline, answer).await {
                Ok(answered) => answered,
                Err(_) => return failed(),
            },
            None => answer.await,
        };
        match answered {
            Ok(Ok(answer)) => {
                let expected = request.context_identity.as_deref();
                let resolved = validate_resolution(expected, &answer.resolution);
                (resolved, answer.recorded_approver())
            }
            _ => failed(),
        }
    }
}
