//! A retried request joins the run it repeats. A request held for a long
//! time (a human approving a tool call) outlives the client's timeout;
//! the official SDKs then send the same request again (`openai` and
//! `anthropic`: `max_retries=2`). Governed a second time, it would open
//! a second approval and call the upstream twice.
//!
//! Every governed request therefore runs as a *flight*, in its own task,
//! keyed by its API, its client credential and its body's digest. The
//! client's connection only waits for the flight: when the client goes
//! away the run goes on (the approval stays pending). A request with the
//! same key joins the flight instead of running when it says it is a
//! retry (`x-stainless-retry-count` ≥ 1, or the flight's own
//! `Idempotency-Key`) or when every client of the flight is gone. Two
//! identical requests a client sends side by side, while both wait, are
//! two runs (parallel sampling keeps its meaning).
//!
//! A whole answer goes to every waiter; a streamed one, to the newest
//! (the older connections get a `409` in the API's shape). An answer no
//! client was waiting for is kept for [`GatewayConfig::retry_window`]
//! for the retry to collect, then dropped. At most [`MAX_FLIGHTS`]
//! flights exist at once; beyond that a request is refused with `503`.
//!
//! [`GatewayConfig::retry_window`]: crate::GatewayConfig::retry_window

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::error::Error;

/// How many flights (running, or finished and waiting for a retry) exist
/// at most.
pub const MAX_FLIGHTS: usize = 8192;

/// The header the official SDKs count their retries in.
const RETRY_COUNT_HEADER: &str = "x-stainless-retry-count";
/// The header an idempotent client names its request with.
const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// The longest idempotency key remembered.
const MAX_IDEMPOTENCY_KEY: usize = 256;

/// What identifies a request across its retries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct FlightKey([u8; 32]);

impl FlightKey {
    /// The key of a request of API `api` from `owner` with `body`.
    pub(crate) fn of(api: &str, owner: &[u8; 32], body: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(api.as_bytes());
        h.update([0]);
        h.update(owner);
        h.update(body);
        Self(h.finalize().into())
    }
}

/// How a request presents itself: as a retry of an earlier one or not.
#[derive(Debug, Default)]
pub(crate) struct Presented {
    /// It counts itself a retry.
    retry: bool,
    /// Its `Idempotency-Key`, when it names one.
    idempotency_key: Option<String>,
}

impl Presented {
    /// What `headers` say.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let retry = headers
            .get(RETRY_COUNT_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok())
            .is_some_and(|n| n > 0);
        let idempotency_key = headers
            .get(IDEMPOTENCY_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= MAX_IDEMPOTENCY_KEY)
            .map(str::to_owned);
        Self {
            retry,
            idempotency_key,
        }
    }
}

/// The answer a flight settled on.
pub(crate) enum Settled {
    /// A whole answer (or an error), copied to every waiter.
    Whole {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
    /// A streamed answer, for one waiter.
    Live(Mutex<Option<Response>>),
}

impl Settled {
    /// A response whose body is already in memory.
    pub(crate) async fn whole(response: Response) -> Self {
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        Self::Whole {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// A response streamed as the run releases it.
    pub(crate) fn live(response: Response) -> Self {
        Self::Live(Mutex::new(Some(response)))
    }
}

/// One run and who waits for it.
pub(crate) struct Flight {
    key: FlightKey,
    idempotency_key: Option<String>,
    result: watch::Sender<Option<Arc<Settled>>>,
    state: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// The waiters still connected, by arrival.
    waiters: BTreeSet<u64>,
    next: u64,
    /// When the run finished with nobody waiting.
    unclaimed_since: Option<Instant>,
}

/// The flights of a gateway.
pub(crate) struct Flights {
    map: Mutex<HashMap<FlightKey, Arc<Flight>>>,
    window: Duration,
}

/// What [`Flights::enter`] decided.
pub(crate) enum Entered {
    /// A new run: the caller starts it and then waits like the others.
    Run(Arc<Flight>, Waiter),
    /// The request joined a run.
    Joined(Waiter),
}

impl Flights {
    /// Flights whose unclaimed answers are kept for `window`.
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            window,
        }
    }

    /// Joins the flight `key` names when the request may, or opens one.
    pub(crate) fn enter(&self, key: FlightKey, presented: Presented) -> Result<Entered, Error> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        map.retain(|_, f| !f.expired(now, self.window));
        if let Some(f) = map.get(&key) {
            let joins = presented.retry
                || (presented.idempotency_key.is_some()
                    && presented.idempotency_key == f.idempotency_key)
                || f.abandoned();
            if joins {
                tracing::info!("a retried request joined the run it repeats");
                return Ok(Entered::Joined(Waiter::new(f.clone())));
            }
            // A side-by-side duplicate: its own run, not joinable.
            let f = Flight::new(key, presented.idempotency_key);
            return Ok(Entered::Run(f.clone(), Waiter::new(f)));
        }
        if map.len() >= MAX_FLIGHTS {
            return Err(Error::Overloaded(MAX_FLIGHTS));
        }
        let f = Flight::new(key, presented.idempotency_key);
        map.insert(key, f.clone());
        Ok(Entered::Run(f.clone(), Waiter::new(f)))
    }

