//! The agent sessions: one hookwire [`Session`] per agent session key,
//! with a lock that serializes that session's hook events (so that a
//! synthetic turn is opened once, and a post-tool event sees its pre-tool
//! event settled) and what the core remembers between them. The table
//! itself is the edges' one bounded table (`hookwire_edge::sessions`:
//! each session bound to the [`Owner`] that opened it, an event of
//! another owner never reaches it; a new session past the bound refused;
//! idle-out by its reaper, a session in the middle of an event never
//! idled out). The open-session gauge (when metrics are on) moves with
//! every entry opened and taken out.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookwire_client::{Host, Session, ShutdownReason};
use hookwire_edge::sessions::{Bounds, EdgeSession, Ending, InUse, Sessions, WhenFull};
use tokio::sync::Mutex as AsyncMutex;

use crate::agents::Agent;
use crate::error::Error;
use crate::metrics::HooksMetrics;

use super::owner::Owner;

/// One agent session.
pub(super) struct Entry {
    /// The agent it belongs to (the gauge's label).
    agent: Agent,
    /// The principal whose hook event opened it.
    pub(super) owner: Owner,
    /// The model-route principal bound to a session its owner cannot be
    /// recognized by on the model route ([`Owner::TOKEN_HOLDER`]): the
    /// first that joined it (module `shared`).
    pub(super) joiner: Mutex<Option<Owner>>,
    /// Its hookwire session (shared with the gateway of the same process
    /// for the model requests of this agent session: module `shared`).
    pub(super) session: Arc<Session>,
    /// Held while one of its hook events (or a model request the gateway
    /// governs in it) is governed.
    pub(super) turn: Arc<AsyncMutex<()>>,
    state: Mutex<TurnState>,
    /// What each tool result's `post_tool_call` decided, by tool use id
    /// (the newest [`MAX_DECIDED_RESULTS`]).
    results: Mutex<DecidedResults>,
    /// The open-session gauge, while the entry is counted in it.
    metrics: Option<HooksMetrics>,
    counted: AtomicBool,
}

/// How many tool results' decisions a session remembers for the gateway.
pub const MAX_DECIDED_RESULTS: usize = 1024;

/// What a hook's `post_tool_call` decided about one tool result, which
/// the gateway of the same process applies to the result in the model
/// request instead of deciding again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedResult {
    /// The result may reach the model as it is.
    Released,
    /// The result must not reach the model: the blocked notice with this
    /// reason (and the interceptor's message, when it gave one) stands
    /// in for it.
    Withheld {
        /// The verdict's reason (`policy:…`, `host_error:…`).
        reason: String,
        /// The interceptor's message for the agent.
        message: Option<String>,
    },
}

/// The bounded map of decided results, oldest forgotten first.
#[derive(Debug, Default)]
struct DecidedResults {
    by_id: HashMap<String, DecidedResult>,
    order: VecDeque<String>,
}

/// What the core remembers of a session's current turn between its hook
/// events.
#[derive(Debug, Default)]
struct TurnState {
    /// Why the rest of the turn is quarantined (a deny the agent could
    /// not enforce), when it is.
    quarantine: Option<String>,
    /// How many chunks of the open model request were governed, while one
    /// is open.
    open_model: Option<u64>,
}

impl Entry {
    fn state(&self) -> MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the rest of the turn is quarantined, if it is.
    pub(super) fn quarantine(&self) -> Option<String> {
        self.state().quarantine.clone()
    }

    /// Quarantines the rest of the turn (`Some`), or lifts it.
    pub(super) fn set_quarantine(&self, cause: Option<String>) {
        self.state().quarantine = cause;
    }

    /// The chunks governed of the open model request, if one is open.
    pub(super) fn open_model(&self) -> Option<u64> {
        self.state().open_model
    }

    /// Records the open model request's chunk count (`None`: closed).
    pub(super) fn set_open_model(&self, chunks: Option<u64>) {
        self.state().open_model = chunks;
    }

    /// Remembers what `post_tool_call` decided for the result of tool use
    /// `id`.
    pub(super) fn decided(&self, id: &str, decided: DecidedResult) {
        let mut r = self.results.lock().unwrap_or_else(PoisonError::into_inner);
        if r.by_id.insert(id.to_owned(), decided).is_none() {
            r.order.push_back(id.to_owned());
        }
        while r.order.len() > MAX_DECIDED_RESULTS {
            if let Some(old) = r.order.pop_front() {
                r.by_id.remove(&old);
            }
        }
    }

    /// What `post_tool_call` decided for the result of tool use `id`, when
    /// a hook of this session governed it.
    pub(super) fn decided_result(&self, id: &str) -> Option<DecidedResult> {
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .get(id)
            .cloned()
    }

