//! The health monitor of one replica: a background task that ejects the
//! replica when it stops serving and re-admits it when it answers again.
//!
//! It follows the replica's `grpc.health.v1` `Watch` where one is served:
//! `SERVING` admits, anything else ejects. Without one (a service answering
//! `UNIMPLEMENTED`) it probes with a health `Check` only when a call
//! failure asks. A call that timed out asks for a probe, and a probe that
//! gets no answer within [`PROBE_TIMEOUT`] ejects the replica (a
//! blackholed replica costs the emissions already sent to it, not every
//! later one). An ejected replica is probed again after a backoff with
//! full jitter ([`Backoff`]) until it answers, then re-admitted: so a fleet
//! whose every replica is down denies at once and resumes by itself.
//!
//! A monitor holds its fleet weakly and ends with it, or when DNS retires
//! its replica.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hookwire::backoff::Backoff;

use super::attempt::{Reach, reach_of};
use super::endpoint::serving_status_name;
use super::fleet::{Fleet, Replica};
use crate::metrics::Ejection;

/// How long a health probe may take before the replica counts as
/// unreachable.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The first delay before a replica is watched or probed again.
const BACKOFF_BASE: Duration = Duration::from_millis(50);
/// The longest delay before a replica is watched or probed again.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Starts the monitor of `replica`, ended when `fleet` is dropped.
pub(super) fn spawn(fleet: &Arc<Fleet>, replica: Arc<Replica>) {
    let weak = Arc::downgrade(fleet);
    let mut stop = fleet.stop.subscribe();
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.changed() => {}
            () = monitor(weak, replica) => {}
        }
    });
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
    let mut backoff = Backoff::new(BACKOFF_BASE, BACKOFF_MAX);
    loop {
        if replica.is_retired() {
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
                if replica.is_retired() {
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
            if replica.is_retired() {
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
