//! The core: hook events of many agent sessions governed over one
//! long-lived hookwire [`Host`]. Each agent session (its agent and
//! `session_id`) has one hookwire session in a bounded table; its events
//! are emitted in order at the point each maps to, and each combined
//! verdict becomes an [`Outcome`] within what the agent can express.
//!
//! Out-of-order events (§3.1), e.g. after a daemon restart or from an
//! agent whose session-start hook is not configured: a session's first
//! event other than its start emits a synthetic `agent_startup` first; a
//! tool or stop event with no open turn emits a synthetic `input` (role
//! `external`, `extensions.agent_hooks.synthetic` naming the cause) that
//! opens one, and is blocked when that input is denied; a post-tool event
//! whose pre-tool call is not open is governed after a `pre_tool_call`
//! emitted for it then, both marked `extensions.agent_hooks.unpaired` (a
//! deny there withholds the result), so no post is emitted without its
//! pre. Every one of them is recorded; none is a silent allow.
//!
//! Verdicts: a permit proceeds; a rewrite the agent cannot apply blocks
//! (an unapplied transform must not pass); a liftable deny left standing
//! by the host (no approval resolver declared, or the resolver did not
//! lift it) becomes the agent's `ask` at a pre-tool event when configured
//! ([`Liftable::Ask`]) and the agent has one, else a block. Any error
//! blocks, naming it. A deny the agent cannot enforce (a prompt or a tool
//! result it cannot stop) quarantines the rest of the turn (`turn`).
//!
//! | module | role |
//! |---|---|
//! | `config` | the core's settings ([`HooksConfig`], [`Liftable`]) |
//! | `answer` | what a verdict becomes in an agent's answer: the block texts, the `extensions` namespace |
//! | `owner` | the principal an agent session is bound to |
//! | `table` | the bounded table of agent sessions and their turn state |
//! | `turn` | one hook call governed: emission, synthetic order, outcome |
//! | `model` | the model events: a request and its streamed chunks |
//! | `shared` | an agent session lent to the gateway of the same process for its model requests |

mod answer;
mod config;
mod model;
mod owner;
mod shared;
mod table;
mod turn;

pub use config::{HooksConfig, Liftable};
pub use owner::Owner;
use shared::may_join;
pub use shared::{CLAUDE_CODE_SESSION_HEADER, CODEX_SESSION_HEADER, Join, Joined, SharedSession};
pub use table::{DecidedResult, MAX_DECIDED_RESULTS};

use std::sync::Arc;

use axum::http::HeaderMap;

use hookwire_client::{Host, ShutdownReason};

use crate::agents::Agent;
use crate::error::Error;
use crate::event::{Event, HookCall, Outcome};
use crate::metrics::HooksMetrics;
use table::{Table, close};
use turn::Turn;

/// The longest agent `session_id` accepted, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// The long-lived hooks host.
pub struct HooksHost {
    host: Host,
    table: Table,
    config: HooksConfig,
    metrics: Option<HooksMetrics>,
}

impl HooksHost {
    /// A hooks host over `host`.
    pub fn new(host: Host, config: HooksConfig) -> Self {
        Self {
            host,
            table: Table::new(config.max_sessions.max(1), config.idle_timeout),
            config,
            metrics: None,
        }
    }

