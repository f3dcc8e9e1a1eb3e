//! The pause between accept attempts after accept errors: 5 ms, doubling up
//! to [`ServerLimits::accept_backoff_max`](super::ServerLimits::accept_backoff_max).
//! The accept loop asks this one type for its pauses, so the algorithm
//! can change here alone.

use std::time::Duration;

/// The first pause after an accept error.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);

/// The pauses of one run of accept errors; a fresh one starts over at the
/// shortest pause.
#[derive(Debug, Clone, Copy)]
pub(super) struct AcceptBackoff {
    next: Duration,
    max: Duration,
}

impl AcceptBackoff {
    /// Pauses growing from 5 ms to at most `max`.
    pub(super) fn new(max: Duration) -> Self {
        Self {
            next: ACCEPT_BACKOFF_MIN,
            max,
        }
    }

    /// The pause after one more accept error.
    pub(super) fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_five_milliseconds_up_to_the_bound() {
        let mut backoff = AcceptBackoff::new(Duration::from_millis(30));
        let pauses: Vec<u64> = (0..5)
            .map(|_| backoff.next_pause().as_millis() as u64)
            .collect();
        assert_eq!(pauses, [5, 10, 20, 30, 30]);
    }
}
