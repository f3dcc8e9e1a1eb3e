//! One binding's replicas: which are admitted, the call with its one
//! permitted retry rule, and the background monitors that eject and
//! re-admit them.
//!
//! A replica is admitted until something proves it unusable:
//!
//! - a refused connection (or an HTTP/2 refusal of the stream) ejects it
//!   at once, and the call moves to another replica within its deadline;
//! - [`EJECT_AFTER_FAILURES`] consecutive transport failures eject it;
//! - its `grpc.health.v1` `Watch` reporting anything but `SERVING` ejects
//!   it, `SERVING` re-admits it;
//! - a call that timed out asks its monitor for a probe, and a probe that
//!   gets no answer within [`PROBE_TIMEOUT`] ejects it (a blackholed
//!   replica costs the emissions already sent to it, not every later one).
//!
//! Each replica has one monitor task, started the first time the binding
//! is used inside a runtime and ended when the host is dropped. It follows
//! the replica's health `Watch` where one is served; without one (a
//! service answering `UNIMPLEMENTED`) it probes with a health `Check` only
//! when a call failure asks. An ejected replica is probed again after a
//! backoff with jitter ([`Backoff`]) until it answers, then re-admitted: so
//! a fleet whose every replica is down denies at once and resumes by
//! itself.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use hookwire::wire::PointRequest;
use hookwire::{InterceptorResponse, Manifest};
use tokio::sync::{Notify, watch};
use tonic::metadata::MetadataMap;

use super::balance::{Load, pick_two};
use super::dns;
use super::attempt::{Reach, reach_of};
use super::endpoint::{EndpointClient, serving_status_name};
use super::target::ServiceTarget;
use super::tls::TlsConfig;
use crate::call_failure::CallFailure;
use crate::error::Error;
use crate::metrics::{BindingInstruments, Ejection, ReplicaInstruments};

/// Consecutive transport failures (not refusals, not answers) after which
/// a replica is ejected without waiting for its probe.
pub(crate) const EJECT_AFTER_FAILURES: u32 = 3;

/// How long a health probe may take before the replica counts as
/// unreachable.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// A binding's remote interceptor service: one or more replicas, balanced.
#[derive(Debug, Clone)]
pub(crate) struct RemoteInterceptor {
    fleet: Arc<Fleet>,
}

#[derive(Debug)]
struct Fleet {
    name: String,
    /// The endpoints as configured, for spans and reports.
    configured: String,
    target: ServiceTarget,
    metadata: Arc<MetadataMap>,
    tls: Option<TlsConfig>,
    /// The current replicas; replaced as a whole when DNS changes the set.
    replicas: ArcSwap<Vec<Arc<Replica>>>,
    /// Set once the monitors run (the first use inside a runtime).
    started: OnceLock<()>,
    /// The first DNS resolution, awaited by the first call.
    resolved: tokio::sync::OnceCell<()>,
    /// Dropped with the fleet: every monitor task ends.
    stop: watch::Sender<()>,
    /// Ejection and retry counters, when the host has metrics.
    metrics: OnceLock<ReplicaInstruments>,
}

/// One replica and what the balancer knows about it.
#[derive(Debug)]
struct Replica {
    client: EndpointClient,
    load: Load,
    admitted: AtomicBool,
    /// Consecutive transport failures of calls.
    failures: AtomicU32,
    /// Wakes the monitor for a probe.
    probe: Notify,
    /// No longer in the set (DNS dropped its address): its monitor ends.
    retired: AtomicBool,
}

