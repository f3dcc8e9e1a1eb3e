//! The flight table's rules, one case each: joins, duplicates, the
//! retry window, streamed answers and the bounds.

use super::*;

fn key(n: u8) -> FlightKey {
    FlightKey::of("chat_completions", &[n; 32], b"{}")
}

fn retry() -> Presented {
    Presented {
        retry: true,
        idempotency_key: None,
    }
}

fn whole(text: &'static str) -> Settled {
    Settled::Whole {
        status: StatusCode::OK,
        headers: HeaderMap::new(),
        body: Bytes::from_static(text.as_bytes()),
    }
}

async fn body(r: Response) -> Bytes {
    axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()
}

#[test]
fn the_key_separates_apis_owners_and_bodies() {
    let k = FlightKey::of("chat_completions", &[1; 32], b"{}");
    assert_ne!(k, FlightKey::of("responses", &[1; 32], b"{}"));
    assert_ne!(k, FlightKey::of("chat_completions", &[2; 32], b"{}"));
    assert_ne!(k, FlightKey::of("chat_completions", &[1; 32], b"{ }"));
    assert_eq!(k, FlightKey::of("chat_completions", &[1; 32], b"{}"));
}

#[test]
fn the_sdks_retry_count_and_idempotency_keys_are_read() {
    let mut h = HeaderMap::new();
    assert!(!Presented::of(&h).retry);
    h.insert(RETRY_COUNT_HEADER, "0".parse().unwrap());
    assert!(!Presented::of(&h).retry, "the first attempt");
    h.insert(RETRY_COUNT_HEADER, "2".parse().unwrap());
    assert!(Presented::of(&h).retry);
    h.insert(IDEMPOTENCY_HEADER, "k-1".parse().unwrap());
    assert_eq!(Presented::of(&h).idempotency_key.as_deref(), Some("k-1"));
    h.insert(IDEMPOTENCY_HEADER, "x".repeat(300).parse().unwrap());
    assert_eq!(Presented::of(&h).idempotency_key, None, "bounded");
}

#[tokio::test]
async fn a_retry_joins_and_both_get_the_whole_answer() {
    let flights = Flights::new(Duration::from_secs(60));
    let Ok(Entered::Run(f, first)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("a new run")
    };
    let Ok(Entered::Joined(second)) = flights.enter(key(1), [1; 32], retry()) else {
        panic!("the retry joins")
    };
    flights.finish(&f, whole("answer"));
    assert_eq!(body(first.answer(&flights).await.unwrap()).await, "answer");
    assert_eq!(body(second.answer(&flights).await.unwrap()).await, "answer");
    assert_eq!(flights.len(), 0, "a claimed answer leaves the table");
}

#[tokio::test]
async fn a_duplicate_side_by_side_runs_on_its_own() {
    let flights = Flights::new(Duration::from_secs(60));
    let Ok(Entered::Run(_f, _first)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("a new run")
    };
    assert!(
        matches!(
            flights.enter(key(1), [1; 32], Presented::default()),
            Ok(Entered::Run(..))
        ),
        "not a retry, and the first client still waits"
    );
    assert!(
        matches!(
            flights.enter(key(2), [2; 32], retry()),
            Ok(Entered::Run(..))
        ),
        "another credential never joins"
    );
}

#[tokio::test]
async fn an_abandoned_run_is_joined_and_its_unclaimed_answer_kept_for_the_window() {
    let flights = Flights::new(Duration::from_secs(60));
    let Ok(Entered::Run(f, first)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("a new run")
    };
    drop(first); // the client timed out
    flights.finish(&f, whole("late"));
    assert_eq!(flights.len(), 1, "kept for a retry");
    let Ok(Entered::Joined(retry)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("every client is gone: the same request joins")
    };
    assert_eq!(body(retry.answer(&flights).await.unwrap()).await, "late");
    assert_eq!(flights.len(), 0);
}

#[tokio::test]
async fn an_unclaimed_answer_expires() {
    let flights = Flights::new(Duration::ZERO);
    let Ok(Entered::Run(f, first)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("a new run")
    };
    drop(first);
    flights.finish(&f, whole("late"));
    assert!(matches!(
        flights.enter(key(1), [1; 32], Presented::default()),
        Ok(Entered::Run(..))
    ));
}

#[tokio::test]
async fn a_streamed_answer_goes_to_the_newest_waiter() {
    let flights = Flights::new(Duration::from_secs(60));
    let Ok(Entered::Run(f, first)) = flights.enter(key(1), [1; 32], Presented::default()) else {
        panic!("a new run")
    };
    let Ok(Entered::Joined(second)) = flights.enter(key(1), [1; 32], retry()) else {
        panic!("joins")
    };
    flights.finish(&f, Settled::live(Response::new(Body::from("stream"))));
    assert!(matches!(
        first.answer(&flights).await,
        Err(Error::Superseded(_))
    ));
    assert_eq!(body(second.answer(&flights).await.unwrap()).await, "stream");
}

#[tokio::test]
async fn the_table_is_bounded() {
    let flights = Flights::new(Duration::from_secs(60));
    let mut held = Vec::new();
    for n in 0..MAX_FLIGHTS {
        let owner = [u8::try_from(n / MAX_FLIGHTS_PER_CLIENT).unwrap(); 32];
        let k = FlightKey::of("x", &owner, &n.to_le_bytes());
        let Ok(Entered::Run(_, w)) = flights.enter(k, owner, Presented::default()) else {
            panic!("room")
        };
        held.push(w);
    }
    assert!(matches!(
        flights.enter(key(9), [200; 32], Presented::default()),
        Err(Error::Overloaded(MAX_FLIGHTS))
    ));
}

#[tokio::test]
async fn one_client_runs_at_most_its_share_and_a_finished_or_dropped_run_frees_it() {
    let flights = Flights::new(Duration::from_secs(60));
    let (a, b) = ([1; 32], [2; 32]);
    let mut runs = Vec::new();
    for n in 0..MAX_FLIGHTS_PER_CLIENT {
        // Side-by-side duplicates count like any run.
        let k = FlightKey::of("x", &a, &(n % 2).to_le_bytes());
        let Ok(Entered::Run(f, w)) = flights.enter(k, a, Presented::default()) else {
            panic!("room")
        };
        runs.push((f, w));
    }
    let full = |flights: &Flights| {
        matches!(
            flights.enter(key(1), a, Presented::default()),
            Err(Error::RequestQuota(MAX_FLIGHTS_PER_CLIENT))
        )
    };
    assert!(full(&flights), "a's share is taken");
    assert!(
        matches!(
            flights.enter(key(2), b, Presented::default()),
            Ok(Entered::Run(..))
        ),
        "b is served"
    );
    let (f, _w) = runs.pop().unwrap();
    flights.finish(&f, whole("done"));
    assert!(!full(&flights), "a finished run frees its place");
    let (f, _w) = runs.pop().unwrap();
    drop(Release::new(&flights, &f));
    flights.finish(&f, whole("done"));
    let (f, _w) = runs.pop().unwrap();
    drop(Release::new(&flights, &f));
    assert!(
        !full(&flights),
        "a run whose task ended frees its place, once"
    );
}
