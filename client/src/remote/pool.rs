//! One binding's remote interceptor service as the call path sees it: the
//! replicas checked and built, the call with its retry rule, and the
//! questions a host asks the service (`Describe`, health).
//!
//! A call goes to one admitted replica ([`pick_two`]) within the
//! emission's deadline. An attempt that provably never reached a handler
//! ejects its replica at once and moves to another admitted replica
//! within what is left of the deadline, as many times as there are
//! replicas; [`EJECT_AFTER_FAILURES`] consecutive transport failures eject
//! a replica; a call that timed out asks the replica's monitor for a probe
//! (`monitor`). With no admitted replica a call fails at once.
//!
//! The background work is apart: the monitors (`monitor`) and DNS
//! re-resolution (`dns`) start the first time the binding is used inside
//! a runtime and end when the host is dropped; the state all of them share
//! is the `fleet`'s.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use hookwire::InterceptorResponse;
use hookwire::wire::PointRequest;
use tokio::sync::watch;
use tonic::metadata::MetadataMap;

use super::attempt::Reach;
use super::balance::pick_two;
use super::described::Described;
use super::endpoint::EndpointClient;
use super::fleet::{Fleet, Replica};
use super::metadata::metadata_entry;
use super::target::ServiceTarget;
use super::tls::TlsConfig;
use super::{dns, monitor};
use crate::call_failure::CallFailure;
use crate::error::Error;
use crate::metrics::{BindingInstruments, Ejection};

/// Consecutive transport failures (not refusals, not answers) after which
/// a replica is ejected without waiting for its probe.
pub(crate) const EJECT_AFTER_FAILURES: u32 = 3;

/// A binding's remote interceptor service: one or more replicas, balanced.
#[derive(Debug, Clone)]
pub(crate) struct RemoteInterceptor {
    fleet: Arc<Fleet>,
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
                metadata_entry(key, value).map_err(|reason| Error::InvalidMetadata {
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
            Some(d) => tokio::time::timeout_at(d.into(), start(fleet))
                .await
                .map_err(|_| CallFailure::TimedOut)?,
            None => start(fleet).await,
        }
        let replicas = fleet.replicas.load_full();
        let mut tried: Vec<usize> = Vec::new();
        let mut request = Some(request);
        let mut last_failure = None;
        loop {
            let candidates: Vec<usize> = (0..replicas.len())
                .filter(|i| !tried.contains(i) && replicas[*i].is_admitted())
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
        start(&self.fleet).await;
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
    pub(crate) async fn describe(&self, timeout: Duration) -> Result<Described, String> {
        start(&self.fleet).await;
        let replicas = self.fleet.replicas.load_full();
        let mut order: Vec<&Arc<Replica>> = replicas.iter().collect();
        order.sort_by_key(|r| !r.is_admitted());
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
            .map(|r| (r.client.endpoint().to_owned(), r.is_admitted()))
            .collect()
    }
}

/// Starts the monitors (and the DNS task) once, inside a runtime; the
/// first use of a DNS binding waits for its first resolution.
async fn start(fleet: &Arc<Fleet>) {
    if fleet.target.resolve_every.is_some() {
        fleet
            .resolved
            .get_or_init(|| async {
                dns::refresh(fleet).await;
            })
            .await;
    }
    if fleet.started.set(()).is_err() {
        return;
    }
    for replica in fleet.replicas.load().iter() {
        monitor::spawn(fleet, replica.clone());
    }
    if let Some(every) = fleet.target.resolve_every {
        dns::spawn_every(fleet, every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