impl RemoteInterceptor {
    /// A lazily connecting client of every replica of `target`, sending
    /// `metadata` on every call.
    pub(crate) fn new(
        name: &str,
        target: &ServiceTarget,
        metadata: &[(String, String)],
        tls: Option<&TlsConfig>,
    ) -> Result<Self, Error> {
        let configured = target.endpoints.join(", ");
        if target.endpoints.is_empty() {
            return Err(Error::InvalidEndpoint {
                name: name.to_owned(),
                endpoint: configured,
                reason: "a remote binding needs at least one endpoint".into(),
            });
        }
        if target.streams == Some(0) {
            return Err(Error::InvalidEndpoint {
                name: name.to_owned(),
                endpoint: configured,
                reason: "a service needs at least one Multiplex stream".into(),
            });
        }
        if target.resolve_every.is_some_and(|p| p.is_zero()) {
            return Err(Error::InvalidEndpoint {
                name: name.to_owned(),
                endpoint: configured,
                reason: "the DNS re-resolution period must be positive".into(),
            });
        }
        let mut map = MetadataMap::new();
        for (key, value) in metadata {
            let (key, value) =
                super::metadata_entry(key, value).map_err(|reason| Error::InvalidMetadata {
                    name: name.to_owned(),
                    key: key.clone(),
                    reason,
                })?;
            map.append(key, value);
        }
        let metadata = Arc::new(map);
        let mut replicas = Vec::new();
        for (i, endpoint) in target.endpoints.iter().enumerate() {
            if target.endpoints[..i].contains(endpoint) {
                return Err(Error::InvalidEndpoint {
                    name: name.to_owned(),
                    endpoint: endpoint.clone(),
                    reason: "the endpoint is listed twice".into(),
                });
            }
            // Built even when DNS will replace it, so a bad URL fails the
            // build, not the first call.
            let client =
                EndpointClient::new(name, endpoint, metadata.clone(), tls, target.streams)?;
            if target.resolve_every.is_none() {
                replicas.push(Arc::new(Replica::new(client)));
            }
        }
        Ok(Self {
            fleet: Arc::new(Fleet {
                name: name.to_owned(),
                configured,
                target: target.clone(),
                metadata,
                tls: tls.cloned(),
                replicas: ArcSwap::from_pointee(replicas),
                started: OnceLock::new(),
                resolved: tokio::sync::OnceCell::new(),
                stop: watch::channel(()).0,
                metrics: OnceLock::new(),
            }),
        })
    }

    /// The endpoints as configured (comma-separated when several).
    pub(crate) fn endpoint(&self) -> &str {
        &self.fleet.configured
    }