    /// Records `flight`'s answer: it goes to the waiters, or is kept for
    /// a retry when none is left.
    pub(crate) fn finish(&self, flight: &Arc<Flight>, settled: Settled) {
        let claimed = {
            let mut w = flight.lock();
            if w.waiters.is_empty() {
                w.unclaimed_since = Some(Instant::now());
            }
            !w.waiters.is_empty()
        };
        flight.result.send_replace(Some(Arc::new(settled)));
        if claimed {
            self.forget(flight);
        }
    }

    /// Removes `flight` from the table (an answer was claimed).
    fn forget(&self, flight: &Arc<Flight>) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(&flight.key).is_some_and(|f| Arc::ptr_eq(f, flight)) {
            map.remove(&flight.key);
        }
    }

    /// How many flights the table holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }
}

impl Flight {
    fn new(key: FlightKey, idempotency_key: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            key,
            idempotency_key,
            result: watch::channel(None).0,
            state: Mutex::new(Waiting::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every client of the flight is gone.
    fn abandoned(&self) -> bool {
        self.lock().waiters.is_empty()
    }

    fn expired(&self, now: Instant, window: Duration) -> bool {
        self.lock()
            .unclaimed_since
            .is_some_and(|t| now.duration_since(t) >= window)
    }
}

/// One client connection waiting for a flight; leaving (the client went
/// away) is recorded when it is dropped.
pub(crate) struct Waiter {
    flight: Arc<Flight>,
    id: u64,
}

impl Waiter {
    fn new(flight: Arc<Flight>) -> Self {
        let id = {
            let mut w = flight.lock();
            w.next += 1;
            let id = w.next;
            w.waiters.insert(id);
            id
        };
        Self { flight, id }
    }

    /// The flight's answer for this client, or the error to answer
    /// instead (in the API's shape, by the caller).
    pub(crate) async fn answer(self, flights: &Flights) -> Result<Response, Error> {
        let mut rx = self.flight.result.subscribe();
        let settled = loop {
            if let Some(s) = rx.borrow_and_update().clone() {
                break s;
            }
            if rx.changed().await.is_err() {
                return Err(Error::Upstream("the request's run ended".into()));
            }
        };
        // A finished flight a retry collected leaves the table.
        flights.forget(&self.flight);
        match &*settled {
            Settled::Whole {
                status,
                headers,
                body,
            } => {
                let mut r = Response::new(Body::from(body.clone()));
                *r.status_mut() = *status;
                *r.headers_mut() = headers.clone();
                Ok(r)
            }
            Settled::Live(slot) => {
                let newest = self.flight.lock().waiters.last() == Some(&self.id);
                let taken = newest
                    .then(|| slot.lock().unwrap_or_else(|p| p.into_inner()).take())
                    .flatten();
                taken.ok_or(Error::Superseded(
                    "a retry of this request receives its streamed answer",
                ))
            }
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.flight.lock().waiters.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
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
        let Ok(Entered::Run(f, first)) = flights.enter(key(1), Presented::default()) else {
            panic!("a new run")
        };
        let Ok(Entered::Joined(second)) = flights.enter(key(1), retry()) else {
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
        let Ok(Entered::Run(_f, _first)) = flights.enter(key(1), Presented::default()) else {
            panic!("a new run")
        };
        assert!(
            matches!(
                flights.enter(key(1), Presented::default()),
                Ok(Entered::Run(..))
            ),
            "not a retry, and the first client still waits"
        );
        assert!(
            matches!(flights.enter(key(2), retry()), Ok(Entered::Run(..))),
            "another credential never joins"
        );
    }

    #[tokio::test]
    async fn an_abandoned_run_is_joined_and_its_unclaimed_answer_kept_for_the_window() {
        let flights = Flights::new(Duration::from_secs(60));
        let Ok(Entered::Run(f, first)) = flights.enter(key(1), Presented::default()) else {
            panic!("a new run")
        };
        drop(first); // the client timed out
        flights.finish(&f, whole("late"));
        assert_eq!(flights.len(), 1, "kept for a retry");
        let Ok(Entered::Joined(retry)) = flights.enter(key(1), Presented::default()) else {
            panic!("every client is gone: the same request joins")
        };
        assert_eq!(body(retry.answer(&flights).await.unwrap()).await, "late");
        assert_eq!(flights.len(), 0);
    }

    #[tokio::test]
    async fn an_unclaimed_answer_expires() {
        let flights = Flights::new(Duration::ZERO);
        let Ok(Entered::Run(f, first)) = flights.enter(key(1), Presented::default()) else {
            panic!("a new run")
        };
        drop(first);
        flights.finish(&f, whole("late"));
        assert!(matches!(
            flights.enter(key(1), Presented::default()),
            Ok(Entered::Run(..))
        ));
    }

    #[tokio::test]
    async fn a_streamed_answer_goes_to_the_newest_waiter() {
        let flights = Flights::new(Duration::from_secs(60));
        let Ok(Entered::Run(f, first)) = flights.enter(key(1), Presented::default()) else {
            panic!("a new run")
        };
        let Ok(Entered::Joined(second)) = flights.enter(key(1), retry()) else {
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
            let k = FlightKey::of("x", &[0; 32], &n.to_le_bytes());
            let Ok(Entered::Run(_, w)) = flights.enter(k, Presented::default()) else {
                panic!("room")
            };
            held.push(w);
        }
        assert!(matches!(
            flights.enter(key(9), Presented::default()),
            Err(Error::Overloaded(MAX_FLIGHTS))
        ));
    }
}
