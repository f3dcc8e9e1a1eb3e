//! The queue's metrics: its counters (requests submitted, how each left,
//! how long it waited) and its gauges (pending, oldest age, connected
//! hosts and approvers), read from the queue's memory at scrape time.

use super::state::ApprovalQueue;
use crate::metrics::ApprovalCounters;

impl ApprovalQueue {
    /// Counts requests and how they left the queue in `registry`, and
    /// exposes the queue's gauges (pending, oldest age, connected hosts
    /// and approvers), read at scrape time: the `hookwire_approval_*`
    /// families of docs/operating.md. Registering in a second registry
    /// shares the same counters. A shared queue counts the requests whose
    /// hosts submitted or re-attached them on this instance (so that the
    /// sum over instances counts each once); its gauges show the whole
    /// pending set.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.inner
            .metrics
            .get_or_init(ApprovalCounters::default)
            .register(registry);
        registry.register_collector(Box::new(QueueGauges(self.clone())));
    }
}

/// The queue's gauges, read at scrape time.
#[derive(Debug)]
struct QueueGauges(ApprovalQueue);

impl prometheus_client::collector::Collector for QueueGauges {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::gauge::ConstGauge;
        let (pending, oldest, hosts) = {
            let state = self.0.state();
            let oldest = state.pending.values().map(|e| e.queued.elapsed()).max();
            (state.pending.len(), oldest, state.hosts.len())
        };
        let approvers = self.0.inner.events.receiver_count().saturating_sub(
            self.0
                .inner
                .internal
                .load(std::sync::atomic::Ordering::SeqCst),
        );
        let count = |n: usize| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
        for (name, help, gauge) in [
            (
                "hookwire_approval_pending",
                "Requests waiting for a decision",
                count(pending),
            ),
            (
                "hookwire_approval_hosts_connected",
                "Hosts with an open Resolve stream (or an in-process link)",
                count(hosts),
            ),
            (
                "hookwire_approval_approvers_connected",
                "Approvers watching the queue (Watch streams and open approval pages)",
                count(approvers),
            ),
        ] {
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        let age = ConstGauge::new(oldest.map_or(0.0, |d| d.as_secs_f64()));
        let metric = encoder.encode_descriptor(
            "hookwire_approval_oldest_pending_age_seconds",
            "How long the oldest pending request has waited (0 when none waits)",
            None,
            age.metric_type(),
        )?;
        age.encode(metric)
    }
}