    /// Calls the point's RPC on one admitted replica, bounded by `timeout`
    /// in all. An attempt that provably never reached a handler is sent to
    /// another admitted replica within what is left of the deadline; any
    /// other failure is the call's failure. With no admitted replica the
    /// call fails at once.
    pub(crate) async fn call(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
        metrics: Option<&BindingInstruments>,
    ) -> Result<InterceptorResponse, CallFailure> {
        if let Some(m) = metrics {
            self.fleet.metrics.get_or_init(|| m.replicas().clone());
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let fleet = &self.fleet;
        match deadline {
            Some(d) => tokio::time::timeout_at(d.into(), fleet.start())
                .await
                .map_err(|_| CallFailure::TimedOut)?,
            None => fleet.start().await,
        }
        let replicas = fleet.replicas.load_full();
        let mut tried: Vec<usize> = Vec::new();
        let mut request = Some(request);
        let mut last_failure = None;
        loop {
            let candidates: Vec<usize> = (0..replicas.len())
                .filter(|i| !tried.contains(i) && replicas[*i].admitted.load(Ordering::Relaxed))
                .collect();
            let Some(i) = pick_two(&candidates, |i| replicas[i].load.cost()) else {
                if let Some(m) = fleet.metrics.get() {
                    m.unavailable();
                }
                return Err(
                    last_failure.unwrap_or_else(|| CallFailure::Failed("no usable replica".into()))
                );
            };
            let replica = &replicas[i];
            let remaining = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Err(CallFailure::TimedOut),
                },
                None => None,
            };
            // Keep a copy only while another replica could take a retry.
            let this_request = if candidates.len() > 1 {
                request.clone().expect("kept for a retry")
            } else {
                request.take().expect("kept for a retry")
            };
            let outstanding = replica.load.start();
            match replica.client.call(this_request, remaining).await {
                Ok(response) => {
                    outstanding.answered();
                    replica.failures.store(0, Ordering::Relaxed);
                    return Ok(response);
                }
                Err(attempt) => {
                    match attempt.reach {
                        Reach::NeverReached => {
                            fleet.eject(replica, Ejection::Refused);
                            if let Some(m) = fleet.metrics.get() {
                                m.retried();
                            }
                            tried.push(i);
                            last_failure = Some(attempt.failure);
                            if request.is_none() {
                                return Err(last_failure.expect("just set"));
                            }
                            continue;
                        }
                        Reach::Transport => {
                            let n = replica.failures.fetch_add(1, Ordering::Relaxed) + 1;
                            if n >= EJECT_AFTER_FAILURES {
                                fleet.eject(replica, Ejection::Failures);
                            }
                        }
                        Reach::TimedOut => replica.probe.notify_one(),
                        Reach::Answered => {
                            outstanding.answered();
                            replica.failures.store(0, Ordering::Relaxed);
                        }
                    }
                    return Err(attempt.failure);
                }
            }
        }
    }

    /// Asks the replicas' `grpc.health.v1` how the interceptor service is
    /// doing. One replica: its status. Several: the status they share, or
    /// each replica's status when they differ (an error only when none
    /// answered).
    pub(crate) async fn health(&self, timeout: Duration) -> Result<String, String> {
        self.fleet.start().await;
        let replicas = self.fleet.replicas.load_full();
        let answers =
            futures::future::join_all(replicas.iter().map(|r| r.client.health(timeout))).await;
        match answers.as_slice() {
            [] => Err("no replica resolved".into()),
            [one] => one.clone(),
            many => {
                if many.iter().all(|a| a == &many[0]) {
                    return many[0].clone();
                }
                let each = replicas
                    .iter()
                    .zip(many)
                    .map(|(r, a)| match a {
                        Ok(status) => format!("{}: {status}", r.client.endpoint()),
                        Err(reason) => format!("{}: {reason}", r.client.endpoint()),
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                if many.iter().any(Result::is_ok) {
                    Ok(each)
                } else {
                    Err(each)
                }
            }
        }
    }

    /// Asks an admitted replica for the service's manifest (the replicas
    /// serve one service), trying the next when one does not answer.
    pub(crate) async fn describe(&self, timeout: Duration) -> Result<Manifest, String> {
        self.fleet.start().await;
        let replicas = self.fleet.replicas.load_full();
        let mut order: Vec<&Arc<Replica>> = replicas.iter().collect();
        order.sort_by_key(|r| !r.admitted.load(Ordering::Relaxed));
        let mut last = Err("no replica resolved".to_owned());
        for replica in order {
            last = replica.client.describe(timeout).await;
            if last.is_ok() {
                break;
            }
        }
        last
    }

    /// The replicas and whether each is admitted now, in order (for
    /// tests and reports).
    #[cfg(test)]
    pub(crate) fn admitted(&self) -> Vec<(String, bool)> {
        self.fleet
            .replicas
            .load()
            .iter()
            .map(|r| {
                (
                    r.client.endpoint().to_owned(),
                    r.admitted.load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

impl Replica {
    fn new(client: EndpointClient) -> Self {
        Self {
            client,
            load: Load::default(),
            admitted: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            probe: Notify::new(),
            retired: AtomicBool::new(false),
        }
    }
}

impl Fleet {
    /// Starts the monitors (and the DNS task) once, inside a runtime; the
    /// first use of a DNS binding waits for its first resolution.
    async fn start(self: &Arc<Self>) {
        if self.target.resolve_every.is_some() {
            self.resolved
                .get_or_init(|| async {
                    self.resolve().await;
                })
                .await;
        }
        if self.started.set(()).is_err() {
            return;
        }
        for replica in self.replicas.load().iter() {
            self.spawn_monitor(replica.clone());
        }
        if let Some(every) = self.target.resolve_every {
            let fleet = Arc::downgrade(self);
            let mut stop = self.stop.subscribe();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = stop.changed() => return,
                        () = tokio::time::sleep(every) => {}
                    }
                    let Some(fleet) = fleet.upgrade() else { return };
                    fleet.resolve().await;
                }
            });
        }
    }

    /// Resolves the configured names and replaces the replica set: a
    /// replica whose address is still there is kept (with its state), a
    /// new address gets a new replica (and a monitor, once started), a
    /// vanished one is retired. A failed resolution keeps the set.
    async fn resolve(self: &Arc<Self>) {
        let mut wanted = Vec::new();
        for endpoint in &self.target.endpoints {
            match dns::replica_endpoints(endpoint).await {
                Ok(found) => wanted.extend(found),
                Err(reason) => {
                    tracing::warn!(interceptor = %self.name, %reason, "DNS resolution failed; keeping the replicas");
                    return;
                }
            }
        }
        let current = self.replicas.load_full();
        let mut next = Vec::with_capacity(wanted.len());
        for (url, domain) in wanted {
            if next
                .iter()
                .any(|r: &Arc<Replica>| r.client.endpoint() == url)
            {
                continue;
            }
            if let Some(kept) = current.iter().find(|r| r.client.endpoint() == url) {
                next.push(kept.clone());
                continue;
            }
            // The certificate is still checked against the name.
            let tls = url.starts_with("https://").then(|| {
                let mut tls = self.tls.clone().unwrap_or_default();
                tls.domain_name.get_or_insert(domain);
                tls
            });
            match EndpointClient::new(
                &self.name,
                &url,
                self.metadata.clone(),
                tls.as_ref(),
                self.target.streams,
            ) {
                Ok(client) => {
                    let replica = Arc::new(Replica::new(client));
                    if self.started.get().is_some() {
                        self.spawn_monitor(replica.clone());
                    }
                    next.push(replica);
                }
                Err(e) => {
                    tracing::warn!(interceptor = %self.name, error = %e, "resolved address refused")
                }
            }
        }
        for old in current.iter() {
            if !next.iter().any(|r| Arc::ptr_eq(r, old)) {
                old.retired.store(true, Ordering::Relaxed);
                old.probe.notify_one();
            }
        }
        self.replicas.store(Arc::new(next));
    }

    /// Takes `replica` out of the balancer and wakes its monitor.
    fn eject(&self, replica: &Replica, why: Ejection) {
        if replica.admitted.swap(false, Ordering::Relaxed) {
            tracing::info!(interceptor = %self.name, endpoint = replica.client.endpoint(), cause = why.as_str(), "replica ejected");
            if let Some(m) = self.metrics.get() {
                m.ejected(why);
            }
        }
        replica.probe.notify_one();
    }

    /// Puts `replica` back in the balancer.
    fn admit(&self, replica: &Replica) {
        replica.failures.store(0, Ordering::Relaxed);
        if !replica.admitted.swap(true, Ordering::Relaxed) {
            tracing::info!(interceptor = %self.name, endpoint = replica.client.endpoint(), "replica re-admitted");
            if let Some(m) = self.metrics.get() {
                m.readmitted();
            }
        }
    }

    fn spawn_monitor(self: &Arc<Self>, replica: Arc<Replica>) {
        let fleet = Arc::downgrade(self);
        let mut stop = self.stop.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.changed() => {}
                () = monitor(fleet, replica) => {}
            }
        });
    }
}

