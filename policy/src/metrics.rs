//! The policy service's own Prometheus series (`hookwire_policy_*`),
//! beside the SDK server's `hookwire_interceptor_*`: decisions by package
//! and outcome, evaluation time by point, the serving generation, reload
//! failures, the bundle's activations and revision, and the decision log's
//! drops. [`PolicyMetrics`] observes decisions itself; reload and bundle
//! state is copied in with [`PolicyMetrics::record_reload`] and
//! [`PolicyMetrics::record_bundle`] after each event.

use std::borrow::Cow;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::decision_log::{Decision, DecisionObserver};
use crate::reload::ReloadStatus;
use crate::status::BundleStatus;

type Label = (&'static str, Cow<'static, str>);

/// The `hookwire_policy_*` families of one service.
#[derive(Clone, Debug)]
pub struct PolicyMetrics {
    inner: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    decisions: Family<[Label; 2], Counter>,
    evaluation: Family<[Label; 1], Histogram, fn() -> Histogram>,
    generation: Gauge,
    reload_failures: Gauge,
    last_reload_failed: Gauge,
    bundle_activations: Gauge,
    bundle_failures: Gauge,
    bundle_last_activation: Gauge,
    bundle_last_failure: Gauge,
    bundle_revision: Family<[Label; 1], Gauge>,
    log_dropped: Counter,
}

/// Evaluations, in the shared request-latency buckets.
fn evaluation_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

impl PolicyMetrics {
    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let f = Families {
            decisions: Family::default(),
            evaluation: Family::new_with_constructor(evaluation_histogram),
            generation: Gauge::default(),
            reload_failures: Gauge::default(),
            last_reload_failed: Gauge::default(),
            bundle_activations: Gauge::default(),
            bundle_failures: Gauge::default(),
            bundle_last_activation: Gauge::default(),
            bundle_last_failure: Gauge::default(),
            bundle_revision: Family::default(),
            log_dropped: Counter::default(),
        };
        registry.register(
            "hookwire_policy_decisions",
            "Decisions by package and outcome (deny, escalate, transform, allow; package * outcome error when the evaluation failed)",
            f.decisions.clone(),
        );
        registry.register(
            "hookwire_policy_evaluation_duration_seconds",
            "Time of one decision's evaluation, by interception point",
            f.evaluation.clone(),
        );
        registry.register(
            "hookwire_policy_generation",
            "Generation of the serving policy set (1 at start, +1 per accepted reload or bundle)",
            f.generation.clone(),
        );
        registry.register(
            "hookwire_policy_reload_failures",
            "Reloads (or bundles) refused since start; the previous set kept serving",
            f.reload_failures.clone(),
        );
        registry.register(
            "hookwire_policy_last_reload_failed",
            "1 while the most recent reload was refused, else 0",
            f.last_reload_failed.clone(),
        );
        registry.register(
            "hookwire_policy_bundle_activations",
            "Bundles activated since start",
            f.bundle_activations.clone(),
        );
        registry.register(
            "hookwire_policy_bundle_failures",
            "Bundle downloads or activations that failed since start",
            f.bundle_failures.clone(),
        );
        registry.register(
            "hookwire_policy_bundle_last_activation_timestamp_seconds",
            "Unix time of the last bundle activation (0: none)",
            f.bundle_last_activation.clone(),
        );
        registry.register(
            "hookwire_policy_bundle_last_failure_timestamp_seconds",
            "Unix time of the last failed bundle download or activation (0: none)",
            f.bundle_last_failure.clone(),
        );
        registry.register(
            "hookwire_policy_bundle_revision",
            "1 for the revision of the active bundle",
            f.bundle_revision.clone(),
        );
        registry.register(
            "hookwire_policy_decision_log_dropped",
            "Decision log entries dropped because the log's buffer was full",
            f.log_dropped.clone(),
        );
        Self { inner: Arc::new(f) }
    }

    /// The counter a [`DecisionLog`](crate::decision_log::DecisionLog)
    /// counts its drops in.
    pub fn decision_log_dropped(&self) -> Counter {
        self.inner.log_dropped.clone()
    }

    /// Copies the reload state (after a reload event, and at start).
    pub fn record_reload(&self, status: &ReloadStatus) {
        let f = &self.inner;
        f.generation.set(clamp(status.generation));
        f.reload_failures.set(clamp(status.rejected));
        f.last_reload_failed
            .set(i64::from(status.last_error.is_some()));
    }

    /// Copies a bundle's state (after each poll, and at start).
    pub fn record_bundle(&self, status: &BundleStatus) {
        let f = &self.inner;
        f.bundle_activations.set(clamp(status.activations));
        f.bundle_failures.set(clamp(status.failures));
        let unix =
            |t: Option<time::OffsetDateTime>| t.map_or(0, time::OffsetDateTime::unix_timestamp);
        f.bundle_last_activation
            .set(unix(status.last_successful_activation));
        f.bundle_last_failure
            .set(unix(status.last_failed_activation));
        if let Some(revision) = &status.active_revision {
            let current = [("revision", Cow::Owned(revision.clone()))];
            if f.bundle_revision.get(&current).is_none() {
                f.bundle_revision.clear();
            }
            f.bundle_revision.get_or_create(&current).set(1);
        }
    }
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A package's outcome from the rules it defined.
fn outcome(rules: &[String]) -> &'static str {
    let has = |rule: &str| rules.iter().any(|r| r == rule);
    if has("deny") {
        "deny"
    } else if has("escalate") {
        "escalate"
    } else if has("transform") {
        "transform"
    } else {
        "allow"
    }
}

impl DecisionObserver for PolicyMetrics {
    fn observe(&self, decision: &Decision<'_>) {
        let f = &self.inner;
        f.evaluation
            .get_or_create(&[("point", Cow::Borrowed(decision.ctx.point().as_str()))])
            .observe(decision.duration.as_secs_f64());
        if decision.outcome.is_err() {
            f.decisions
                .get_or_create(&[
                    ("package", Cow::Borrowed("*")),
                    ("outcome", Cow::Borrowed("error")),
                ])
                .inc();
            return;
        }
        for package in decision.packages {
            f.decisions
                .get_or_create(&[
                    ("package", Cow::Owned(package.package.clone())),
                    ("outcome", Cow::Borrowed(outcome(&package.rules))),
                ])
                .inc();
        }
    }
}
