//! The hooks of coding agents served by the gateway in its own process
//! (`hookwire gateway --hooks-token-file`), sharing one hookwire session
//! per agent session with the gateway.
//!
//! Where an agent's hook cannot withhold a tool result from the model
//! (Claude Code's `PostToolUse` block does not remove it), the gateway on
//! the agent's model route can. With [`SharedHooks`], the gateway serves
//! the hooks daemon's routes (`POST /v1/hooks/{agent}`, bearer token of
//! their own) over the same host, and a model request naming an agent
//! session the hooks hold open (Claude Code's `x-claude-code-session-id`,
//! Codex's `session-id`) is governed in that very session:
//!
//! - the hooks govern the session's lifecycle, its prompts (`input`), its
//!   tool calls (`pre_tool_call`, `post_tool_call`) and its answers
//!   (`output`); the gateway emits the model points (`pre_model_call`,
//!   `post_model_call`) in between, holding the session's events off while
//!   it does, so one record trail holds every point in order;
//! - a tool result whose `post_tool_call` a hook decided gets that
//!   decision, not a second one: withheld, the blocked notice stands in
//!   for it in the model request; released, it goes as it is. A result no
//!   hook decided is governed by the gateway in the same session, as any
//!   result it never saw (`pre_tool_call` when no call is open, then
//!   `post_tool_call`);
//! - a model request that names no open agent session is the gateway's
//!   own conversation, governed whole as always.

use std::sync::Arc;

use axum::Router;
use hookwire_hooks::HooksHost;

use crate::error::Error;

/// The hooks daemon the gateway serves beside its model routes, sharing
/// its agent sessions with them. Cheap to clone; its token is never
/// printed.
#[derive(Clone)]
pub struct SharedHooks {
    pub(crate) host: Arc<HooksHost>,
    token: String,
}

impl std::fmt::Debug for SharedHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedHooks")
            .field("open_sessions", &self.host.open_sessions())
            .field("token", &"[redacted]")
            .finish()
    }
}

impl SharedHooks {
    /// The hooks host `host` (built over the gateway's own host, so that
    /// both emit into the same sessions and record sinks), its routes open
    /// to callers presenting `token`.
    pub fn new(host: Arc<HooksHost>, token: impl Into<String>) -> Self {
        Self {
            host,
            token: token.into(),
        }
    }

    /// The hooks host.
    pub fn host(&self) -> &Arc<HooksHost> {
        &self.host
    }

    /// The hook routes, token-checked by the hooks crate itself.
    pub(crate) fn routes(&self) -> Result<Router, Error> {
        hookwire_hooks::router(self.host.clone(), &self.token)
            .and_then(hookwire_hooks::Routes::into_router)
            .map_err(|e| Error::Config(format!("the hook routes: {e}")))
    }
}
