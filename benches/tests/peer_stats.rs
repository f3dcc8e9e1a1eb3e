//! The unit tests of the `gateway_peer` section's pure parts
//! (`load/peer/stats.rs`): the bench itself runs without a test harness.

#[path = "../load/peer/stats.rs"]
mod stats;

use std::time::Duration;

use stats::{Quantiles, RateSearch, due, percentile, scheduled};

#[test]
fn percentiles_by_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).rev().collect();
    assert_eq!(percentile(&v, 50.0), 51.0);
    assert_eq!(percentile(&v, 99.0), 99.0);
    assert_eq!(percentile(&v, 0.0), 1.0);
    assert_eq!(percentile(&v, 100.0), 100.0);
    assert_eq!(percentile(&v, 250.0), 100.0);
    assert!(percentile(&[], 50.0).is_nan());
    assert_eq!(percentile(&[7.0], 99.0), 7.0);
}

#[test]
fn added_latency_is_per_quantile() {
    let direct = Quantiles::of(&[100.0, 110.0, 120.0]);
    let via = Quantiles::of(&[400.0, 500.0, 900.0]);
    let added = via.added_over(&direct);
    assert_eq!(added.p50, 390.0);
    assert_eq!(added.p99, 780.0);
}

#[test]
fn the_schedule_ignores_progress() {
    assert_eq!(due(0, 50.0), Duration::ZERO);
    assert_eq!(due(50, 50.0), Duration::from_secs(1));
    assert_eq!(due(75, 50.0), Duration::from_millis(1500));
    assert_eq!(scheduled(50.0, Duration::from_secs(4)), 200);
    assert_eq!(scheduled(50.0, Duration::from_millis(1990)), 99);
    assert_eq!(scheduled(0.0, Duration::from_secs(4)), 0);
    assert_eq!(scheduled(f64::NAN, Duration::from_secs(4)), 0);
    assert_eq!(due(3, -1.0), Duration::ZERO);
}

#[test]
fn the_search_doubles_while_the_rate_grows() {
    let mut s = RateSearch::new(16, 128);
    let mut steps = Vec::new();
    let rates = [1000.0, 1800.0, 2000.0, 2050.0, 9999.0];
    let mut i = 0;
    while let Some(c) = s.next() {
        steps.push(c);
        s.record(c, Some(rates[i]));
        i += 1;
    }
    // 2050 is less than 5 % over 2000: the search stops there.
    assert_eq!(steps, [16, 32, 64, 128]);
    assert_eq!(s.best(), Some((128, 2050.0)));
}

#[test]
fn the_search_keeps_the_best_step_when_the_rate_falls() {
    let mut s = RateSearch::new(8, 1024);
    s.record(8, Some(500.0));
    s.record(16, Some(400.0));
    assert_eq!(s.next(), None);
    assert_eq!(s.best(), Some((8, 500.0)));
}

#[test]
fn a_failing_step_ends_the_search_and_never_counts() {
    let mut s = RateSearch::new(8, 1024);
    s.record(8, Some(100.0));
    assert_eq!(s.next(), Some(16));
    s.record(16, None);
    assert_eq!(s.next(), None);
    assert_eq!(s.best(), Some((8, 100.0)));

    let mut first = RateSearch::new(8, 1024);
    first.record(8, None);
    assert_eq!(first.best(), None);
    assert_eq!(first.next(), None);
}

#[test]
fn the_search_stays_within_its_bound() {
    let mut s = RateSearch::new(64, 100);
    assert_eq!(s.next(), Some(64));
    s.record(64, Some(10.0));
    assert_eq!(s.next(), None);
    assert_eq!(RateSearch::new(200, 100).next(), None);
    assert_eq!(RateSearch::new(0, 100).next(), Some(1));
    let mut nan = RateSearch::new(4, 100);
    nan.record(4, Some(f64::NAN));
    assert_eq!(nan.best(), None);
}
