//! The session table every edge keeps (the gateway's conversations, the
//! MCP proxy's HTTP sessions, the hooks daemon's agent sessions, the
//! approval page's sign-ins), one
//! implementation: a pure core (`table`: ownership, bounds, displacement
//! or refusal, bookings, idle-out; no I/O) behind one lock, and this thin
//! async layer that ends what the core takes out — displaced, idle or at
//! shutdown — through the edge's [`EdgeSession::end`] (an
//! `agent_shutdown`), and runs the reaper.
//!
//! | module | role |
//! |---|---|
//! | `table` | the pure core: every rule, tested over every case |

mod table;
#[cfg(test)]
mod table_tests;

pub use table::{Bounds, Found, InUse, Table, WhenFull};

use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::Error;

/// Why a session is ended by the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Idle past the idle time (`agent_shutdown`, `completed`).
    Idle,
    /// Displaced by a new session past a bound (`completed`: nothing is
    /// lost that the edge keeps).
    Displaced,
    /// The edge is stopping (`cancelled`).
    Shutdown,
}

/// What an edge's session is to the table: whether a request uses it
/// (module `table`'s [`InUse`]) and how it ends.
pub trait EdgeSession: InUse + Send + Sync + 'static {
    /// Ends the session (its `agent_shutdown`, once), waiting for a
    /// request that still uses it; the table no longer holds it.
    fn end(self: Arc<Self>, why: Ending) -> impl Future<Output = ()> + Send;
}

/// A session entered by [`Sessions::enter`].
pub struct Entered<S, H> {
    /// The session.
    pub session: Arc<S>,
    /// Opened by this call.
    pub opened: bool,
    /// What `hold` took under the table's lock (for a new session,
    /// always when `hold` can): from then on nothing displaces the
    /// session before the caller lets go.
    pub held: Option<H>,
    /// The sessions displaced to make room, ended already.
    pub displaced: usize,
}

/// The bounded table of one edge, its sessions ended when taken out.
pub struct Sessions<S, O> {
    table: Mutex<Table<S, O>>,
    idle: Duration,
}

impl<S: EdgeSession, O: Clone + Eq + Hash + Send + 'static> Sessions<S, O> {
    /// A table within `bounds`, its sessions idled out after `idle`.
    pub fn new(bounds: Bounds, idle: Duration) -> Self {
        Self {
            table: Mutex::new(Table::new(bounds)),
            idle,
        }
    }

    /// The core under the lock, for what an edge composes of its rules
    /// (keep it short: no await while held).
    pub fn lock(&self) -> MutexGuard<'_, Table<S, O>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The idle time.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// How many places are taken.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no place is taken.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The session `key` of `owner`, opened by `open` when absent (under
    /// the lock: a quick, synchronous open), with `hold` tried under the
    /// same lock; the sessions displaced to make room are ended
    /// ([`Ending::Displaced`]) before it returns. Another owner's key, a
    /// place still starting and a full table are refused (`E: From<Error>`).
    pub async fn enter<H, E: From<Error>>(
        &self,
        key: &str,
        owner: O,
        open: impl FnOnce() -> Result<S, E>,
        hold: impl FnOnce(&Arc<S>) -> Option<H>,
    ) -> Result<Entered<S, H>, E> {
        let (entered, displaced) = match self.enter_now(key, owner, open, hold) {
            Ok(done) => done,
            Err((e, displaced)) => {
                end_all(displaced, Ending::Displaced).await;
                return Err(e);
            }
        };
        end_all(displaced, Ending::Displaced).await;
        Ok(entered)
    }

    /// [`Self::enter`] under the lock: the entered session and the
    /// displaced ones to end, or the refusal and the displaced ones.
    #[allow(clippy::type_complexity)]
    fn enter_now<H, E: From<Error>>(
        &self,
        key: &str,
        owner: O,
        open: impl FnOnce() -> Result<S, E>,
        hold: impl FnOnce(&Arc<S>) -> Option<H>,
    ) -> Result<(Entered<S, H>, Vec<Arc<S>>), (E, Vec<Arc<S>>)> {
        let now = Instant::now();
        let mut t = self.lock();
        let found = t
            .find(key, &owner, now)
            .map_err(|e| (e.into(), Vec::new()))?;
        match found {
            Found::Open(session) => {
                let held = hold(&session);
                let entered = Entered {
                    session,
                    opened: false,
                    held,
                    displaced: 0,
                };
                Ok((entered, Vec::new()))
            }
            Found::Starting => Err((Error::SessionsFull(t.bounds().max).into(), Vec::new())),
            Found::Absent => {
                let displaced = t
                    .book(key, owner, now)
                    .map_err(|e| (e.into(), Vec::new()))?;
                let session = match open() {
                    Ok(s) => Arc::new(s),
                    Err(e) => {
                        t.cancel(key);
                        return Err((e, displaced));
                    }
                };
                t.fill(key, session.clone(), now);
                let held = hold(&session);
                let entered = Entered {
                    session,
                    opened: true,
                    held,
                    displaced: displaced.len(),
                };
                Ok((entered, displaced))
            }
        }
    }

    /// Books a place under `key` for `owner` before a slow start, so
    /// that concurrent starts cannot overrun a bound; the sessions
    /// displaced are ended first. Then [`Self::fill`] or
    /// [`Self::cancel`].
    pub async fn book(&self, key: &str, owner: O) -> Result<(), Error> {
        let displaced = {
            let mut t = self.lock();
            if t.contains(key) {
                return Err(Error::SessionNotOwned);
            }
            t.book(key, owner, Instant::now())?
        };
        end_all(displaced, Ending::Displaced).await;
        Ok(())
    }

    /// Puts the started `session` in the place booked under `key`; when
    /// the booking is gone (the edge stopped meanwhile) it is ended.
    pub async fn fill(&self, key: &str, session: Arc<S>) {
        let kept = self.lock().fill(key, session.clone(), Instant::now());
        if !kept {
            session.end(Ending::Shutdown).await;
        }
    }

    /// Lets go of a booking whose start failed.
    pub fn cancel(&self, key: &str) {
        self.lock().cancel(key);
    }

    /// Ends every session idle past the idle time that nobody uses;
    /// returns how many.
    pub async fn reap_idle(&self) -> usize {
        let idle = self.lock().take_idle(Instant::now(), self.idle);
        let n = idle.len();
        end_all(idle, Ending::Idle).await;
        n
    }

    /// Ends every session (the edge is stopping).
    pub async fn shutdown_all(&self) {
        let all = self.lock().take_all();
        end_all(all, Ending::Shutdown).await;
    }

    /// How often the reaper looks: a quarter of the idle time, within
    /// 10 ms and 30 s.
    pub fn reap_period(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30))
    }

    /// Runs [`Self::reap_idle`] every [`Self::reap_period`] until the
    /// table is dropped by everyone else.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak: Weak<Self> = Arc::downgrade(self);
        let period = self.reap_period();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                sessions.reap_idle().await;
            }
        })
    }
}

/// Ends each of `sessions` for `why`, one after another.
pub async fn end_all<S: EdgeSession>(sessions: Vec<Arc<S>>, why: Ending) {
    for s in sessions {
        s.end(why).await;
    }
}
