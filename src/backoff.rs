//! Exponential backoff with full jitter: the delay between attempts to
//! reach something that did not answer (a replica to probe again, a
//! stream to reconnect, a listener to accept on again).
//!
//! Each delay is drawn uniformly between zero and the current step, and
//! the step doubles from a base up to a cap ("full jitter"): many clients
//! that lost the same server at the same moment spread their retries over
//! the whole step instead of arriving together when it comes back, which a
//! fixed doubling (every client waiting the same 100 ms, 200 ms, ...) makes
//! them do.
//!
//! Written here rather than taken from a crate: `backoff` is unmaintained,
//! `backon` and `tokio-retry` drive a retried future themselves (the
//! callers here sleep inside `select!` loops that other events also wake),
//! and `exponential-backoff` bounds the number of attempts and jitters by a
//! proportion of the delay. What the callers need is the small state
//! machine below: next delay, reset on success.

use std::time::Duration;

/// The delays between attempts: each one random up to a step that doubles
/// from `base` to `max` with every delay taken, back to `base` on
/// [`reset`](Self::reset). Each backoff draws from a generator of its own,
/// seeded at random, so two clients never share a sequence.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    step: Duration,
    rng: fastrand::Rng,
}

impl Backoff {
    /// A backoff whose first step is `base` and whose steps never exceed
    /// `max` (at least `base`).
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max: max.max(base),
            step: base,
            rng: fastrand::Rng::new(),
        }
    }

    /// The next delay, uniformly in `[0, step)`; the step then doubles, up
    /// to the cap.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.step.mul_f64(self.rng.f64());
        self.step = self.step.saturating_mul(2).min(self.max);
        delay
    }

    /// Back to the first step (after an attempt succeeded).
    pub fn reset(&mut self) {
        self.step = self.base;
    }

    /// The bound of the next delay.
    pub fn step(&self) -> Duration {
        self.step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_millis(50);
    const MAX: Duration = Duration::from_secs(2);

    #[test]
    fn each_delay_lies_below_its_step_and_the_step_doubles_to_the_cap() {
        let mut b = Backoff::new(BASE, MAX);
        let mut steps = Vec::new();
        for _ in 0..12 {
            let step = b.step();
            steps.push(step);
            let delay = b.next_delay();
            assert!(delay < step, "{delay:?} not below {step:?}");
        }
        assert_eq!(&steps[..4], &[BASE, BASE * 2, BASE * 4, BASE * 8]);
        assert!(steps.windows(2).all(|w| w[1] == (w[0] * 2).min(MAX)));
        assert_eq!(steps[11], MAX, "capped");
    }

    #[test]
    fn reset_returns_to_the_first_step() {
        let mut b = Backoff::new(BASE, MAX);
        for _ in 0..5 {
            b.next_delay();
        }
        assert!(b.step() > BASE);
        b.reset();
        assert_eq!(b.step(), BASE);
        assert!(b.next_delay() < BASE);
    }

    #[test]
    fn a_cap_below_the_base_is_the_base() {
        let mut b = Backoff::new(BASE, Duration::ZERO);
        b.next_delay();
        assert_eq!(b.step(), BASE);
    }

    #[test]
    fn delays_spread_over_the_whole_step() {
        // Full jitter: with a fixed step, delays fall in both halves of it,
        // and two backoffs started together do not repeat each other.
        let fixed = |b: &mut Backoff| {
            b.reset();
            b.next_delay()
        };
        let mut a = Backoff::new(Duration::from_secs(1), Duration::from_secs(1));
        let mut other = Backoff::new(Duration::from_secs(1), Duration::from_secs(1));
        let delays: Vec<Duration> = (0..200).map(|_| fixed(&mut a)).collect();
        let half = Duration::from_millis(500);
        assert!(delays.iter().any(|d| *d < half));
        assert!(delays.iter().any(|d| *d >= half));
        let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
        assert!(distinct.len() > 190);
        let theirs: Vec<Duration> = (0..200).map(|_| fixed(&mut other)).collect();
        assert_ne!(delays, theirs);
    }
}
