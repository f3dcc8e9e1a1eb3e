//! The state of one binding's replicas that the call path, the monitors
//! and DNS re-resolution share: the current set, what the balancer knows
//! about each replica, and the two moves every part makes on it, ejecting
//! a replica and admitting it back.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use tokio::sync::{Notify, watch};
use tonic::metadata::MetadataMap;

use super::balance::Load;
use super::endpoint::EndpointClient;
use super::target::ServiceTarget;
use super::tls::TlsConfig;
use crate::metrics::{Ejection, ReplicaInstruments};

/// One binding's replicas and what every part of the pool shares about
/// them.
#[derive(Debug)]
pub(super) struct Fleet {
    pub(super) name: String,
    /// The endpoints as configured, for spans and reports.
    pub(super) configured: String,
    pub(super) target: ServiceTarget,
    pub(super) metadata: Arc<MetadataMap>,
    pub(super) tls: Option<TlsConfig>,
    /// The current replicas; replaced as a whole when DNS changes the set.
    pub(super) replicas: ArcSwap<Vec<Arc<Replica>>>,
    /// Set once the monitors run (the first use inside a runtime).
    pub(super) started: OnceLock<()>,
    /// The first DNS resolution, awaited by the first call.
    pub(super) resolved: tokio::sync::OnceCell<()>,
    /// Dropped with the fleet: every monitor task ends.
    pub(super) stop: watch::Sender<()>,
    /// Ejection and retry counters, when the host has metrics.
    pub(super) metrics: OnceLock<ReplicaInstruments>,
}

/// One replica and what the balancer knows about it.
#[derive(Debug)]
pub(super) struct Replica {
    pub(super) client: EndpointClient,
    pub(super) load: Load,
    pub(super) admitted: AtomicBool,
    /// Consecutive transport failures of calls.
    pub(super) failures: AtomicU32,
    /// Wakes the monitor for a probe.
    pub(super) probe: Notify,
    /// No longer in the set (DNS dropped its address): its monitor ends.
    pub(super) retired: AtomicBool,
}

impl Replica {
    /// A replica admitted from the start: until something proves it
    /// unusable, it is tried.
    pub(super) fn new(client: EndpointClient) -> Self {
        Self {
            client,
            load: Load::default(),
            admitted: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            probe: Notify::new(),
            retired: AtomicBool::new(false),
        }
    }

    /// Whether the balancer may pick it now.
    pub(super) fn is_admitted(&self) -> bool {
        self.admitted.load(Ordering::Relaxed)
    }

    /// Whether DNS dropped its address (its monitor ends).
    pub(super) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }
}

impl Fleet {
    /// Takes `replica` out of the balancer and wakes its monitor.
    pub(super) fn eject(&self, replica: &Replica, why: Ejection) {
        if replica.admitted.swap(false, Ordering::Relaxed) {
            tracing::info!(interceptor = %self.name, endpoint = replica.client.endpoint(), cause = why.as_str(), "replica ejected");
            if let Some(m) = self.metrics.get() {
                m.ejected(why);
            }
        }
        replica.probe.notify_one();
    }

    /// Puts `replica` back in the balancer.
    pub(super) fn admit(&self, replica: &Replica) {
        replica.failures.store(0, Ordering::Relaxed);
        if !replica.admitted.swap(true, Ordering::Relaxed) {
            tracing::info!(interceptor = %self.name, endpoint = replica.client.endpoint(), "replica re-admitted");
            if let Some(m) = self.metrics.get() {
                m.readmitted();
            }
        }
    }
}
