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
//! whose pre-tool call is not open is emitted unpaired
//! (`extensions.agent_hooks.unpaired`). Every one of them is recorded;
//! none is a silent allow.
//!
//! Verdicts: a permit proceeds; a rewrite the agent cannot apply blocks
//! (an unapplied transform must not pass); a liftable deny left standing
//! by the host (no approval resolver declared, or the resolver did not
//! lift it) becomes the agent's `ask` at a pre-tool event when configured
//! ([`Liftable::Ask`]) and the agent has one, else a block. Any error
//! blocks, naming it.

mod table;

use std::sync::Arc;
use std::time::Duration;

use hookwire::Decision;
use hookwire_client::{Emission, Host, InputRole, Session, ShutdownReason, ToolCall, ToolResult};
use serde_json::{Map, Value, json};

use crate::agents::Agent;
use crate::error::Error;
use crate::event::{Event, HookCall, Outcome};
use crate::metrics::HooksMetrics;
use table::Table;

/// The longest agent `session_id` accepted, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// The `extensions` namespace of the members this crate adds to contexts.
const NAMESPACE: &str = "agent_hooks";

/// What a liftable deny that the host left standing becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Liftable {
    /// A block, like any deny.
    #[default]
    Deny,
    /// The agent's own `ask` where it has one (the human at the
    /// terminal decides), else a block.
    Ask,
}

/// The core's settings.
#[derive(Debug, Clone)]
pub struct HooksConfig {
    /// The most agent sessions open at once; an event of one more fails
    /// closed.
    pub max_sessions: usize,
    /// An agent session with no event for this long is shut down
    /// (`agent_shutdown`, `completed`): how agents without a session-end
    /// event are closed.
    pub idle_timeout: Duration,
    /// What a standing liftable deny becomes.
    pub liftable: Liftable,
}

impl Default for HooksConfig {
    fn default() -> Self {
        Self {
            max_sessions: 1024,
            idle_timeout: Duration::from_secs(3600),
            liftable: Liftable::Deny,
        }
    }
}

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
            table: Table::new(config.max_sessions.max(1)),
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

    /// Governs one hook call. Never fails: what cannot be governed is
    /// blocked, with the reason.
    pub async fn handle(&self, agent: Agent, call: &HookCall) -> Outcome {
        match self.govern(agent, call).await {
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

    async fn govern(&self, agent: Agent, call: &HookCall) -> Result<Outcome, Error> {
        check_session_id(agent, &call.session_id)?;
        let key = Self::session_key(agent, &call.session_id);
        if call.event == Event::SessionEnd {
            if let Some(entry) = self.table.remove(&key) {
                let _held = entry.turn.lock().await;
                close(&entry.session, ShutdownReason::Completed).await;
            }
            return Ok(Outcome::Proceed);
        }
        let entry = self.table.get_or_open(&self.host, agent, &key)?;
        let _held = entry.turn.lock().await;
        let turn = Turn {
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

    /// Shuts down every session idle past the timeout; returns how many.
    pub async fn reap_idle(&self) -> usize {
        let idle = self.table.take_idle(self.config.idle_timeout);
        for entry in &idle {
            let _held = entry.turn.lock().await;
            close(&entry.session, ShutdownReason::Completed).await;
        }
        idle.len()
    }

    /// Shuts down every open session (the daemon is stopping).
    pub async fn shutdown_all(&self) {
        for entry in self.table.take_all() {
            let _held = entry.turn.lock().await;
            close(&entry.session, ShutdownReason::Cancelled).await;
        }
    }

    /// Runs [`HooksHost::reap_idle`] periodically until the host is
    /// dropped by everyone else.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let period = (self.config.idle_timeout / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                let Some(host) = weak.upgrade() else { return };
                host.reap_idle().await;
            }
        })
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

/// Emits `agent_shutdown` unless the session never started or is closed.
async fn close(session: &Session, reason: ShutdownReason) {
    if !session.is_started() || session.is_closed() {
        return;
    }
    if let Err(e) = session.shutdown(reason).await {
        tracing::warn!(session = session.id(), error = %e, "agent_shutdown failed");
    }
}

/// One hook call being governed in its session (whose lock is held).
struct Turn<'a> {
    session: &'a Session,
    agent: Agent,
    call: &'a HookCall,
    config: &'a HooksConfig,
}

