//! The histogram buckets every hookwire series shares. One set for every
//! latency a machine produces — a policy decision, an interceptor call, an
//! emission, a hook decision, an MCP call, a gateway request — so one
//! query, panel or alert reads the same boundaries whichever process
//! reported the time; and one set for approval waits, which are a person's
//! time. docs/operating.md ("Histogram buckets") lists both.

/// Upper bounds (seconds) of the request-latency buckets: 10 µs doubling
/// 25 times, to about 168 s. From the fastest in-process decision to a
/// long streamed model answer, each bucket at most twice the one below, so
/// a quantile read from them is within a factor of two.
pub fn request_latency_buckets() -> impl Iterator<Item = f64> {
    (0..REQUEST_LATENCY_BUCKET_COUNT).map(|i| REQUEST_LATENCY_FIRST_SECONDS * 2f64.powi(i))
}

/// The number of finite request-latency buckets (`+Inf` comes on top).
pub const REQUEST_LATENCY_BUCKET_COUNT: i32 = 25;

/// The first request-latency bucket's upper bound: 10 µs.
pub const REQUEST_LATENCY_FIRST_SECONDS: f64 = 0.000_01;

/// Upper bounds (seconds) of the approval-wait buckets: 0.25 s tripling 10
/// times, to about 82 minutes, past the longest approval deadline a
/// declaration may set.
pub fn approval_wait_buckets() -> impl Iterator<Item = f64> {
    (0..APPROVAL_WAIT_BUCKET_COUNT).map(|i| APPROVAL_WAIT_FIRST_SECONDS * 3f64.powi(i))
}

/// The number of finite approval-wait buckets (`+Inf` comes on top).
pub const APPROVAL_WAIT_BUCKET_COUNT: i32 = 10;

/// The first approval-wait bucket's upper bound: 0.25 s.
pub const APPROVAL_WAIT_FIRST_SECONDS: f64 = 0.25;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_latency_spans_ten_microseconds_to_minutes() {
        let b: Vec<f64> = request_latency_buckets().collect();
        assert_eq!(b.len(), 25);
        assert!((b[0] - 0.000_01).abs() < 1e-12);
        assert!(b[24] > 160.0 && b[24] < 170.0, "{}", b[24]);
        assert!(b.windows(2).all(|w| (w[1] / w[0] - 2.0).abs() < 1e-9));
    }

    #[test]
    fn approval_waits_span_a_quarter_second_past_an_hour() {
        let b: Vec<f64> = approval_wait_buckets().collect();
        assert_eq!(b.len(), 10);
        assert!((b[0] - 0.25).abs() < 1e-12);
        assert!(b[9] > 3600.0, "{}", b[9]);
    }
}