    /// Counts the daemon's series (open sessions, fail-closed answers,
    /// and, through the routes, every decision) in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: HooksMetrics) -> Self {
        self.table.set_metrics(metrics.clone());
        self.metrics = Some(metrics);
        self
    }

    /// The daemon's series, when counted.
    pub fn metrics(&self) -> Option<&HooksMetrics> {
        self.metrics.as_ref()
    }

    /// The settings in effect.
    pub fn config(&self) -> &HooksConfig {
        &self.config
    }

    /// How many agent sessions are open.
    pub fn open_sessions(&self) -> usize {
        self.table.len()
    }

    /// The hookwire `session.id` of an agent session.
    pub fn session_key(agent: Agent, session_id: &str) -> String {
        format!("{}:{session_id}", agent.name())
    }

    /// Governs one hook call of the daemon's token holder
    /// ([`Owner::TOKEN_HOLDER`]). Never fails: what cannot be governed is
    /// blocked, with the reason.
    pub async fn handle(&self, agent: Agent, call: &HookCall) -> Outcome {
        self.handle_as(agent, call, Owner::TOKEN_HOLDER).await
    }

    /// Governs one hook call of `owner`, the principal its credential
    /// authenticated: a session it opens is bound to it, and an event
    /// naming another owner's session is blocked without touching it.
    pub async fn handle_as(&self, agent: Agent, call: &HookCall, owner: Owner) -> Outcome {
        match self.govern(agent, call, owner).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(agent = agent.name(), event = %call.event_name, error = %e, "hook event failed closed");
                if let Some(m) = &self.metrics {
                    m.failed_closed(agent, &e);
                }
                Outcome::Block {
                    reason: format!("hookwire: {e}"),
                }
            }
        }
    }

    async fn govern(&self, agent: Agent, call: &HookCall, owner: Owner) -> Result<Outcome, Error> {
        check_session_id(agent, &call.session_id)?;
        let key = Self::session_key(agent, &call.session_id);
        if call.event == Event::SessionEnd {
            if let Some(entry) = self.table.remove_owned(&key, owner)? {
                let _held = entry.turn.lock().await;
                close(&entry.session, ShutdownReason::Completed).await;
            }
            return Ok(Outcome::Proceed);
        }
        let entry = self
            .table
            .get_or_open(&self.host, agent, &key, owner)
            .await?;
        let _held = entry.turn.lock().await;
        let turn = Turn {
            entry: &entry,
            session: &entry.session,
            agent,
            call,
            config: &self.config,
        };
        let outcome = turn.govern().await;
        if entry.session.is_closed() {
            self.table.remove(&key);
        }
        outcome
    }

    /// Shuts down every session idle past the timeout (not in the middle
    /// of an event); returns how many.
    pub async fn reap_idle(&self) -> usize {
        self.table.reap_idle().await
    }

    /// Shuts down every open session (the daemon is stopping).
    pub async fn shutdown_all(&self) {
        self.table.shutdown_all().await;
    }

    /// Runs [`HooksHost::reap_idle`] periodically (every quarter of the
    /// idle timeout, within 10 ms and 30 s) until the table is dropped.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        self.table.spawn_reaper()
    }
}

impl HooksHost {
    /// Whether the hooks hold the hookwire session `key` open (so that no
    /// other conversation may take its id).
    pub fn holds_session(&self, key: &str) -> bool {
        self.table.contains(key)
    }

    /// The open agent session a model request of principal `who`
    /// (`None`: it presented no credential) belongs to, by the header its
    /// agent names it in ([`CLAUDE_CODE_SESSION_HEADER`],
    /// [`CODEX_SESSION_HEADER`]), when `who` may join it by `rule`.
    pub fn join_session(&self, headers: &HeaderMap, who: Option<Owner>, rule: Join) -> Joined {
        let named = [
            (CLAUDE_CODE_SESSION_HEADER, Agent::ClaudeCode),
            (CODEX_SESSION_HEADER, Agent::Codex),
        ]
        .into_iter()
        .find_map(|(name, agent)| {
            let id = headers.get(name)?.to_str().ok()?;
            let key = Self::session_key(agent, id);
            let entry = self.table.get(&key)?;
            (!entry.session.is_closed()).then_some((key, entry))
        });
        let Some((key, entry)) = named else {
            return Joined::NotShared;
        };
        if may_join(&entry, who, rule) {
            Joined::Shared(SharedSession { key, entry })
        } else {
            Joined::Refused { key }
        }
    }
}

/// Refuses a session id that is empty, too long or has control
/// characters.
fn check_session_id(agent: Agent, id: &str) -> Result<(), Error> {
    let bad = |reason: &str| Error::Payload {
        agent: agent.name(),
        reason: format!("`session_id` {reason}"),
    };
    if id.is_empty() {
        return Err(bad("is empty"));
    }
    if id.len() > MAX_SESSION_ID_BYTES {
        return Err(bad(&format!("exceeds {MAX_SESSION_ID_BYTES} bytes")));
    }
    if id.chars().any(char::is_control) {
        return Err(bad("has control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_agents;
#[cfg(test)]
mod tests_shared;
