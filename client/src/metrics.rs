//! Host metrics (Prometheus): what an operator needs to tell policy denies
//! from outages, find the slow interceptor and watch approvals and sinks.
//!
//! [`HostMetrics`] registers its families in a
//! [`prometheus_client`] registry the caller owns, so a process with many
//! hosts gives each host its own registry (or shares one handle across
//! hosts to sum them). At build time the host resolves every series it
//! will touch on the hot path into plain handles (atomics), so an emission
//! costs a few atomic increments and histogram observations, never a label
//! allocation. Only denies are looked up per emission, and only when one
//! happens.
//!
//! Names follow `hookwire_host_*`, base units, `_total` counters (the
//! encoder adds the suffix) and `_seconds` histograms; docs/operating.md
//! lists every series. The decision series carry the emission's `mode`,
//! so a deny in `evaluate_only` (which blocked nothing) never reads as
//! enforcement (§8).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::approval::Resolved;
use hookwire::{Decision, HostError, InterceptionPoint, Mode, Verdict};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::call_failure::CallFailure;

/// One label: a static name and a value that is static except for
/// operator-chosen names (bindings, opted-in policy reasons).
type Label = (&'static str, Cow<'static, str>);

/// The label value of every policy deny unless the operator opts in to
/// verbatim reasons ([`HostMetrics::verbatim_policy_reasons`]).
pub const POLICY_REASON_LABEL: &str = "policy";

/// The host's metric families, registered in a registry of the caller's.
/// Cheap to clone: clones (and every host built with one) share the
/// series.
#[derive(Clone, Debug)]
pub struct HostMetrics {
    families: Arc<Families>,
    verbatim_policy_reasons: bool,
}

#[derive(Debug)]
struct Families {
    emissions: Family<[Label; 3], Counter>,
    emission_duration: Family<[Label; 1], Histogram, fn() -> Histogram>,
    denies: Family<[Label; 3], Counter>,
    calls: Family<[Label; 2], Counter>,
    call_duration: Family<[Label; 1], Histogram, fn() -> Histogram>,
    approvals: Family<[Label; 1], Counter>,
    approval_wait: Histogram,
    sink_deliveries: Counter,
    sink_drops: Counter,
    in_flight: Gauge,
    sessions_open: Gauge,
    replica_ejections: Family<[Label; 2], Counter>,
    replica_readmissions: Family<[Label; 1], Counter>,
    replica_retries: Family<[Label; 1], Counter>,
    replica_unavailable: Family<[Label; 1], Counter>,
    open_calls_forgotten: Family<[Label; 1], Counter>,
}

/// Emissions and interceptor calls, in the shared request-latency buckets.
fn latency_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