/// What a probe learned about a replica.
enum Probe {
    /// It answered `SERVING`, or answered without serving health.
    Usable,
    /// It answered, but not `SERVING`.
    NotServing,
    /// No answer.
    Unreachable,
}

/// Asks the replica's health `Check` once, within [`PROBE_TIMEOUT`]. A
/// status the service itself sent (`UNIMPLEMENTED` where health is not
/// served, `UNAUTHENTICATED`, ...) proves it reachable: calls decide the
/// rest.
async fn probe(replica: &Replica) -> Probe {
    match replica.client.check(PROBE_TIMEOUT).await {
        None => Probe::Unreachable,
        Some(Ok(status)) if serving_status_name(status) == "SERVING" => Probe::Usable,
        Some(Ok(_)) => Probe::NotServing,
        Some(Err(status)) if reach_of(&status) == Reach::Answered => Probe::Usable,
        Some(Err(_)) => Probe::Unreachable,
    }
}

/// Watches one replica until the fleet is gone or the replica retired.
async fn monitor(fleet: Weak<Fleet>, replica: Arc<Replica>) {
    let mut backoff = Backoff::default();
    loop {
        if replica.retired.load(Ordering::Relaxed) {
            return;
        }
        let watched = tokio::time::timeout(PROBE_TIMEOUT, replica.client.watch()).await;
        let Some(f) = fleet.upgrade() else { return };
        match watched {
            Ok(Ok(stream)) => {
                drop(f);
                follow(&fleet, &replica, &mut backoff, stream).await;
                // The stream ended (a draining server, a lost connection):
                // watch again after a backoff (reset only by a watch that
                // reported SERVING), or sooner when a call asks.
                tokio::select! {
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                    () = replica.probe.notified() => {}
                }
            }
            Ok(Err(status)) if reach_of(&status) == Reach::Answered => {
                // Reachable, but it does not serve Watch (UNIMPLEMENTED)
                // or refuses it: health by probes, when calls ask.
                f.admit(&replica);
                drop(f);
                backoff.reset();
                probe_on_demand(&fleet, &replica, &mut backoff).await;
                return;
            }
            Ok(Err(_)) | Err(_) => {
                f.eject(&replica, Ejection::Unreachable);
                drop(f);
                tokio::select! {
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                    () = replica.probe.notified() => {}
                }
            }
        }
    }
}