impl Turn<'_> {
    /// The `extensions.agent_hooks` members of this call's emissions.
    fn extra(&self, marker: Option<(&str, String)>) -> Map<String, Value> {
        let mut ns = Map::new();
        ns.insert("agent".into(), self.agent.name().into());
        ns.insert("event".into(), self.call.event_name.clone().into());
        if let Some(cwd) = &self.call.cwd {
            ns.insert("cwd".into(), cwd.clone().into());
        }
        if let Some((name, cause)) = marker {
            ns.insert(name.into(), cause.into());
        }
        let mut ext = Map::new();
        ext.insert(NAMESPACE.into(), Value::Object(ns));
        let mut m = Map::new();
        m.insert("extensions".into(), Value::Object(ext));
        m
    }

    async fn govern(&self) -> Result<Outcome, Error> {
        let caps = self.agent.capabilities();
        if let Event::SessionStart { .. } = &self.call.event {
            if !self.session.is_started() {
                let e = self.session.start(Vec::<String>::new()).await?;
                if !e.proceeds() {
                    return Ok(Outcome::Stop {
                        reason: reason_of(&e, "agent_startup"),
                    });
                }
            }
            // A resumed, cleared or compacted session keeps its hookwire
            // session: no second startup.
            return Ok(match self.session.startup_denial() {
                Some(r) => Outcome::Stop {
                    reason: format!("hookwire: agent_startup denied: {r}"),
                },
                None => Outcome::Proceed,
            });
        }
        if let Some(blocked) = self.ensure_started().await? {
            return Ok(blocked);
        }
        match &self.call.event {
            Event::Prompt { prompt } => {
                // A prompt while a turn is open: the earlier turn ended
                // without a stop event (interrupted).
                self.session.end_turn();
                let content = Value::String(prompt.clone());
                let e = self
                    .session
                    .input_with(content.clone(), InputRole::User, self.extra(None))
                    .await?;
                // The input point's target is `{content, role}`.
                let original = json!({"content": content, "role": InputRole::User});
                Ok(
                    match self.settle(&e, "input", &original, caps.rewrite_prompt, false) {
                        Outcome::Rewrite(t) => match t.get("content") {
                            Some(Value::String(p)) => Outcome::Rewrite(Value::String(p.clone())),
                            _ => unapplied(self.agent, "input"),
                        },
                        other => other,
                    },
                )
            }
            Event::PreTool { id, name, input } => {
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                let call = ToolCall::new(id.clone(), name.clone(), input.clone());
                let e = self
                    .session
                    .pre_tool_call_with(&call, self.extra(None))
                    .await?;
                Ok(self.settle(
                    &e,
                    "pre_tool_call",
                    input,
                    caps.rewrite_tool_input,
                    caps.ask,
                ))
            }
            Event::PostTool {
                id,
                name,
                input,
                response,
                is_error,
            } => {
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                let result = ToolResult {
                    value: response.clone(),
                    is_error: *is_error,
                };
                let e = match self.session.open_tool_call(id) {
                    Some(call) => {
                        self.session
                            .post_tool_call_with(&call, &result, self.extra(None))
                            .await?
                    }
                    None => {
                        let mut members = self.extra(Some((
                            "unpaired",
                            "no permitted pre_tool_call is open for this tool use".into(),
                        )));
                        members.insert(
                            "tool_call".into(),
                            json!({"id": id, "name": name, "args": input}),
                        );
                        members.insert(
                            "tool_result".into(),
                            json!({"value": response, "is_error": is_error}),
                        );
                        self.session
                            .emit(hookwire::InterceptionPoint::PostToolCall, members)
                            .await?
                    }
                };
                Ok(self.settle(
                    &e,
                    "post_tool_call",
                    response,
                    caps.rewrite_tool_output,
                    false,
                ))
            }
            Event::Stop { message } => {
                if let Some(blocked) = self.ensure_turn().await? {
                    return Ok(blocked);
                }
                let d = self
                    .session
                    .output_with(message.clone(), self.extra(None))
                    .await?;
                let reason = d.reason().map(str::to_owned);
                let liftable = d.verdict().is_liftable();
                let transformed = d.verdict().decision == Decision::Transform;
                Ok(match d.release() {
                    Ok(released) if released == *message => Outcome::Proceed,
                    // The answer has been written already: the stop hook
                    // cannot rewrite it.
                    Ok(_) => unapplied(self.agent, "output"),
                    Err(_) if transformed => unapplied(self.agent, "output"),
                    Err(_) => Outcome::Block {
                        reason: denied("output", reason.as_deref(), liftable),
                    },
                })
            }
            Event::SessionStart { .. } | Event::SessionEnd => Ok(Outcome::Proceed),
        }
    }

    /// Emits the synthetic `agent_startup` of a session whose first event
    /// is not its start; `Some` block when the session cannot take events.
    async fn ensure_started(&self) -> Result<Option<Outcome>, Error> {
        if !self.session.is_started() {
            let e = self.session.start(Vec::<String>::new()).await?;
            if !e.proceeds() {
                return Ok(Some(Outcome::Block {
                    reason: format!(
                        "hookwire: agent_startup (synthetic, {} came first) denied: {}",
                        self.call.event_name,
                        reason_of(&e, "agent_startup")
                    ),
                }));
            }
        }
        if let Some(r) = self.session.startup_denial() {
            return Ok(Some(Outcome::Block {
                reason: format!("hookwire: agent_startup denied: {r}"),
            }));
        }
        Ok(None)
    }

    /// Opens a turn with a synthetic `input` when none is open; `Some`
    /// block when that input is denied.
    async fn ensure_turn(&self) -> Result<Option<Outcome>, Error> {
        if self.session.is_turn_open() {
            return Ok(None);
        }
        let cause = format!("{} arrived with no open turn", self.call.event_name);
        let content = Value::String(format!("hookwire: {cause}"));
        let e = self
            .session
            .input_with(
                content,
                InputRole::External,
                self.extra(Some(("synthetic", cause))),
            )
            .await?;
        if e.proceeds() {
            return Ok(None);
        }
        Ok(Some(Outcome::Block {
            reason: format!(
                "hookwire: the synthetic input opening a turn for {} was denied: {}",
                self.call.event_name,
                reason_of(&e, "input")
            ),
        }))
    }

    /// The outcome of a permit or deny at `point` whose target was
    /// `original`.
    fn settle(
        &self,
        e: &Emission,
        point: &str,
        original: &Value,
        can_rewrite: bool,
        can_ask: bool,
    ) -> Outcome {
        if e.proceeds() {
            return match e.target() {
                Some(t) if t != original => {
                    if can_rewrite {
                        Outcome::Rewrite(t.clone())
                    } else {
                        unapplied(self.agent, point)
                    }
                }
                _ => Outcome::Proceed,
            };
        }
        let liftable = e.verdict().is_liftable();
        let reason = denied(point, e.reason(), liftable);
        if liftable && can_ask && self.config.liftable == Liftable::Ask {
            Outcome::Ask { reason }
        } else {
            Outcome::Block { reason }
        }
    }
}

/// The block of a rewrite the agent cannot apply.
fn unapplied(agent: Agent, point: &str) -> Outcome {
    Outcome::Block {
        reason: format!(
            "hookwire: the verdict at {point} rewrites what {} cannot rewrite from this hook; blocked instead",
            agent.name()
        ),
    }
}

/// The text of a deny at `point`.
fn denied(point: &str, reason: Option<&str>, liftable: bool) -> String {
    let reason = reason.unwrap_or("no reason given");
    if liftable {
        format!("hookwire: denied at {point} pending approval: {reason}")
    } else {
        format!("hookwire: denied at {point}: {reason}")
    }
}

/// An emission's reason, or the point's name.
fn reason_of(e: &Emission, point: &str) -> String {
    e.reason()
        .map_or_else(|| format!("denied at {point}"), str::to_owned)
}

#[cfg(test)]
mod tests;
