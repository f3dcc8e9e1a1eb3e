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
//! flights exist at once (runs, side-by-side duplicates included, and
//! kept answers); beyond that a request is refused with `503`. One client
//! runs at most [`MAX_FLIGHTS_PER_CLIENT`] at once (`429` beyond), so that
//! one client's flood leaves room for the others.
//!
//! [`GatewayConfig::retry_window`]: crate::GatewayConfig::retry_window

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::error::Error;
use crate::principal::Owner;

/// How many flights (running, or finished and waiting for a retry) exist
/// at most.
pub const MAX_FLIGHTS: usize = 8192;
/// How many requests one client (a listed client, or one credential) runs
/// at most at once.
pub const MAX_FLIGHTS_PER_CLIENT: usize = 1024;

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
    owner: Owner,
    /// Whether the run still counts against the bounds (until it
    /// finished, or its task ended).
    running: AtomicBool,
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
    map: Mutex<Table>,
    window: Duration,
}

/// The joinable flights by key, and the runs counted per client.
#[derive(Default)]
struct Table {
    by_key: HashMap<FlightKey, Arc<Flight>>,
    running: usize,
    per_owner: HashMap<Owner, usize>,
}

impl Table {
    /// A new run of `owner`, counted, if the bounds leave room.
    fn run(
        &mut self,
        key: FlightKey,
        owner: Owner,
        idempotency_key: Option<String>,
    ) -> Result<Arc<Flight>, Error> {
        if self.running >= MAX_FLIGHTS || self.by_key.len() >= MAX_FLIGHTS {
            return Err(Error::Overloaded(MAX_FLIGHTS));
        }
        let mine = self.per_owner.entry(owner).or_default();
        if *mine >= MAX_FLIGHTS_PER_CLIENT {
            return Err(Error::RequestQuota(MAX_FLIGHTS_PER_CLIENT));
        }
        *mine += 1;
        self.running += 1;
        Ok(Flight::new(key, owner, idempotency_key))
    }
}

/// Stops counting a run when dropped: the run's task holds it, so a run
/// whose task ended without finishing (a panic) is not counted forever.
pub(crate) struct Release<'a> {
    flights: &'a Flights,
    flight: Arc<Flight>,
}

impl<'a> Release<'a> {
    /// The guard of `flight`'s run.
    pub(crate) fn new(flights: &'a Flights, flight: &Arc<Flight>) -> Self {
        Self {
            flights,
            flight: flight.clone(),
        }
    }
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.flights.release(&self.flight);
    }
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
            map: Mutex::new(Table::default()),
            window,
        }
    }

    /// Joins the flight `key` names when the request may, or opens one.
    pub(crate) fn enter(
        &self,
        key: FlightKey,
        owner: Owner,
        presented: Presented,
    ) -> Result<Entered, Error> {
        let mut table = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        table.by_key.retain(|_, f| !f.expired(now, self.window));
        if let Some(f) = table.by_key.get(&key) {
            let joins = presented.retry
                || (presented.idempotency_key.is_some()
                    && presented.idempotency_key == f.idempotency_key)
                || f.abandoned();
            if joins {
                tracing::info!("a retried request joined the run it repeats");
                return Ok(Entered::Joined(Waiter::new(f.clone())));
            }
            // A side-by-side duplicate: its own run, not joinable.
            let f = table.run(key, owner, presented.idempotency_key)?;
            return Ok(Entered::Run(f.clone(), Waiter::new(f)));
        }
        let f = table.run(key, owner, presented.idempotency_key)?;
        table.by_key.insert(key, f.clone());
        Ok(Entered::Run(f.clone(), Waiter::new(f)))
    }

    /// Stops counting `flight`'s run (once).
    fn release(&self, flight: &Flight) {
        if !flight.running.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut table = self.map.lock().unwrap_or_else(|p| p.into_inner());
        table.running = table.running.saturating_sub(1);
        if let Some(n) = table.per_owner.get_mut(&flight.owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                table.per_owner.remove(&flight.owner);
            }
        }
    }

    /// Records `flight`'s answer: it goes to the waiters, or is kept for
    /// a retry when none is left.
    pub(crate) fn finish(&self, flight: &Arc<Flight>, settled: Settled) {
        self.release(flight);
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
        let mut table = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if table
            .by_key
            .get(&flight.key)
            .is_some_and(|f| Arc::ptr_eq(f, flight))
        {
            table.by_key.remove(&flight.key);
        }
    }

    /// How many flights the table holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap().by_key.len()
    }
}

impl Flight {
    fn new(key: FlightKey, owner: Owner, idempotency_key: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            key,
            owner,
            running: AtomicBool::new(true),
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
#[path = "flight_tests.rs"]
mod tests;