impl HostMetrics {
    /// Registers the host families in `registry` (under the names of
    /// docs/operating.md; pass a sub-registry to add a prefix or labels).
    /// Policy deny reasons are folded into one label value.
    pub fn register(registry: &mut Registry) -> Self {
        let f = Families {
            emissions: Family::default(),
            emission_duration: Family::new_with_constructor(latency_histogram),
            denies: Family::default(),
            calls: Family::default(),
            call_duration: Family::new_with_constructor(latency_histogram),
            approvals: Family::default(),
            approval_wait: Histogram::new(hookwire::buckets::approval_wait_buckets()),
            sink_deliveries: Counter::default(),
            sink_drops: Counter::default(),
            in_flight: Gauge::default(),
            sessions_open: Gauge::default(),
            replica_ejections: Family::default(),
            replica_readmissions: Family::default(),
            replica_retries: Family::default(),
            replica_unavailable: Family::default(),
            open_calls_forgotten: Family::default(),
        };
        registry.register(
            "hookwire_host_emissions",
            "Emissions completed, by interception point, mode (enforce, evaluate_only) and combined decision",
            f.emissions.clone(),
        );
        registry.register(
            "hookwire_host_emission_duration_seconds",
            "Time from context built to record delivered, by interception point",
            f.emission_duration.clone(),
        );
        registry.register(
            "hookwire_host_denies",
            "Denied emissions by point, mode (an evaluate_only deny blocked nothing) and reason: each reserved host_error reason verbatim, policy reasons folded to \"policy\" unless opted in",
            f.denies.clone(),
        );
        registry.register(
            "hookwire_host_interceptor_calls",
            "Calls to one binding, by interceptor name and outcome (ok, failed, timeout, invalid_verdict)",
            f.calls.clone(),
        );
        registry.register(
            "hookwire_host_interceptor_call_duration_seconds",
            "Latency of calls to one binding, whatever their outcome",
            f.call_duration.clone(),
        );
        registry.register(
            "hookwire_host_approvals",
            "Approval consultations by outcome (approved, rejected, expired, resolver_failed)",
            f.approvals.clone(),
        );
        registry.register(
            "hookwire_host_approval_wait_seconds",
            "Time an emission waited for the approval resolver",
            f.approval_wait.clone(),
        );
        registry.register(
            "hookwire_host_record_sink_deliveries",
            "Records handed to a sink that returned",
            f.sink_deliveries.clone(),
        );
        registry.register(
            "hookwire_host_record_sink_drops",
            "Records lost because a sink panicked",
            f.sink_drops.clone(),
        );
        registry.register(
            "hookwire_host_emissions_in_flight",
            "Emissions started and not yet finished",
            f.in_flight.clone(),
        );
        registry.register(
            "hookwire_host_sessions_open",
            "Sessions opened and not yet dropped",
            f.sessions_open.clone(),
        );
        registry.register(
            "hookwire_host_replica_ejections",
            "Replicas of a binding taken out of balancing, by interceptor name and cause (refused, failures, health, unreachable)",
            f.replica_ejections.clone(),
        );
        registry.register(
            "hookwire_host_replica_readmissions",
            "Ejected replicas of a binding put back after answering a probe or reporting SERVING",
            f.replica_readmissions.clone(),
        );
        registry.register(
            "hookwire_host_replica_retries",
            "Calls sent to another replica because the first attempt provably never reached a handler",
            f.replica_retries.clone(),
        );
        registry.register(
            "hookwire_host_replica_unavailable",
            "Calls failed at once because no replica of the binding was admitted",
            f.replica_unavailable.clone(),
        );
        registry.register(
            "hookwire_host_open_calls_forgotten",
            "Open pre_tool_call or pre_model_call pairs a session forgot past its bound of open calls (their post is then refused out of order), by point",
            f.open_calls_forgotten.clone(),
        );
        Self {
            families: Arc::new(f),
            verbatim_policy_reasons: false,
        }
    }

    /// Labels policy denies with their own reason instead of `policy`.
    /// Interceptors choose reasons freely, so this can grow the series
    /// without bound: opt in only for a chain whose reasons you know.
    #[must_use]
    pub fn verbatim_policy_reasons(mut self) -> Self {
        self.verbatim_policy_reasons = true;
        self
    }

    /// The handles one host uses, resolved once.
    pub(crate) fn instruments(&self) -> HostInstruments {
        let f = &self.families;
        let emissions = InterceptionPoint::ALL.map(|p| {
            MODES.map(|m| {
                [Decision::Allow, Decision::Deny, Decision::Transform].map(|d| {
                    f.emissions
                        .get_or_create(&[
                            ("point", Cow::Borrowed(p.as_str())),
                            ("mode", Cow::Borrowed(m.as_str())),
                            ("decision", Cow::Borrowed(d.as_str())),
                        ])
                        .clone()
                })
            })
        });
        let durations = InterceptionPoint::ALL.map(|p| {
            f.emission_duration
                .get_or_create(&[("point", Cow::Borrowed(p.as_str()))])
                .clone()
        });
        let approvals = ApprovalOutcome::ALL.map(|o| {
            f.approvals
                .get_or_create(&[("outcome", Cow::Borrowed(o.as_str()))])
                .clone()
        });
        HostInstruments {
            metrics: self.clone(),
            emissions,
            durations,
            approvals,
        }
    }
}

/// A host's pre-resolved handles.
#[derive(Debug)]
pub(crate) struct HostInstruments {
    metrics: HostMetrics,
    /// By point (position in [`InterceptionPoint::ALL`]), then mode (in
    /// [`MODES`]), then decision.
    emissions: [[[Counter; 3]; 2]; 8],
    durations: [Histogram; 8],
    approvals: [Counter; 4],
}

