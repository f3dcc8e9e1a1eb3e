//! The approval service's counters: requests submitted and how each left
//! the queue, registered in a [`prometheus_client`] registry the caller
//! owns ([`ApprovalServer::metrics`](crate::ApprovalServer::metrics)).
//! Names: `hookwire_approval_*` (docs/operating.md); the registry is
//! served like an interceptor service's, with
//! `hookwire_server::metrics::serve_metrics`.

use std::borrow::Cow;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The approval service's counters: requests submitted and how each left
/// the queue. The gauges (pending, oldest age, hosts, approvers) are read
/// from the queue at scrape time.
#[derive(Clone, Debug)]
pub(crate) struct ApprovalCounters {
    pub(crate) submitted: Counter,
    decisions: Family<[(&'static str, Cow<'static, str>); 1], Counter>,
    pub(crate) wait: Histogram,
}

impl Default for ApprovalCounters {
    fn default() -> Self {
        let c = Self {
            submitted: Counter::default(),
            decisions: Family::default(),
            wait: Histogram::new(hookwire::buckets::approval_wait_buckets()),
        };
        for outcome in APPROVAL_OUTCOMES {
            let _ = c
                .decisions
                .get_or_create(&[("outcome", Cow::Borrowed(outcome))]);
        }
        c
    }
}

impl ApprovalCounters {
    /// Registers these counters (shared, not copied) in `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        let c = self;
        registry.register(
            "hookwire_approval_requests",
            "Approval requests submitted by hosts",
            c.submitted.clone(),
        );
        registry.register(
            "hookwire_approval_decisions",
            "Requests that left the queue, by outcome (approved, rejected, unresolved, expired, cancelled, host_gone, failed)",
            c.decisions.clone(),
        );
        registry.register(
            "hookwire_approval_decision_wait_seconds",
            "Time a request spent in the queue before it left, whatever the outcome",
            c.wait.clone(),
        );
    }

    /// Counts a request that left the queue as `outcome`.
    pub(crate) fn left(&self, outcome: &'static str, waited: std::time::Duration) {
        self.decisions
            .get_or_create(&[("outcome", Cow::Borrowed(outcome))])
            .inc();
        self.wait.observe(waited.as_secs_f64());
    }
}

/// Every `outcome` label value of `hookwire_approval_decisions_total`.
const APPROVAL_OUTCOMES: [&str; 7] = [
    "approved",
    "rejected",
    "unresolved",
    "expired",
    "cancelled",
    "host_gone",
    "failed",
];
