//! The policies as an [`Interceptor`]: `manifest` (the points the loaded
//! packages decide at) and `intercept` (every point routes to the serving
//! set). Served with `hookwire-server`, or bound in-process with
//! `hookwire-client`.
//!
//! A policy error must reach the host as a failure so that it fails closed
//! (`host_error:interceptor_failed`), never as an allow. The hooks return
//! `Result<Verdict, Error>`: an `Err` is logged here (and given to the
//! [`FailureReporter`]), and becomes an `INTERNAL` status over gRPC, whose
//! message does not carry the error, or the same record in-process.

use std::sync::Arc;

use hookwire::{AgentContext, Interceptor, Manifest, Verdict, async_trait, manifest};

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
impl Interceptor for PolicyService {
    type Response = Result<Verdict, Error>;

    fn manifest(&self) -> Manifest {
        let set = self.policies.current();
        let status = self.policies.status();
        let mut description = format!(
            "Rego and Cedar policies from {} ({} decision packages, generation {})",
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

    async fn intercept(&self, ctx: &AgentContext) -> Result<Verdict, Error> {
        self.policies.decide(ctx).inspect_err(|error| {
            tracing::error!(point = %ctx.point(), %error, "policy decision failed; the call fails closed");
            if let Some(report) = &self.on_failure {
                report(ctx, error);
            }
        })
    }
}
