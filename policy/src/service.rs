//! The policies as an interceptor service: the only file of this crate
//! that knows the server SDK. It implements `manifest` (the points the
//! loaded packages decide at) and `intercept` (every point routes to the
//! serving set); everything else is the SDK's.
//!
//! A policy error must reach the host as an error status so that it fails
//! closed (`host_error:interceptor_failed`), never as an allow. The SDK's
//! hooks return a response, not a `Result`; the one way they fail the call
//! is unwinding, which the SDK's adapter catches and answers `INTERNAL`
//! (the status names no policy detail). So a failed decision is logged
//! here and the hook unwinds with `resume_unwind`, which skips the panic
//! hook: nothing is printed twice and the server keeps running.

use std::sync::Arc;

use hookwire_server::prelude::*;

use crate::error::Error;
use crate::reload::Policies;

/// The name the service gives in `Describe`.
pub const SERVICE_NAME: &str = "hookwire-policy";

/// Called with every decision that failed (besides the `tracing` error),
/// e.g. to print it: the host only sees an error status.
pub type FailureReporter = Arc<dyn Fn(&AgentContext, &Error) + Send + Sync>;

/// An interceptor service deciding with the Rego policies of a directory.
#[derive(Clone)]
pub struct PolicyService {
    policies: Arc<Policies>,
    on_failure: Option<FailureReporter>,
}

impl std::fmt::Debug for PolicyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyService")
            .field("policies", &self.policies)
            .finish_non_exhaustive()
    }
}

impl PolicyService {
    /// Serves `policies` (share the `Arc` with a watcher to hot-reload).
    pub fn new(policies: Arc<Policies>) -> Self {
        Self {
            policies,
            on_failure: None,
        }
    }

    /// Also reports every failed decision to `report`.
    pub fn on_failure(
        mut self,
        report: impl Fn(&AgentContext, &Error) + Send + Sync + 'static,
    ) -> Self {
        self.on_failure = Some(Arc::new(report));
        self
    }

    /// The policies served.
    pub fn policies(&self) -> &Arc<Policies> {
        &self.policies
    }
}

#[async_trait]
impl InterceptorService for PolicyService {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let set = self.policies.current();
        let status = self.policies.status();
        let mut description = format!(
            "OPA Rego policies from {} ({} decision packages, generation {})",
            set.dir().display(),
            set.packages().len(),
            status.generation
        );
        if let Some(error) = &status.last_error {
            description.push_str(&format!("; last reload rejected: {error}"));
        }
        Manifest {
            points: set.points(),
            description,
            ..manifest(SERVICE_NAME, env!("CARGO_PKG_VERSION"))
        }
    }

    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        match self.policies.decide(ctx) {
            Ok(verdict) => verdict,
            Err(error) => {
                if let Some(report) = &self.on_failure {
                    report(ctx, &error);
                }
                fail_call(ctx, &error)
            }
        }
    }
}

/// Fails the call (an `INTERNAL` status at the gRPC edge); see the module
/// documentation.
fn fail_call(ctx: &AgentContext, error: &Error) -> ! {
    tracing::error!(point = %ctx.point(), %error, "policy decision failed; answering an error status");
    std::panic::resume_unwind(Box::new(error.to_string()))
}
