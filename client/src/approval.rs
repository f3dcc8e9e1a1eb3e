//! The approval seam on the host side (§9): the resolver trait, the optional
//! redactor, and the consultation that turns whatever the resolver does —
//! answer, fail, panic, hang, lie about the identity — into a validated
//! [`Resolved`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use hookwire::approval::{ApprovalRequest, ApprovalResolution, Resolved, validate_resolution};
use hookwire::{AgentContext, ContextLimits, HostError, InterceptionPoint, Verdict};

use crate::identity::IdentityProvider;
use crate::interceptor::{BoxError, BoxFuture};

tokio::task_local! {
    /// The approver a resolver named while answering the consultation
    /// running in this task (see [`report_approver`]).
    static APPROVER: std::cell::RefCell<Option<String>>;
}

/// Longest approver name the host records.
const MAX_APPROVER_NAME: usize = 128;

/// Names who made the resolution the current consultation is about to
/// receive: a resolver whose service authenticated its approvers calls it
/// before returning, and the host's interception record carries the name
/// under `extensions.hookwire.approval.approver` (payload-free). Outside a
/// consultation it does nothing.
pub(crate) fn report_approver(name: &str) {
    let name: String = name.chars().take(MAX_APPROVER_NAME).collect();
    if name.is_empty() {
        return;
    }
    let _ = APPROVER.try_with(|a| *a.borrow_mut() = Some(name));
}

/// Default time a resolver has to answer: sized for humans.
pub const DEFAULT_APPROVAL_DEADLINE: Duration = Duration::from_secs(300);

/// Decides whether a liftable deny is lifted (§9): a human queue, a ticket
/// system, an approval UI. Errors, panics and missed deadlines fail closed
/// as `host_error:approval_resolver_failed`.
pub trait ApprovalResolver: Send + Sync + 'static {
    /// Answers one request.
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalResolution, BoxError>>;
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
        APPROVER
            .scope(std::cell::RefCell::new(None), async {
                let resolved = self
                    .consult_unnamed(identity, limits, point, verdict, ctx)
                    .await;
                (resolved, APPROVER.with(|a| a.borrow_mut().take()))
            })
            .await
    }

    async fn consult_unnamed(
        &self,
        identity: &IdentityProvider,
        limits: &ContextLimits,
        point: InterceptionPoint,
        verdict: Verdict,
        ctx: &AgentContext,
    ) -> Resolved {
        let failed = || Resolved::Stands(Verdict::host_error(HostError::ApprovalResolverFailed));
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
            Ok(Ok(resolution)) => {
                validate_resolution(request.context_identity.as_deref(), &resolution)
            }
            _ => failed(),
        }
    }
}