/// Follows a health `Watch` stream: `SERVING` admits, anything else
/// ejects; a call asking for a probe gets one, and an unanswered probe
/// ejects and ends the watch.
async fn follow(
    fleet: &Weak<Fleet>,
    replica: &Replica,
    backoff: &mut Backoff,
    mut stream: tonic::Streaming<tonic_health::pb::HealthCheckResponse>,
) {
    loop {
        tokio::select! {
            message = stream.message() => {
                let Some(f) = fleet.upgrade() else { return };
                match message {
                    Ok(Some(update)) => match serving_status_name(update.status) {
                        "SERVING" => {
                            f.admit(replica);
                            backoff.reset();
                        }
                        // A server clears its statuses as it drains: a
                        // watch that stayed open would keep it from
                        // finishing, so let go and ask again later.
                        "SERVICE_UNKNOWN" => {
                            f.eject(replica, Ejection::Health);
                            return;
                        }
                        _ => f.eject(replica, Ejection::Health),
                    },
                    Ok(None) | Err(_) => return,
                }
            }
            () = replica.probe.notified() => {
                if replica.retired.load(Ordering::Relaxed) {
                    return;
                }
                let answer = probe(replica).await;
                let Some(f) = fleet.upgrade() else { return };
                match answer {
                    Probe::Usable => f.admit(replica),
                    Probe::NotServing => f.eject(replica, Ejection::Health),
                    Probe::Unreachable => {
                        f.eject(replica, Ejection::Unreachable);
                        return;
                    }
                }
            }
        }
    }
}

