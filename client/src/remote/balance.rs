//! The choice of a replica for one call: power of two choices over the
//! admitted replicas, on a peak-EWMA latency × outstanding-calls load.
//!
//! This is the policy of `tower::balance::p2c` with `tower::load::PeakEwma`
//! (itself Finagle's), kept here as a pure function over a slice rather than
//! as tower's `Balance` service, because the fleet's contract needs what
//! that service does not give:
//!
//! - **Fail at once when nothing is usable.** `Balance::poll_ready` waits
//!   until some endpoint becomes ready; with every replica down an emission
//!   would sit out its whole timeout — the outage behaviour the fleet exists
//!   to remove. Here an empty admitted set is an immediate
//!   `interceptor_failed`.
//! - **Retry only elsewhere, and only what never reached a handler.** The
//!   retry rule needs to know which replica an attempt went to and to
//!   exclude it from the next pick within the same deadline; `Balance`
//!   hides the endpoint behind its `call`.
//! - **Ejection visible to the very next pick.** A replica ejected by a
//!   refused connection or a health `NOT_SERVING` must not be picked by the
//!   next emission; with `Balance` the removal travels through the
//!   `Discover` stream and applies on its next poll.
//! - **No queue hop.** `Balance` takes `&mut self`; sharing it among
//!   concurrent sessions needs a `Buffer` worker task and a channel hop per
//!   emission. Here a pick reads the admitted set and two atomics.
//!
//! The load of a replica is its peak-EWMA round trip times its outstanding
//! calls plus one: a slow replica or a busy one is picked less, and a
//! replica that just answered slowly is avoided until the estimate decays.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The round trip a replica is assumed to have before it answered once.
const DEFAULT_RTT: Duration = Duration::from_millis(5);

/// How fast a peak decays back toward the recent round trips.
const DECAY: Duration = Duration::from_secs(10);

/// The load of one replica: outstanding calls and the peak-EWMA of its
/// round trips.
#[derive(Debug)]
pub(super) struct Load {
    outstanding: AtomicU32,
    rtt: Mutex<Rtt>,
}

#[derive(Debug)]
struct Rtt {
    /// The estimate, in nanoseconds.
    nanos: f64,
    updated: Instant,
}

impl Default for Load {
    fn default() -> Self {
        Self {
            outstanding: AtomicU32::new(0),
            rtt: Mutex::new(Rtt {
                nanos: DEFAULT_RTT.as_nanos() as f64,
                updated: Instant::now(),
            }),
        }
    }
}

impl Load {
    /// The cost of sending one more call here: estimate × (outstanding + 1).
    pub(super) fn cost(&self) -> f64 {
        let outstanding = f64::from(self.outstanding.load(Ordering::Relaxed));
        let estimate = self
            .rtt
            .lock()
            .map_or(f64::MAX, |mut r| r.decayed(Instant::now()));
        estimate * (outstanding + 1.0)
    }

    /// Counts a call outstanding until the guard is dropped; the guard
    /// records its round trip when told the call was answered.
    pub(super) fn start(&self) -> Outstanding<'_> {
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Outstanding {
            load: self,
            sent: Instant::now(),
        }
    }

    /// How many calls are outstanding now.
    #[cfg(test)]
    pub(super) fn outstanding(&self) -> u32 {
        self.outstanding.load(Ordering::Relaxed)
    }
}

impl Rtt {
    /// The estimate decayed toward zero for the time since its update.
    fn decayed(&mut self, now: Instant) -> f64 {
        self.observe(now, 0.0)
    }

    /// Peak-EWMA: a sample above the estimate replaces it; one below is
    /// averaged in with a weight that grows with the time since the last
    /// update.
    fn observe(&mut self, now: Instant, sample: f64) -> f64 {
        if sample > self.nanos {
            self.nanos = sample;
        } else {
            let elapsed = now.saturating_duration_since(self.updated).as_nanos() as f64;
            let keep = (-elapsed / DECAY.as_nanos() as f64).exp();
            self.nanos = self.nanos * keep + sample * (1.0 - keep);
        }
        self.updated = now;
        self.nanos
    }
}

/// One outstanding call on a replica.
pub(super) struct Outstanding<'a> {
    load: &'a Load,
    sent: Instant,
}

impl Outstanding<'_> {
    /// The replica answered: its round trip feeds the estimate.
    pub(super) fn answered(self) {
        let now = Instant::now();
        let sample = now.saturating_duration_since(self.sent).as_nanos() as f64;
        if let Ok(mut rtt) = self.load.rtt.lock() {
            rtt.observe(now, sample);
        }
    }
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        self.load.outstanding.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Power of two choices: among the candidates (indices the caller may
/// use), two picked at random, the one with the lower cost. `None` when
/// there is no candidate.
pub(super) fn pick_two(candidates: &[usize], cost: impl Fn(usize) -> f64) -> Option<usize> {
    match candidates.len() {
        0 => None,
        1 => Some(candidates[0]),
        n => {
            let a = fastrand::usize(..n);
            let mut b = fastrand::usize(..n - 1);
            if b >= a {
                b += 1;
            }
            let (a, b) = (candidates[a], candidates[b]);
            Some(if cost(b) < cost(a) { b } else { a })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_pick_from_is_none_and_one_is_that_one() {
        assert_eq!(pick_two(&[], |_| 0.0), None);
        assert_eq!(pick_two(&[7], |_| 0.0), Some(7));
    }

    #[test]
    fn two_candidates_the_cheaper_always_wins() {
        for _ in 0..100 {
            assert_eq!(
                pick_two(&[3, 9], |i| if i == 9 { 1.0 } else { 2.0 }),
                Some(9)
            );
        }
    }

    #[test]
    fn every_candidate_is_picked_when_costs_are_equal() {
        let mut seen = [0u32; 4];
        for _ in 0..1000 {
            seen[pick_two(&[0, 1, 2, 3], |_| 1.0).unwrap()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 100), "{seen:?}");
    }

    #[test]
    fn the_most_loaded_of_three_is_never_picked() {
        // With two choices out of three, the costliest loses every draw it
        // is part of.
        for _ in 0..300 {
            let p = pick_two(&[0, 1, 2], |i| [1.0, 1.0, 50.0][i]).unwrap();
            assert_ne!(p, 2);
        }
    }

    #[test]
    fn outstanding_calls_raise_the_cost_and_a_slow_answer_raises_the_estimate() {
        let load = Load::default();
        let idle = load.cost();
        let first = load.start();
        let second = load.start();
        assert_eq!(load.outstanding(), 2);
        assert!(load.cost() > 2.5 * idle, "{} vs {idle}", load.cost());
        drop(first);
        std::thread::sleep(Duration::from_millis(30));
        second.answered();
        assert_eq!(load.outstanding(), 0);
        // A 30 ms peak replaces the 5 ms default.
        assert!(load.cost() > 25_000_000.0, "{}", load.cost());
    }
}