    /// Takes the entry out of the open-session gauge (once).
    fn uncount(&self) {
        if self.counted.swap(false, Ordering::SeqCst)
            && let Some(m) = &self.metrics
        {
            m.sessions_moved(self.agent, -1);
        }
    }
}

impl InUse for Entry {
    /// One of its hook events (or a model request of the gateway's) is
    /// being governed.
    fn in_use(&self) -> bool {
        self.turn.try_lock().is_err()
    }
}

impl EdgeSession for Entry {
    /// Waits for the event being governed, then emits `agent_shutdown`
    /// (`completed` when idle, `cancelled` when the daemon stops).
    async fn end(self: Arc<Self>, why: Ending) {
        self.uncount();
        let _held = self.turn.lock().await;
        let reason = match why {
            Ending::Shutdown => ShutdownReason::Cancelled,
            Ending::Idle | Ending::Displaced => ShutdownReason::Completed,
        };
        close(&self.session, reason).await;
    }
}

/// Emits `agent_shutdown` unless the session never started or is closed.
pub(super) async fn close(session: &Session, reason: ShutdownReason) {
    if !session.is_started() || session.is_closed() {
        return;
    }
    if let Err(e) = session.shutdown(reason).await {
        tracing::warn!(session = session.id(), error = %e, "agent_shutdown failed");
    }
}

/// The table, at most `max` sessions; a new one past it is refused.
pub(super) struct Table {
    sessions: Arc<Sessions<Entry, Owner>>,
    metrics: Option<HooksMetrics>,
}

impl Table {
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        Self {
            sessions: Arc::new(Sessions::new(Bounds::new(max, max, WhenFull::Refuse), idle)),
            metrics: None,
        }
    }

    /// Counts open sessions in `metrics` from now on.
    pub(super) fn set_metrics(&mut self, metrics: HooksMetrics) {
        self.metrics = Some(metrics);
    }

    /// How many sessions are open.
    pub(super) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The session `key`, opened for `owner` when new; refused when the
    /// table is full or the session is another owner's.
    pub(super) async fn get_or_open(
        &self,
        host: &Host,
        agent: Agent,
        key: &str,
        owner: Owner,
    ) -> Result<Arc<Entry>, Error> {
        let open = || -> Result<Entry, Error> {
            Ok(Entry {
                agent,
                owner,
                joiner: Mutex::new(None),
                session: Arc::new(host.session_builder(key).remember_calls().open()?),
                turn: Arc::new(AsyncMutex::new(())),
                state: Mutex::new(TurnState::default()),
                results: Mutex::new(DecidedResults::default()),
                metrics: self.metrics.clone(),
                counted: AtomicBool::new(self.metrics.is_some()),
            })
        };
        let entered = self
            .sessions
            .enter(key, owner, open, |_| None::<()>)
            .await?;
        if entered.opened
            && let Some(m) = &self.metrics
        {
            m.sessions_moved(agent, 1);
        }
        Ok(entered.session)
    }

    /// Session `key`, whoever's, when it is open (its last activity
    /// refreshed).
    pub(super) fn get(&self, key: &str) -> Option<Arc<Entry>> {
        let mut t = self.sessions.lock();
        let e = t.peek(key)?.clone();
        t.touch(key, Instant::now());
        Some(e)
    }

    /// Whether session `key` is open.
    pub(super) fn contains(&self, key: &str) -> bool {
        self.sessions.lock().contains(key)
    }

    /// Takes session `key` out when it is `owner`'s; refused when it is
    /// another owner's. The caller ends it.
    pub(super) fn remove_owned(
        &self,
        key: &str,
        owner: Owner,
    ) -> Result<Option<Arc<Entry>>, Error> {
        let gone = self.sessions.lock().remove_owned(key, &owner)?;
        if let Some(e) = &gone {
            e.uncount();
        }
        Ok(gone)
    }

    /// Takes session `key` out (its session closed).
    pub(super) fn remove(&self, key: &str) -> Option<Arc<Entry>> {
        let gone = self.sessions.lock().remove(key);
        if let Some(e) = &gone {
            e.uncount();
        }
        gone
    }

    /// Ends every session idle past the timeout that is not in the middle
    /// of an event; returns how many.
    pub(super) async fn reap_idle(&self) -> usize {
        self.sessions.reap_idle().await
    }

    /// Ends every session (the daemon is stopping).
    pub(super) async fn shutdown_all(&self) {
        self.sessions.shutdown_all().await;
    }

    /// Runs the reaper until the table is dropped.
    pub(super) fn spawn_reaper(&self) -> tokio::task::JoinHandle<()> {
        self.sessions.spawn_reaper()
    }
}