/// Health for a replica without `Watch`: wait until a call failure asks,
/// then probe until it answers, backing off with jitter.
async fn probe_on_demand(fleet: &Weak<Fleet>, replica: &Replica, backoff: &mut Backoff) {
    loop {
        replica.probe.notified().await;
        loop {
            if replica.retired.load(Ordering::Relaxed) {
                return;
            }
            let answer = probe(replica).await;
            let Some(f) = fleet.upgrade() else { return };
            match answer {
                Probe::Usable => {
                    f.admit(replica);
                    backoff.reset();
                    break;
                }
                Probe::NotServing => f.eject(replica, Ejection::Health),
                Probe::Unreachable => f.eject(replica, Ejection::Unreachable),
            }
            drop(f);
            tokio::time::sleep(backoff.next_delay()).await;
        }
    }
}

/// Exponential backoff between reconnect attempts, with jitter so that
/// many hosts do not reconnect in step.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: Self::BASE }
    }
}

impl Backoff {
    /// The first delay.
    pub(crate) const BASE: Duration = Duration::from_millis(50);
    /// The longest delay.
    pub(crate) const MAX: Duration = Duration::from_secs(2);

    /// The next delay: the current step with jitter, then the step doubled
    /// up to [`Backoff::MAX`].
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = Self::jitter(self.next);
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    /// Back to the first step.
    pub(crate) fn reset(&mut self) {
        self.next = Self::BASE;
    }

    /// `step` scaled by a random factor in [0.5, 1.0).
    pub(crate) fn jitter(step: Duration) -> Duration {
        step.mul_f64(0.5 + fastrand::f64() / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter_and_resets() {
        let mut b = Backoff::default();
        let delays: Vec<Duration> = (0..10).map(|_| b.next_delay()).collect();
        assert!(delays[0] >= Backoff::BASE / 2 && delays[0] < Backoff::BASE);
        assert!(delays[1] >= Backoff::BASE && delays[1] < Backoff::BASE * 2);
        assert!(delays.iter().all(|d| *d < Backoff::MAX));
        assert!(delays[9] >= Backoff::MAX / 2);
        b.reset();
        assert!(b.next_delay() < Backoff::BASE);
    }

    #[test]
    fn jitter_spreads_delays() {
        let d: std::collections::BTreeSet<Duration> = (0..20)
            .map(|_| Backoff::jitter(Duration::from_secs(1)))
            .collect();
        assert!(d.len() > 10);
    }

    fn target(endpoints: &[&str]) -> ServiceTarget {
        ServiceTarget {
            endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
            resolve_every: None,
            streams: None,
        }
    }

    /// An endpoint nothing listens on.
    fn gone() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        endpoint
    }

    #[tokio::test]
    async fn a_duplicate_endpoint_and_no_endpoint_are_build_errors() {
        let e = RemoteInterceptor::new("p", &target(&[]), &[], None).unwrap_err();
        assert!(e.to_string().contains("at least one endpoint"), "{e}");
        let e = RemoteInterceptor::new("p", &target(&["http://a:1", "http://a:1"]), &[], None)
            .unwrap_err();
        assert!(e.to_string().contains("listed twice"), "{e}");
    }

    #[tokio::test]
    async fn a_refused_replica_is_ejected_and_with_none_left_the_call_fails_at_once() {
        let (a, b) = (gone(), gone());
        let remote = RemoteInterceptor::new("p", &target(&[&a, &b]), &[], None).unwrap();
        // No monitors: whatever is ejected here, the call itself did.
        remote.fleet.started.set(()).unwrap();
        let request = Box::new(PointRequest::AgentStartup(Default::default()));
        let started = Instant::now();
        let failure = remote
            .call(request.clone(), Some(Duration::from_secs(5)), None)
            .await
            .unwrap_err();
        // The first refusal sent the call on to the other replica, which
        // refused too: both ejected, the last refusal reported.
        assert_eq!(failure, CallFailure::Failed("Unavailable".into()));
        assert!(remote.admitted().iter().all(|(_, admitted)| !admitted));
        let again = remote
            .call(request, Some(Duration::from_secs(5)), None)
            .await
            .unwrap_err();
        assert_eq!(again, CallFailure::Failed("no usable replica".into()));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
