//! Opening a session with its own configuration: [`SessionBuilder`], from
//! [`Host::session_builder`](crate::Host::session_builder).
//!
//! §8 selects the mode "per session or per interception point" and §7.2
//! lets a host declare its profiles per session or per point; a session
//! may therefore override the host's mode and composition, as a whole or
//! at one point. What is not overridden is the host's. A declared host is
//! sealed (§7.7.7): its sessions take no overrides.

use std::sync::Arc;

use hookwire::{Composition, InterceptionPoint, Mode};
use serde_json::{Map, Value};

use super::handle::Session;
use super::order::OrderOptions;
use super::overrides::Overrides;
use crate::error::Error;
use crate::host_state::HostState;

/// Opens a session with its own members, mode or composition;
/// [`SessionBuilder::open`] checks and opens it.
#[must_use = "a session builder does nothing until opened"]
pub struct SessionBuilder {
    host: Arc<HostState>,
    id: String,
    members: Map<String, Value>,
    overrides: Overrides,
    order: OrderOptions,
}

impl SessionBuilder {
    pub(crate) fn new(host: Arc<HostState>, id: String) -> Self {
        Self {
            host,
            id,
            members: Map::new(),
            overrides: Overrides::default(),
            order: OrderOptions::default(),
        }
    }

    /// Context members every emission carries (`trace`, `tenant`, `actor`,
    /// `extensions`, ...; §4.5–§4.6).
    pub fn members(mut self, members: Map<String, Value>) -> Self {
        self.members = members;
        self
    }

    /// The session's mode, instead of the host's (§8).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.overrides.mode = Some(mode);
        self
    }

    /// The mode at one point, over the session's and the host's (§8).
    pub fn mode_at(mut self, point: InterceptionPoint, mode: Mode) -> Self {
        self.overrides.mode_at.insert(point, mode);
        self
    }

    /// The session's composition, instead of the host's (§7.2).
    pub fn composition(mut self, composition: Composition) -> Self {
        self.overrides.composition = Some(composition);
        self
    }

    /// The composition at one point, over the session's and the host's.
    pub fn composition_at(mut self, point: InterceptionPoint, composition: Composition) -> Self {
        self.overrides.composition_at.insert(point, composition);
        self
    }

    /// Keeps each call a `pre_tool_call` permitted, with its arguments as
    /// governed, until its `post_tool_call`, for
    /// [`Session::open_tool_call`]: what a host needs that is not the one
    /// running the tool (a proxy or a hook daemon answering the post in a
    /// later request). Off by default, since it copies every permitted
    /// call's arguments; it changes no verdict, so a sealed host allows it.
    pub fn remember_calls(mut self) -> Self {
        self.order.remember_calls = true;
        self
    }

    /// Declares a session without turns: a host that sees only an agent's
    /// tool calls (an MCP proxy) opens it. Its `pre_tool_call` needs no
    /// `input` before it, while each `post_tool_call` still needs its own
    /// permitted `pre_tool_call` and a call id is not reused while its
    /// pair is open (§3.1 rule 5, §12.2); `input`, the model points and
    /// `output` are refused ([`Error::OutOfOrder`]). It changes no
    /// verdict, so a sealed host allows it.
    pub fn tool_calls_only(mut self) -> Self {
        self.order.tool_calls_only = true;
        self
    }

    /// Opens the session. Refused for an empty id, and for overrides on a
    /// declared host, whose configuration is sealed (§7.7.7).
    pub fn open(self) -> Result<Session, Error> {
        if self.id.is_empty() {
            return Err(Error::EmptySessionId);
        }
        if self.host.declaration.is_some() && !self.overrides.is_empty() {
            return Err(Error::SealedHost(self.id));
        }
        Ok(Session::new(
            self.host,
            self.id,
            self.members,
            self.overrides,
            self.order,
        ))
    }
}
