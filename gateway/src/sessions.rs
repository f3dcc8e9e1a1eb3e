//! The gateway's conversations: one hookwire [`Session`] per conversation,
//! keyed by the `x-hookwire-session` header or derived from the request,
//! bound to the client credential that opened it, with what the gateway
//! remembers between requests (how much of the transcript it has seen,
//! whether a turn is open, the tool calls it permitted), and bounded in
//! number. A conversation idle for longer than the idle timeout is
//! removed and its session shut down (`agent_shutdown`, `completed`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire_client::{Host, Session, ShutdownReason, ToolCall};
use tokio::sync::Mutex as AsyncMutex;

use crate::error::Error;

/// Whether the session's `agent_startup` has run, and how it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Startup {
    Fresh,
    Running,
    Denied(String),
}

/// What the gateway remembers of one conversation between its requests.
#[derive(Debug)]
pub(crate) struct ConvState {
    pub(crate) startup: Startup,
    /// How many messages of the client's transcript have been governed
    /// (the client's count, plus the assistant reply returned).
    pub(crate) seen: usize,
    /// Whether a permitting `input` opened a turn no `output` closed yet.
    pub(crate) turn_open: bool,
    /// Tool calls `pre_tool_call` permitted, waiting for their results.
    pub(crate) pending: HashMap<String, ToolCall>,
    /// What a verdict made of a message the client keeps sending in its
    /// history: by index, the SHA-256 of the content the client sent and
    /// the content that goes upstream instead (a redacted input, a
    /// withheld tool result).
    pub(crate) rewrites: HashMap<usize, ([u8; 32], serde_json::Value)>,
    /// Set once the session was shut down.
    pub(crate) closed: bool,
}

/// One conversation.
pub(crate) struct Conversation {
    pub(crate) session: Session,
    pub(crate) state: Arc<AsyncMutex<ConvState>>,
    /// SHA-256 of the client's `Authorization` header (empty when none).
    owner: [u8; 32],
    last_active: Mutex<Instant>,
}

impl Conversation {
    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(
            *self
                .last_active
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Shuts the session down once (no-op when it never started or is
    /// already closed).
    pub(crate) async fn close(&self, reason: ShutdownReason) {
        let mut state = self.state.lock().await;
        if state.closed || state.startup == Startup::Fresh {
            state.closed = true;
            return;
        }
        state.closed = true;
        if let Err(e) = self.session.shutdown(reason).await {
            tracing::warn!(session = self.session.id(), error = %e, "agent_shutdown failed");
        }
    }
}

/// The conversation table.
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Conversation>>>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    pub(crate) fn new(max: usize, idle: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max,
            idle,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Conversation>>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many conversations are open.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// The conversation `id`, opened when new. A conversation opened with
    /// another client credential is refused: a session id is not a
    /// capability.
    pub(crate) fn get_or_open(
        &self,
        host: &Host,
        id: &str,
        owner: [u8; 32],
    ) -> Result<Arc<Conversation>, Error> {
        let mut map = self.map();
        if let Some(c) = map.get(id) {
            if c.owner != owner {
                return Err(Error::Denied {
                    point: hookwire::InterceptionPoint::AgentStartup,
                    reason: "hookwire:session_owned_by_another_client".into(),
                });
            }
            c.touch();
            return Ok(c.clone());
        }
        if map.len() >= self.max {
            return Err(Error::Overloaded(self.max));
        }
        let conv = Arc::new(Conversation {
            session: host.session(id)?,
            state: Arc::new(AsyncMutex::new(ConvState {
                startup: Startup::Fresh,
                seen: 0,
                turn_open: false,
                pending: HashMap::new(),
                rewrites: HashMap::new(),
                closed: false,
            })),
            owner,
            last_active: Mutex::new(Instant::now()),
        });
        map.insert(id.to_owned(), conv.clone());
        Ok(conv)
    }

    /// Marks the conversation active (after a request finished).
    pub(crate) fn touch(&self, conv: &Conversation) {
        conv.touch();
    }

    /// Removes conversation `id` when `owner` opened it.
    pub(crate) fn remove(&self, id: &str, owner: [u8; 32]) -> Option<Arc<Conversation>> {
        let mut map = self.map();
        match map.get(id) {
            Some(c) if c.owner == owner => map.remove(id),
            _ => None,
        }
    }

    /// Removes a conversation that was closed while a request held it
    /// (its session can take nothing more).
    pub(crate) fn forget(&self, id: &str, conv: &Arc<Conversation>) {
        let mut map = self.map();
        if map.get(id).is_some_and(|c| Arc::ptr_eq(c, conv)) {
            map.remove(id);
        }
    }

    /// Removes every conversation idle past the timeout and not in use.
    pub(crate) fn take_idle(&self) -> Vec<Arc<Conversation>> {
        let now = Instant::now();
        let mut map = self.map();
        let idle: Vec<String> = map
            .iter()
            .filter(|(_, c)| c.idle_for(now) >= self.idle && c.state.try_lock().is_ok())
            .map(|(k, _)| k.clone())
            .collect();
        idle.iter().filter_map(|k| map.remove(k)).collect()
    }

    /// Removes every conversation.
    pub(crate) fn take_all(&self) -> Vec<Arc<Conversation>> {
        self.map().drain().map(|(_, c)| c).collect()
    }
}