impl HostInstruments {
    /// Counts an emission in flight until the returned guard finishes.
    pub(crate) fn emission_started(&self) -> InFlight<'_> {
        self.metrics.families.in_flight.inc();
        InFlight {
            host: self,
            started: Instant::now(),
        }
    }

    /// Counts a session open until the guard drops.
    pub(crate) fn session_opened(&self) -> OpenSession {
        let gauge = self.metrics.families.sessions_open.clone();
        gauge.inc();
        OpenSession(gauge)
    }

    /// Counts one open call a session forgot past its bound.
    pub(crate) fn open_call_forgotten(&self, point: InterceptionPoint) {
        self.metrics
            .families
            .open_calls_forgotten
            .get_or_create(&[("point", Cow::Borrowed(point.as_str()))])
            .inc();
    }

    /// Counts one sink call: delivered, or dropped by a panic.
    pub(crate) fn sink_called(&self, delivered: bool) {
        let f = &self.metrics.families;
        if delivered {
            f.sink_deliveries.inc();
        } else {
            f.sink_drops.inc();
        }
    }

    /// Counts one approval consultation and its wait.
    pub(crate) fn approval_resolved(&self, resolved: &Resolved, waited: Duration) {
        let outcome = match resolved {
            Resolved::Lifted(_) => ApprovalOutcome::Approved,
            Resolved::Stands(v) => match v.host_error_reason() {
                None => ApprovalOutcome::Rejected,
                Some(HostError::ApprovalUnresolved) => ApprovalOutcome::Expired,
                Some(_) => ApprovalOutcome::ResolverFailed,
            },
        };
        self.approvals[outcome as usize].inc();
        self.metrics
            .families
            .approval_wait
            .observe(waited.as_secs_f64());
    }

    /// The handles of the binding `name`.
    pub(crate) fn binding(&self, name: &str) -> BindingInstruments {
        let f = &self.metrics.families;
        let outcomes = CallOutcome::ALL.map(|o| {
            f.calls
                .get_or_create(&[
                    ("interceptor", Cow::Owned(name.to_owned())),
                    ("outcome", Cow::Borrowed(o.as_str())),
                ])
                .clone()
        });
        let duration = f
            .call_duration
            .get_or_create(&[("interceptor", Cow::Owned(name.to_owned()))])
            .clone();
        let interceptor = || [("interceptor", Cow::Owned(name.to_owned()))];
        let replicas = ReplicaInstruments {
            ejections: Ejection::ALL.map(|cause| {
                f.replica_ejections
                    .get_or_create(&[
                        ("interceptor", Cow::Owned(name.to_owned())),
                        ("cause", Cow::Borrowed(cause.as_str())),
                    ])
                    .clone()
            }),
            readmissions: f.replica_readmissions.get_or_create(&interceptor()).clone(),
            retries: f.replica_retries.get_or_create(&interceptor()).clone(),
            unavailable: f.replica_unavailable.get_or_create(&interceptor()).clone(),
        };
        BindingInstruments {
            outcomes,
            duration,
            replicas,
        }
    }

    fn finished(&self, point: InterceptionPoint, mode: Mode, verdict: &Verdict, took: Duration) {
        let p = point_index(point);
        self.durations[p].observe(took.as_secs_f64());
        let d = match verdict.decision {
            Decision::Allow => 0,
            Decision::Deny => 1,
            Decision::Transform => 2,
        };
        let m = usize::from(mode == Mode::EvaluateOnly);
        self.emissions[p][m][d].inc();
        if verdict.decision != Decision::Deny {
            return;
        }
        let reason = match verdict.host_error_reason() {
            Some(e) => Cow::Borrowed(e.as_str()),
            None if self.metrics.verbatim_policy_reasons => {
                Cow::Owned(verdict.reason.clone().unwrap_or_default())
            }
            None => Cow::Borrowed(POLICY_REASON_LABEL),
        };
        self.metrics
            .families
            .denies
            .get_or_create(&[
                ("point", Cow::Borrowed(point.as_str())),
                ("mode", Cow::Borrowed(mode.as_str())),
                ("reason", reason),
            ])
            .inc();
    }
}

