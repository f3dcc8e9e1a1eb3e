//! The bounded table of agent sessions: one hookwire [`Session`] per
//! agent session key, a lock that serializes that session's hook events
//! (so that a synthetic turn is opened once, and a post-tool event sees
//! its pre-tool event settled), and the time of its last event for the
//! idle-out. Each session is bound to the [`Owner`] that opened it: an
//! event of another owner never reaches it. The open-session gauge (when
//! metrics are on) moves with every entry opened and removed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookwire_client::{Host, Session};
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
    last_active: Mutex<Instant>,
    state: Mutex<TurnState>,
    /// What each tool result's `post_tool_call` decided, by tool use id
    /// (the newest [`MAX_DECIDED_RESULTS`]).
    results: Mutex<DecidedResults>,
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

    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(
            *self
                .last_active
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// The table, at most `max` sessions.
pub(super) struct Table {
    map: Mutex<HashMap<String, Arc<Entry>>>,
    max: usize,
    metrics: Option<HooksMetrics>,
}

impl Table {
    pub(super) fn new(max: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max,
            metrics: None,
        }
    }

    /// Counts open sessions in `metrics` from now on.
    pub(super) fn set_metrics(&mut self, metrics: HooksMetrics) {
        self.metrics = Some(metrics);
    }

    /// Moves the gauge for the entries `gone` left the table.
    fn removed(&self, gone: &[Arc<Entry>]) {
        if let Some(m) = &self.metrics {
            for e in gone {
                m.sessions_moved(e.agent, -1);
            }
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are open.
    pub(super) fn len(&self) -> usize {
        self.map().len()
    }

    /// The session `key`, opened for `owner` when new; refused when the
    /// table is full or the session is another owner's.
    pub(super) fn get_or_open(
        &self,
        host: &Host,
        agent: Agent,
        key: &str,
        owner: Owner,
    ) -> Result<Arc<Entry>, Error> {
        let mut map = self.map();
        if let Some(e) = map.get(key) {
            if e.owner != owner {
                return Err(Error::NotOwner);
            }
            e.touch();
            return Ok(e.clone());
        }
        if map.len() >= self.max {
            return Err(Error::Overloaded(self.max));
        }
        let entry = Arc::new(Entry {
            agent,
            owner,
            joiner: Mutex::new(None),
            session: Arc::new(host.session_builder(key).remember_calls().open()?),
            turn: Arc::new(AsyncMutex::new(())),
            last_active: Mutex::new(Instant::now()),
            state: Mutex::new(TurnState::default()),
            results: Mutex::new(DecidedResults::default()),
        });
        map.insert(key.to_owned(), entry.clone());
        if let Some(m) = &self.metrics {
            m.sessions_moved(agent, 1);
        }
        Ok(entry)
    }

    /// Session `key`, when it is open (its last activity refreshed).
    pub(super) fn get(&self, key: &str) -> Option<Arc<Entry>> {
        let map = self.map();
        let e = map.get(key)?;
        e.touch();
        Some(e.clone())
    }

    /// Whether session `key` is open.
    pub(super) fn contains(&self, key: &str) -> bool {
        self.map().contains_key(key)
    }

    /// Removes session `key` when it is `owner`'s; refused when it is
    /// another owner's.
    pub(super) fn remove_owned(
        &self,
        key: &str,
        owner: Owner,
    ) -> Result<Option<Arc<Entry>>, Error> {
        let gone = {
            let mut map = self.map();
            match map.get(key) {
                Some(e) if e.owner != owner => return Err(Error::NotOwner),
                Some(_) => map.remove(key),
                None => None,
            }
        };
        if let Some(e) = &gone {
            self.removed(std::slice::from_ref(e));
        }
        Ok(gone)
    }

    /// Removes session `key`.
    pub(super) fn remove(&self, key: &str) -> Option<Arc<Entry>> {
        let gone = self.map().remove(key);
        if let Some(e) = &gone {
            self.removed(std::slice::from_ref(e));
        }
        gone
    }

    /// Removes and returns every session idle for at least `idle`.
    pub(super) fn take_idle(&self, idle: Duration) -> Vec<Arc<Entry>> {
        let now = Instant::now();
        let gone: Vec<Arc<Entry>> = {
            let mut map = self.map();
            let keys: Vec<String> = map
                .iter()
                .filter(|(_, e)| e.idle_for(now) >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        self.removed(&gone);
        gone
    }

    /// Removes and returns every session.
    pub(super) fn take_all(&self) -> Vec<Arc<Entry>> {
        let gone: Vec<Arc<Entry>> = self.map().drain().map(|(_, e)| e).collect();
        self.removed(&gone);
        gone
    }
}
