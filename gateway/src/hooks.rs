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
//!
//! A session id is a name, not a credential: each agent session is bound
//! to the principal whose hook opened it, and only that principal's
//! model requests join it. With a clients file, the hook routes accept
//! the clients' tokens (the token each agent also sends as its API key)
//! beside the hooks token, and a session belongs to the client whose
//! token its hooks presented; a model request of another client naming
//! it is refused `403` in its API's error shape (one opened with the
//! hooks token is joined by no client). Without a clients file the
//! gateway serves the hook routes on loopback only, and a session opened
//! with the hooks token is bound to the first API key a model request
//! joins it with: a request with another key, or with none, is refused
//! `403`.

use std::sync::Arc;

use axum::Router;
use axum::http::HeaderMap;
use hookwire_edge::clients::WatchedClients;
use hookwire_hooks::{HooksHost, Join, Joined, Owner, SharedSession};

use crate::error::Error;
use crate::principal;

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

    /// The hook routes, token-checked by the hooks crate itself: the
    /// hooks token, and with `clients` each client's token too (the
    /// client then owns the sessions its hooks open).
    pub(crate) fn routes(&self, clients: Option<Arc<WatchedClients>>) -> Result<Router, Error> {
        let routes = match clients {
            None => hookwire_hooks::router(self.host.clone(), &self.token),
            Some(clients) => {
                let others: hookwire_hooks::Authenticate = Arc::new(move |token: &str| {
                    // An unreadable clients file admits nobody (the model
                    // routes log it).
                    let name = clients.authenticate(token).ok().flatten()?;
                    Some(Owner::new(principal::owner_of_client(&name)))
                });
                hookwire_hooks::router_with(self.host.clone(), &self.token, others)
            }
        };
        routes
            .and_then(hookwire_hooks::Routes::into_router)
            .map_err(|e| Error::Config(format!("the hook routes: {e}")))
    }

    /// The agent session a model request of `owner` names, when the
    /// hooks hold it open (`None`: the request is a conversation of the
    /// gateway's own); refused when `owner` may not join it. With
    /// `clients`, only the client that owns it may; without, the first
    /// API key that joined a session of the hooks token's.
    pub(crate) fn join(
        &self,
        headers: &HeaderMap,
        owner: &principal::Owner,
        clients: bool,
    ) -> Result<Option<SharedSession>, Error> {
        let who = (*owner != principal::owner_of_credential(None)).then(|| Owner::new(*owner));
        let rule = if clients {
            Join::Owner
        } else {
            Join::FirstCredential
        };
        match self.host.join_session(headers, who, rule) {
            Joined::NotShared => Ok(None),
            Joined::Shared(s) => Ok(Some(s)),
            Joined::Refused { key } => {
                tracing::warn!(target: "hookwire_gateway::access", session = %key, "model request refused: the agent session is another principal's");
                Err(Error::NotOwner(key))
            }
        }
    }
}