/// An emission in flight; [`InFlight::finished`] counts its outcome, and
/// dropping it (finished or cancelled) leaves the in-flight gauge.
pub(crate) struct InFlight<'a> {
    host: &'a HostInstruments,
    started: Instant,
}

impl InFlight<'_> {
    /// Counts the emission at `point`, run under `mode`, that ended with
    /// `verdict`.
    pub(crate) fn finished(self, point: InterceptionPoint, mode: Mode, verdict: &Verdict) {
        self.host
            .finished(point, mode, verdict, self.started.elapsed());
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.host.metrics.families.in_flight.dec();
    }
}

/// A session counted open until dropped.
#[derive(Debug)]
pub(crate) struct OpenSession(Gauge);

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// One binding's pre-resolved handles.
#[derive(Debug)]
pub(crate) struct BindingInstruments {
    outcomes: [Counter; 4],
    duration: Histogram,
    replicas: ReplicaInstruments,
}

impl BindingInstruments {
    /// Counts one call that took `took` and ended as `outcome`.
    pub(crate) fn called<T>(&self, outcome: &Result<T, CallFailure>, took: Duration) {
        let o = match outcome {
            Ok(_) => CallOutcome::Ok,
            Err(CallFailure::Failed(_)) => CallOutcome::Failed,
            Err(CallFailure::TimedOut) => CallOutcome::Timeout,
            Err(CallFailure::Invalid(_)) => CallOutcome::InvalidVerdict,
        };
        self.outcomes[o as usize].inc();
        self.duration.observe(took.as_secs_f64());
    }

    /// The handles of the binding's replica fleet.
    pub(crate) fn replicas(&self) -> &ReplicaInstruments {
        &self.replicas
    }
}

/// One remote binding's pre-resolved replica handles: ejections by cause,
/// re-admissions, retries on another replica, and calls failed at once.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaInstruments {
    ejections: [Counter; 4],
    readmissions: Counter,
    retries: Counter,
    unavailable: Counter,
}

impl ReplicaInstruments {
    /// Counts a replica taken out of balancing.
    pub(crate) fn ejected(&self, cause: Ejection) {
        self.ejections[cause as usize].inc();
    }

    /// Counts an ejected replica put back.
    pub(crate) fn readmitted(&self) {
        self.readmissions.inc();
    }

    /// Counts a call sent on to another replica.
    pub(crate) fn retried(&self) {
        self.retries.inc();
    }

    /// Counts a call failed at once for want of an admitted replica.
    pub(crate) fn unavailable(&self) {
        self.unavailable.inc();
    }
}

/// Why a replica was ejected: the `cause` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ejection {
    /// A connection was refused (or HTTP/2 refused the stream).
    Refused,
    /// Consecutive transport failures of calls.
    Failures,
    /// Its health service reported something other than `SERVING`.
    Health,
    /// A health watch or probe got no answer.
    Unreachable,
}

impl Ejection {
    const ALL: [Self; 4] = [
        Self::Refused,
        Self::Failures,
        Self::Health,
        Self::Unreachable,
    ];

    /// The label value.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Failures => "failures",
            Self::Health => "health",
            Self::Unreachable => "unreachable",
        }
    }
}

#[derive(Clone, Copy)]
enum CallOutcome {
    Ok,
    Failed,
    Timeout,
    InvalidVerdict,
}

impl CallOutcome {
    const ALL: [Self; 4] = [Self::Ok, Self::Failed, Self::Timeout, Self::InvalidVerdict];

    const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::InvalidVerdict => "invalid_verdict",
        }
    }
}

#[derive(Clone, Copy)]
enum ApprovalOutcome {
    Approved,
    Rejected,
    Expired,
    ResolverFailed,
}

impl ApprovalOutcome {
    const ALL: [Self; 4] = [
        Self::Approved,
        Self::Rejected,
        Self::Expired,
        Self::ResolverFailed,
    ];

    const fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
            Self::ResolverFailed => "resolver_failed",
        }
    }
}

/// The modes the decision series are labelled with, in index order.
const MODES: [Mode; 2] = [Mode::Enforce, Mode::EvaluateOnly];

fn point_index(point: InterceptionPoint) -> usize {
    InterceptionPoint::ALL
        .iter()
        .position(|p| *p == point)
        .unwrap_or_default()
}
