//! The pure parts of the `gateway_peer` section, kept free of I/O so that
//! `benches/tests/peer_stats.rs` can test them: percentiles of latency samples,
//! the added latency of a path over the direct one, the open-loop
//! schedule, and the search for the maximum sustained rate.

use std::time::Duration;

/// The `p`-th percentile (0–100) of `samples` by nearest rank, or NaN when
/// there are none. Sorts a copy; NaN samples sort last.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let p = p.clamp(0.0, 100.0);
    let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[rank.min(v.len() - 1)]
}

/// p50 and p99 of one path's latencies, in µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantiles {
    /// The median.
    pub p50: f64,
    /// The 99th percentile.
    pub p99: f64,
}

impl Quantiles {
    /// The quantiles of `samples` (µs).
    pub fn of(samples: &[f64]) -> Self {
        Self {
            p50: percentile(samples, 50.0),
            p99: percentile(samples, 99.0),
        }
    }

    /// What a path adds over the direct one, quantile by quantile (the
    /// difference of the p50s, and of the p99s).
    pub fn added_over(&self, direct: &Self) -> Self {
        Self {
            p50: self.p50 - direct.p50,
            p99: self.p99 - direct.p99,
        }
    }
}

/// When the `i`-th request of an open-loop run at `rate` requests per
/// second is due, after the run's start: requests are sent on this
/// schedule whatever the previous ones are doing, and latency is measured
/// from this intended time (so a path that falls behind is charged the
/// wait, rather than the load slowing down with it).
pub fn due(i: u64, rate: f64) -> Duration {
    if !(rate.is_finite() && rate > 0.0) {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(i as f64 / rate)
}

/// How many requests an open-loop run at `rate` for `length` sends.
pub fn scheduled(rate: f64, length: Duration) -> u64 {
    if !(rate.is_finite() && rate > 0.0) {
        return 0;
    }
    (rate * length.as_secs_f64()).floor() as u64
}

/// The closed-loop search for a path's maximum sustained rate: the
/// concurrency starts at `start` and doubles while each step is free of
/// errors and raises the rate by at least [`RateSearch::GAIN`]; it stops at
/// the first step that errs, stops improving, or would pass `max`. The
/// result is the best rate of the error-free steps: a rate reached only
/// with failed requests is not sustained.
#[derive(Debug, Clone)]
pub struct RateSearch {
    next: Option<usize>,
    max: usize,
    best: Option<(usize, f64)>,
}

impl RateSearch {
    /// The least relative gain for which the search doubles again.
    pub const GAIN: f64 = 1.05;

    /// A search from `start` concurrent requests up to `max`.
    pub fn new(start: usize, max: usize) -> Self {
        let start = start.max(1);
        Self {
            next: (start <= max).then_some(start),
            max,
            best: None,
        }
    }

    /// The concurrency of the next step, or `None` when the search is over.
    pub fn next(&self) -> Option<usize> {
        self.next
    }

    /// Records the step at `concurrency`: its rate in requests per second,
    /// or `None` when any of its requests failed.
    pub fn record(&mut self, concurrency: usize, rate: Option<f64>) {
        let Some(rate) = rate.filter(|r| r.is_finite() && *r >= 0.0) else {
            self.next = None;
            return;
        };
        let improved = self.best.is_none_or(|(_, b)| rate >= b * Self::GAIN);
        if self.best.is_none_or(|(_, b)| rate > b) {
            self.best = Some((concurrency, rate));
        }
        let doubled = concurrency.saturating_mul(2);
        self.next = (improved && doubled <= self.max).then_some(doubled);
    }

    /// The best error-free step: (concurrency, requests per second).
    pub fn best(&self) -> Option<(usize, f64)> {
        self.best
    }
}
