//! An agent session shared with the gateway of the same process: when
//! `hookwire gateway` serves the hook routes too, the model requests of
//! an agent session are governed in the very hookwire session its hooks
//! use, so that one record trail holds the session's points in order and
//! a tool result the hook saw denied is withheld from the model request
//! by the gateway (where the agent's hook cannot withhold it).
//!
//! A model request names its agent session in a header the agent sends
//! on its own (measured from the CLIs): Claude Code's
//! `x-claude-code-session-id`, Codex's `session-id`, each the
//! `session_id` of its hook payloads. Only a session the hooks hold open
//! is shared; any other request is the gateway's own.

use std::sync::Arc;

use axum::http::HeaderMap;
use hookwire_client::Session;
use tokio::sync::OwnedMutexGuard;

use super::HooksHost;
use super::table::{DecidedResult, Entry};
use crate::agents::Agent;

/// The header in which Claude Code's model requests carry its session id.
pub const CLAUDE_CODE_SESSION_HEADER: &str = "x-claude-code-session-id";
/// The header in which Codex's model requests carry its session id.
pub const CODEX_SESSION_HEADER: &str = "session-id";

/// One open agent session, lent to the gateway for a model request.
pub struct SharedSession {
    key: String,
    entry: Arc<Entry>,
}

impl std::fmt::Debug for SharedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSession")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl SharedSession {
    /// The hookwire `session.id` (`AGENT:SESSION_ID`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The hookwire session the hooks emit in.
    pub fn session(&self) -> &Arc<Session> {
        &self.entry.session
    }

    /// Waits until no hook event of the session is being governed and
    /// holds the session's events off until the guard is dropped, so that
    /// the hooks' and the gateway's emissions never interleave.
    pub async fn hold(&self) -> OwnedMutexGuard<()> {
        self.entry.turn.clone().lock_owned().await
    }

    /// What a hook's `post_tool_call` decided for the result of tool use
    /// `id` in this session, when a hook governed it.
    pub fn decided_result(&self, id: &str) -> Option<DecidedResult> {
        self.entry.decided_result(id)
    }
}

impl HooksHost {
    /// Whether the hooks hold the hookwire session `key` open (so that no
    /// other conversation may take its id).
    pub fn holds_session(&self, key: &str) -> bool {
        self.table.contains(key)
    }

    /// The open agent session a model request belongs to, by the header
    /// its agent names it in ([`CLAUDE_CODE_SESSION_HEADER`],
    /// [`CODEX_SESSION_HEADER`]); `None` when the request names none or
    /// the hooks hold no such session open.
    pub fn shared_session(&self, headers: &HeaderMap) -> Option<SharedSession> {
        [
            (CLAUDE_CODE_SESSION_HEADER, Agent::ClaudeCode),
            (CODEX_SESSION_HEADER, Agent::Codex),
        ]
        .into_iter()
        .find_map(|(name, agent)| {
            let id = headers.get(name)?.to_str().ok()?;
            let key = Self::session_key(agent, id);
            let entry = self.table.get(&key)?;
            (!entry.session.is_closed()).then_some(SharedSession { key, entry })
        })
    }
}
