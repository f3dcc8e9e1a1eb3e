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
use std::time::Instant;

use hookwire::{AgentContext, Interceptor, Manifest, Verdict, async_trait, manifest};

use crate::decision_log::{Decision, DecisionObserver};
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
    observers: Vec<Arc<dyn DecisionObserver>>,
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
            observers: Vec::new(),
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

    /// Also reports every decision (made or failed) to `observer`: the
    /// decision log, the metrics.
    #[must_use]
    pub fn observe(mut self, observer: Arc<dyn DecisionObserver>) -> Self {
        self.observers.push(observer);
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
        if let Some(revision) = &status.revision {
            description.push_str(&format!(", bundle revision {revision}"));
        }
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
        let decided = if self.observers.is_empty() {
            self.policies.decide_bounded(ctx).await
        } else {
            let started = Instant::now();
            let explained = self.policies.decide_explained(ctx).await;
            let duration = started.elapsed();
            let status = self.policies.status();
            let (outcome, packages) = match &explained {
                Ok((verdict, packages)) => (Ok(verdict), packages.as_slice()),
                Err(error) => (Err(error), &[][..]),
            };
            let decision = Decision {
                ctx,
                outcome,
                packages,
                generation: status.generation,
                revision: status.revision.as_deref(),
                duration,
            };
            for observer in &self.observers {
                observer.observe(&decision);
            }
            explained.map(|(verdict, _)| verdict)
        };
        decided.inspect_err(|error| {
            tracing::error!(point = %ctx.point(), %error, "policy decision failed; the call fails closed");
            if let Some(report) = &self.on_failure {
                report(ctx, error);
            }
        })
    }
}
