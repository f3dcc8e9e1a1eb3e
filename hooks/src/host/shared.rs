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
//!
//! A name is no credential: a session is lent only to the principal it
//! is bound to (its [`Owner`]), by the rule the gateway states ([`Join`]).
//! A request naming an open session of someone else, or naming one
//! without a credential, is [`Joined::Refused`] — never lent, and never
//! a conversation of its own under that name either.

use std::sync::Arc;

use hookwire_client::Session;
use tokio::sync::OwnedMutexGuard;

use super::owner::Owner;
use super::table::{DecidedResult, Entry};

/// The header in which Claude Code's model requests carry its session id.
pub const CLAUDE_CODE_SESSION_HEADER: &str = "x-claude-code-session-id";
/// The header in which Codex's model requests carry its session id.
pub const CODEX_SESSION_HEADER: &str = "session-id";

/// Which model-route principal may join an agent session: the gateway
/// states it by how it authenticates its model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// Only the session's owner: the model route and the hook routes
    /// authenticate the same principals (a gateway with a clients file,
    /// whose client tokens the hook routes accept). A session opened with
    /// the daemon's own token is joined by nobody.
    Owner,
    /// The session's owner, and for a session opened with the daemon's
    /// own token ([`Owner::TOKEN_HOLDER`], no identity on the model
    /// route), the first credential that joins it, and then only that
    /// one (a gateway without a clients file, on loopback).
    FirstCredential,
}

/// What a model request's session header found.
#[derive(Debug)]
pub enum Joined {
    /// The request names no agent session the hooks hold open: a
    /// conversation of the gateway's own.
    NotShared,
    /// The request's principal may join the session: governed in it.
    Shared(SharedSession),
    /// The request names an open agent session its principal may not
    /// join (another owner's, or no credential): refused.
    Refused {
        /// The hookwire `session.id` named (`AGENT:SESSION_ID`).
        key: String,
    },
}

/// One open agent session, lent to the gateway for a model request.
pub struct SharedSession {
    /// The hookwire `session.id` it is.
    pub(super) key: String,
    /// The hooks' table entry holding it.
    pub(super) entry: Arc<Entry>,
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

/// Whether `who` may join the session of `entry` by `rule` (binding the
/// first credential when the rule says so).
pub(super) fn may_join(entry: &Entry, who: Option<Owner>, rule: Join) -> bool {
    let Some(who) = who else { return false };
    if who == entry.owner {
        return true;
    }
    if rule != Join::FirstCredential || !entry.owner.is_token_holder() {
        return false;
    }
    let mut joiner = entry
        .joiner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match *joiner {
        Some(bound) => bound == who,
        None => {
            *joiner = Some(who);
            true
        }
    }
}
