//! Sessions: one run or conversation of the agent (§4.1 `session.id`).
//!
//! A session assigns each emission a `sequence` that starts at 0 on
//! `agent_startup` and strictly increases, atomically, however many
//! emissions run at once (§12.2). Emission takes `&self`, so parallel tool
//! calls and concurrent turns share one session. The lifecycle of §3.1 and
//! §6.1a is enforced: startup first, shutdown last (it waits for in-flight
//! emissions), nothing but shutdown after a denied startup. So is the
//! order of §3.1 rules 3–5 and §6.2 (module `order`), or the emission is
//! refused with [`Error::OutOfOrder`]: `pre_model_call`, `pre_tool_call`
//! and `output` need a turn that a permitting `input` opened (rule 3; the
//! turn's `output` closes it, [`Session::end_turn`] closes one that ends
//! without an output), and a `post_*` follows its own permitted `pre_*`
//! (rules 4–5). There is no opt-out on the typed methods: even a host
//! that declares a subset of the points keeps `input` (§3.2), so every
//! turn has one; [`Session::emit`] is the raw path that books without
//! refusing.
//!
//! The answer of a turn is gated (§12.1a): [`Session::output`] returns an
//! [`OutputDecision`] whose content is reachable only through
//! [`OutputDecision::release`], after the verdict is checked. A streamed
//! model response is mediated segment by segment by
//! [`Session::mediate_stream`] (§12.1's exception; see
//! [`IncrementalOutput`](crate::IncrementalOutput)).
//!
//! Mode and composition are the host's unless the session was opened
//! with overrides ([`SessionBuilder`], §7.2, §8).
//!
//! **Cancellation.** An emission takes its `sequence` before it awaits its
//! interceptors. If the caller drops the emission's future before the
//! record is delivered, a guard delivers a record for that sequence at
//! once: a deny `host_error:interceptor_timeout` (the caller stopped
//! waiting for the verdict), with `extensions.hookwire.cancelled: true`
//! and null identities. A record reader therefore never sees a gap, which
//! §12.2 would make record loss. The pending `pre_*` pair of a cancelled
//! emission is not booked: the action did not proceed.
//!
//! **Dropped without shutdown.** A started `Session` dropped without
//! [`Session::shutdown`] (an agent loop unwound by an error or a panic, a
//! task aborted) still ends its trail with `agent_shutdown` (§6.1a):
//! `Drop` hands the session's state to a task on the current Tokio
//! runtime, which emits `agent_shutdown` with reason `cancelled` (`error`
//! after a denied startup, as for an explicit shutdown) through the same
//! interceptors, composition and record sinks. The emission is
//! asynchronous: it is not awaited by the code that dropped the session,
//! and the open-sessions gauge falls when it completes. Two cases cannot
//! emit: a session dropped outside any Tokio runtime (there is nothing to
//! run the interceptors on; a `WARN` log line says so), and a runtime
//! that is itself shutting down, which cancels the task (an emission
//! already under way then leaves its cancellation record, as above). A session never started, or already shut down, emits nothing.

mod builder;
mod order;
mod output;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hookwire::json::InvalidJson;
use hookwire::{AgentContext, HostError, InterceptionPoint, InvalidContext, SPEC_VERSION};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::format_description;
use tokio::sync::RwLock;

pub(crate) use builder::Overrides;
pub use builder::SessionBuilder;
pub(crate) use order::PostModel;
pub use output::{OutputDecision, Withheld};

use crate::emission::Emission;
use crate::error::Error;
use crate::host_state::HostState;
use crate::payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
use crate::pipeline;
use order::Order;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Fresh,
    Running,
    StartupDenied,
    Closed,
}

/// One session of the agent. Emissions take `&self` and may run
/// concurrently; share the session behind an `Arc` across tasks.
pub struct Session {
    host: Arc<HostState>,
    id: String,
    session: Value,
    members: Map<String, Value>,
    overrides: Overrides,
    order: Mutex<Order>,
    next_sequence: AtomicU64,
    lifecycle: RwLock<Lifecycle>,
    /// Keeps the host's open-sessions gauge up while the session lives.
    _open: Option<crate::metrics::OpenSession>,
    /// Whether dropping the session unclosed emits `agent_shutdown`: false
    /// for the copy that emits it, so a cancelled attempt does not retry.
    shutdown_on_drop: bool,
}

impl Session {
    pub(crate) fn new(
        host: Arc<HostState>,
        id: String,
        mut members: Map<String, Value>,
        overrides: Overrides,
    ) -> Self {
        let mut session = match members.remove("session") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        session.insert("id".into(), Value::String(id.clone()));
        Self {
            _open: host.metrics.as_ref().map(|m| m.session_opened()),
            host,
            id,
            session: Value::Object(session),
            members,
            overrides,
            order: Mutex::new(Order::default()),
            next_sequence: AtomicU64::new(0),
            lifecycle: RwLock::new(Lifecycle::Fresh),
            shutdown_on_drop: true,
        }
    }

    /// `session.id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The mode `point` runs under in this session (§8).
    pub fn mode_at(&self, point: InterceptionPoint) -> hookwire::Mode {
        self.overrides.at(&self.host, point).mode
    }

    /// The composition `point` runs under in this session (§7.2), resolved.
    pub fn composition_at(&self, point: InterceptionPoint) -> hookwire::Composition {
        self.overrides.at(&self.host, point).composition.resolved()
    }

    /// `agent_startup` (§3): must come first. A denied startup closes the
    /// session to everything but [`Session::shutdown`].
    pub async fn start<S: Into<String>>(
        &self,
        tools_registered: impl IntoIterator<Item = S>,
    ) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        if *state != Lifecycle::Fresh {
            return Err(Error::AlreadyStarted(self.id.clone()));
        }
        let tools: Vec<String> = tools_registered.into_iter().map(Into::into).collect();
        let e = self
            .run(
                InterceptionPoint::AgentStartup,
                one("agent_init", json!({"tools_registered": tools})),
            )
            .await;
        *state = if e.proceeds() {
            Lifecycle::Running
        } else {
            Lifecycle::StartupDenied
        };
        Ok(e)
    }

    /// `input`: an external request entering the session. A permitting
    /// verdict opens a turn (§3.1 rule 3), which `pre_model_call`,
    /// `pre_tool_call` and `output` need; when it is denied the turn does
    /// not begin.
    pub async fn input(&self, content: Value, role: InputRole) -> Result<Emission, Error> {
        self.checked(InterceptionPoint::Input, input_members(content, role))
            .await
    }

    /// `pre_model_call`: before a model request with `messages`. Refused
    /// ([`Error::OutOfOrder`]) outside a turn (§3.1 rule 3).
    pub async fn pre_model_call(&self, model_id: &str, messages: Value) -> Result<Emission, Error> {
        self.checked(
            InterceptionPoint::PreModelCall,
            pre_model_members(model_id, messages),
        )
        .await
    }

    /// `post_model_call`: after the model answered. Refused
    /// ([`Error::OutOfOrder`]) unless a permitted `pre_model_call` waits
    /// for it (§3.1 rule 4, §6.2).
    pub async fn post_model_call(
        &self,
        model_id: &str,
        response: &ModelResponse,
    ) -> Result<Emission, Error> {
        self.checked(
            InterceptionPoint::PostModelCall,
            post_model_members(model_id, response.to_json()),
        )
        .await
    }

    /// `post_model_call` over the model's response as the JSON text it
    /// arrived in, decoded exactly (§4.4): a text the host cannot carry
    /// without rounding (an integer literal beyond the 64-bit range, a
    /// duplicate member, malformed text) is the emission denied
    /// `host_error:context_invalid` before any interceptor runs, with null
    /// identities (§6.3), never a silently rounded context.
    pub async fn post_model_call_json(
        &self,
        model_id: &str,
        response_text: &str,
    ) -> Result<Emission, Error> {
        let point = InterceptionPoint::PostModelCall;
        match hookwire::json::decode(response_text) {
            Ok(response) => {
                self.checked(point, post_model_members(model_id, response))
                    .await
            }
            Err(e) => {
                let members = post_model_members(model_id, Value::Null);
                self.refused(point, members, &undecodable("response", &e))
                    .await
            }
        }
    }

    /// `pre_tool_call`: before invoking a tool. Invoke it with
    /// [`Emission::target`] as the arguments (transforms applied). Refused
    /// while an earlier `pre_tool_call` with the same id waits for its
    /// post (§12.2), and outside a turn (§3.1 rule 3).
    pub async fn pre_tool_call(&self, call: &ToolCall) -> Result<Emission, Error> {
        self.checked(InterceptionPoint::PreToolCall, pre_tool_members(call))
            .await
    }

    /// `post_tool_call`: after the tool returned. `call.args` must be the
    /// arguments the tool actually received (§4.2). Refused
    /// ([`Error::OutOfOrder`]) unless the `pre_tool_call` with the same id
    /// completed and permitted the call (§3.1 rule 5, §6.2).
    pub async fn post_tool_call(
        &self,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<Emission, Error> {
        self.checked(
            InterceptionPoint::PostToolCall,
            post_tool_members(call, result),
        )
        .await
    }

    /// `output`: before the final response reaches the caller. The
    /// verdicted content is reachable only through
    /// [`OutputDecision::release`], which refuses it unless the verdict
    /// permits (§12.1a). Refused ([`Error::OutOfOrder`]) outside a turn;
    /// closes its turn whatever the verdict (§3.1 rule 3), so the next
    /// turn needs the next `input`.
    pub async fn output(&self, content: Value) -> Result<OutputDecision, Error> {
        self.checked(InterceptionPoint::Output, output_members(content))
            .await
            .map(OutputDecision::new)
    }

    /// Ends the current turn without an `output`, for a turn that stopped
    /// early (blocked or failed at a model or tool point): what follows
    /// needs the next `input` (§3.1 rule 3). No emission; a no-op when no
    /// turn is open.
    pub fn end_turn(&self) {
        self.order().end_turn();
    }

    /// `agent_shutdown` (§3): waits for in-flight emissions, emits last, and
    /// closes the session. After a denied startup the reason is `error`
    /// whatever was asked (§6.1a).
    pub async fn shutdown(&self, reason: ShutdownReason) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        let reason = match *state {
            Lifecycle::Fresh => return Err(Error::NotStarted(self.id.clone())),
            Lifecycle::Closed => return Err(Error::Closed(self.id.clone())),
            Lifecycle::StartupDenied => ShutdownReason::Error,
            Lifecycle::Running => reason,
        };
        let e = self
            .run(
                InterceptionPoint::AgentShutdown,
                one("summary", json!({"reason": reason.as_str()})),
            )
            .await;
        *state = Lifecycle::Closed;
        Ok(e)
    }

    /// Emits any point between startup and shutdown with the given
    /// conditional and optional members (e.g. `request_id`, `usage`): the
    /// raw path. It books the §3.1 pairs like the typed methods but does
    /// not refuse an emission out of order, and an `output` emitted here
    /// is an ordinary [`Emission`], not the gated [`OutputDecision`]: the
    /// caller takes on §3.1 and §12.1a itself. `agent_startup` and
    /// `agent_shutdown` carry the lifecycle and are refused here
    /// ([`Error::LifecyclePoint`]): use [`Session::start`] and
    /// [`Session::shutdown`].
    pub async fn emit(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        self.admitted(point, members, PostModel::Closing, false)
            .await
    }

    /// An emission of a typed method: admitted only in order.
    pub(crate) async fn checked(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        self.admitted(point, members, PostModel::Closing, true)
            .await
    }

    /// One `post_model_call` of an incrementally mediated stream (§12.1):
    /// `Segment` keeps the pair with its `pre_model_call` open, `Closing`
    /// (the last emission of the stream) closes it.
    pub(crate) async fn stream_segment(
        &self,
        members: Map<String, Value>,
        post_model: PostModel,
    ) -> Result<Emission, Error> {
        self.admitted(InterceptionPoint::PostModelCall, members, post_model, true)
            .await
    }

    /// Closes the `pre_model_call` pair of a stream that a segment's deny
    /// terminated.
    pub(crate) fn close_model_pair(&self, members: &Map<String, Value>) {
        self.order().close_stream(members);
    }

    /// The host's own deny for an emission it built but must not settle
    /// clean (a stream's unevaluated residue, §12.1): admitted in order,
    /// recorded, never dispatched.
    pub(crate) async fn self_denied(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        error: HostError,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, PostModel::Closing, true)?;
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, members);
        Ok(pipeline::self_deny(&self.host, settings, ctx, error))
    }

    /// A context the host could not build from what it was given: denied
    /// `host_error:context_invalid` before dispatch (§6.3).
    async fn refused(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        error: &InvalidContext,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, PostModel::Closing, true)?;
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, members);
        Ok(pipeline::refuse(&self.host, settings, ctx, error))
    }

    async fn admitted(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, post_model, enforce)?;
        let e = self.run(point, members.clone()).await;
        self.order().settled(point, &members, e.proceeds());
        Ok(e)
    }

    /// Holds the lifecycle open for one emission between startup and
    /// shutdown (shutdown waits for it).
    async fn running(
        &self,
        point: InterceptionPoint,
    ) -> Result<tokio::sync::RwLockReadGuard<'_, Lifecycle>, Error> {
        if matches!(
            point,
            InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown
        ) {
            return Err(Error::LifecyclePoint {
                session: self.id.clone(),
                point,
            });
        }
        let state = self.lifecycle.read().await;
        match *state {
            Lifecycle::Running => Ok(state),
            Lifecycle::Fresh => Err(Error::NotStarted(self.id.clone())),
            Lifecycle::StartupDenied => Err(Error::StartupDenied(self.id.clone())),
            Lifecycle::Closed => Err(Error::Closed(self.id.clone())),
        }
    }

    fn admit(
        &self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<(), Error> {
        self.order()
            .admit(point, members, post_model, enforce)
            .map_err(|reason| Error::OutOfOrder {
                session: self.id.clone(),
                point,
                reason,
            })
    }

    fn order(&self) -> std::sync::MutexGuard<'_, Order> {
        // The ledger holds no invariant a panic could break half-way.
        self.order
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Builds the context (sequence assigned here, atomically) and runs it.
    /// If the caller drops the future before the record is delivered, the
    /// [`Unsettled`] guard delivers a cancellation record for the taken
    /// sequence, so a cancelled emission leaves no gap (§12.2 item 3).
    async fn run(&self, point: InterceptionPoint, conditional: Map<String, Value>) -> Emission {
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, conditional);
        let mut guard = Unsettled {
            session: self,
            settings,
            core: Some(CoreSource::of(self, &ctx)),
        };
        let emission = pipeline::run(&self.host, settings, ctx).await;
        // The record was delivered in the same poll that returned.
        guard.core = None;
        emission
    }

    /// The context of one emission: the core, the session's members, and
    /// the point's members (an `extensions` member is merged namespace by
    /// namespace into the session's).
    fn context(
        &self,
        point: InterceptionPoint,
        mut conditional: Map<String, Value>,
    ) -> AgentContext {
        let sequence = self.next_sequence.fetch_add(1, Ordering::SeqCst);
        let mut m = Map::with_capacity(8 + self.members.len() + conditional.len());
        m.insert("spec".into(), Value::from(SPEC_VERSION));
        m.insert("interception_point".into(), Value::from(point.as_str()));
        m.insert("timestamp".into(), Value::String(now_rfc3339()));
        m.insert("sequence".into(), Value::from(sequence));
        m.insert("agent".into(), Value::Object(self.host.agent.clone()));
        m.insert("session".into(), self.session.clone());
        for (k, v) in &self.members {
            m.insert(k.clone(), v.clone());
        }
        match (conditional.remove("extensions"), m.get_mut("extensions")) {
            (Some(Value::Object(add)), Some(Value::Object(base))) => merge_extensions(base, add),
            (Some(add), _) => {
                m.insert("extensions".into(), add);
            }
            (None, _) => {}
        }
        m.extend(conditional);
        AgentContext::from_members_unchecked(point, m)
    }
}

impl Drop for Session {
    /// Emits `agent_shutdown` for a started session that was not shut
    /// down (see the module docs, "Dropped without shutdown").
    fn drop(&mut self) {
        let lifecycle = *self.lifecycle.get_mut();
        if !self.shutdown_on_drop
            || !matches!(lifecycle, Lifecycle::Running | Lifecycle::StartupDenied)
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                session = %self.id,
                "session dropped without shutdown outside a Tokio runtime: no agent_shutdown emitted"
            );
            return;
        };
        let order = std::mem::take(match self.order.get_mut() {
            Ok(order) => order,
            Err(poisoned) => poisoned.into_inner(),
        });
        let orphan = Session {
            host: Arc::clone(&self.host),
            id: std::mem::take(&mut self.id),
            session: self.session.take(),
            members: std::mem::take(&mut self.members),
            overrides: std::mem::take(&mut self.overrides),
            order: Mutex::new(order),
            next_sequence: AtomicU64::new(*self.next_sequence.get_mut()),
            lifecycle: RwLock::new(lifecycle),
            _open: self._open.take(),
            shutdown_on_drop: false,
        };
        runtime.spawn(async move {
            if let Err(e) = orphan.shutdown(ShutdownReason::Cancelled).await {
                tracing::warn!(session = %orphan.id, error = %e, "agent_shutdown of a dropped session refused");
            }
        });
    }
}

/// An emission whose sequence is taken and whose record is not yet
/// delivered; dropped armed (its future cancelled), it delivers the
/// cancellation record ([`pipeline::cancelled`]).
struct Unsettled<'a> {
    session: &'a Session,
    settings: pipeline::Settings,
    /// Where the context's core members come from; `None` once the
    /// emission settled.
    core: Option<CoreSource>,
}

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            let core = core.build(self.session);
            pipeline::cancelled(&self.session.host, self.settings, core);
        }
    }
}

/// The core members a record needs (spec, point, timestamp, sequence,
/// agent, session, trace), kept as cheaply as an emission that settles
/// (nearly all of them) allows: a member equal to what the session itself
/// supplies is rebuilt from the session if the record is ever written; only
/// the others (the timestamp, the sequence, a `trace`, anything a caller's
/// members replaced) are copied. Copying the agent and session objects on
/// every emission cost more than the rest of the guard.
struct CoreSource {
    point: InterceptionPoint,
    members: [(&'static str, CoreMember); 7],
}

/// One core member of the context.
enum CoreMember {
    /// Equal to what the session supplies for it.
    Session,
    /// This value (`None`: the context had no such member).
    Copied(Option<Value>),
}

impl CoreSource {
    const KEYS: [&'static str; 7] = [
        "spec",
        "interception_point",
        "timestamp",
        "sequence",
        "agent",
        "session",
        "trace",
    ];

    fn of(session: &Session, ctx: &AgentContext) -> Self {
        let point = ctx.point();
        let members = Self::KEYS.map(|key| {
            let value = ctx.get(key);
            let from_session = match (key, value) {
                ("spec", Some(Value::String(v))) => v == SPEC_VERSION,
                ("interception_point", Some(Value::String(v))) => v == point.as_str(),
                ("agent", Some(Value::Object(v))) => *v == session.host.agent,
                ("session", Some(v)) => *v == session.session,
                _ => false,
            };
            let member = if from_session {
                CoreMember::Session
            } else {
                CoreMember::Copied(value.cloned())
            };
            (key, member)
        });
        Self { point, members }
    }

    fn build(self, session: &Session) -> AgentContext {
        let mut m = Map::new();
        for (key, member) in self.members {
            let value = match member {
                CoreMember::Copied(value) => value,
                CoreMember::Session => Some(match key {
                    "spec" => Value::from(SPEC_VERSION),
                    "interception_point" => Value::from(self.point.as_str()),
                    "agent" => Value::Object(session.host.agent.clone()),
                    _ => session.session.clone(),
                }),
            };
            if let Some(v) = value {
                m.insert(key.into(), v);
            }
        }
        AgentContext::from_members_unchecked(self.point, m)
    }
}

/// Merges `add`'s namespaces into `base`, member by member within a
/// namespace both carry.
fn merge_extensions(base: &mut Map<String, Value>, add: Map<String, Value>) {
    for (ns, v) in add {
        match (base.get_mut(&ns), v) {
            (Some(Value::Object(b)), Value::Object(a)) => b.extend(a),
            (_, v) => {
                base.insert(ns, v);
            }
        }
    }
}

fn undecodable(member: &str, e: &InvalidJson) -> InvalidContext {
    InvalidContext::Json {
        member: member.to_owned(),
        problem: e.to_string(),
    }
}

pub(crate) fn input_members(content: Value, role: InputRole) -> Map<String, Value> {
    one("input", json!({"content": content, "role": role}))
}

pub(crate) fn pre_model_members(model_id: &str, messages: Value) -> Map<String, Value> {
    let mut m = one("model", json!({"id": model_id}));
    m.insert("messages".into(), messages);
    m
}

pub(crate) fn post_model_members(model_id: &str, response: Value) -> Map<String, Value> {
    let mut m = one("model", json!({"id": model_id}));
    m.insert("response".into(), response);
    m
}

pub(crate) fn pre_tool_members(call: &ToolCall) -> Map<String, Value> {
    one("tool_call", call.to_json())
}

pub(crate) fn post_tool_members(call: &ToolCall, result: &ToolResult) -> Map<String, Value> {
    let mut m = one("tool_call", call.to_json());
    m.insert(
        "tool_result".into(),
        json!({"value": result.value, "is_error": result.is_error}),
    );
    m
}

pub(crate) fn output_members(content: Value) -> Map<String, Value> {
    one("output", json!({"content": content}))
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), value);
    m
}

/// RFC 3339 UTC with millisecond precision, e.g. `2026-06-19T14:03:11.123Z`.
fn now_rfc3339() -> String {
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}

#[cfg(test)]
mod tests {
    use hookwire::{Composition, InterceptionPoint, Mode, Profile, Verdict};
    use serde_json::{Map, json};

    use crate::{
        BoxError, Error, Host, InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult,
        interceptor_fn,
    };

    fn host() -> Host {
        let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
        Host::builder("agent", "hookwire")
            .interceptor("allow", allow)
            .build()
            .unwrap()
    }

    /// The core a cancellation record carries, as the context had it.
    fn core_members(ctx: &hookwire::AgentContext) -> Map<String, serde_json::Value> {
        super::CoreSource::KEYS
            .iter()
            .filter_map(|k| ctx.get(k).map(|v| ((*k).to_owned(), v.clone())))
            .collect()
    }

    #[test]
    fn a_cancellation_core_is_the_contexts_whoever_supplied_its_members() {
        let host = host();
        let plain = host.session("s-plain").unwrap();
        // Members that replace core members, and a trace: copied, not
        // rebuilt from the session.
        let replaced = host
            .session_builder("s-replaced")
            .members(
                json!({
                    "agent": {"id": "impostor", "framework": "x"},
                    "trace": {"trace_id": "0af7651916cd43dd8448eb211c80319c"},
                    "session": {"turn": 3},
                })
                .as_object()
                .unwrap()
                .clone(),
            )
            .open()
            .unwrap();
        for session in [&plain, &replaced] {
            for point in [InterceptionPoint::PreToolCall, InterceptionPoint::Output] {
                let ctx = session.context(
                    point,
                    super::pre_tool_members(&ToolCall::new("c1", "ls", json!({}))),
                );
                let core = super::CoreSource::of(session, &ctx).build(session);
                assert_eq!(core.point(), point);
                assert_eq!(
                    core_members(&core),
                    core_members(&ctx),
                    "{point:?} of {}",
                    session.id()
                );
            }
        }
        let ctx = replaced.context(InterceptionPoint::Input, Map::new());
        assert_eq!(ctx.get("agent").unwrap()["id"], "impostor");
        assert!(matches!(
            super::CoreSource::of(&replaced, &ctx).members[4].1,
            super::CoreMember::Copied(Some(_))
        ));
        let ctx = plain.context(InterceptionPoint::Input, Map::new());
        assert!(matches!(
            super::CoreSource::of(&plain, &ctx).members[4].1,
            super::CoreMember::Session
        ));
    }

    #[tokio::test]
    async fn emit_refuses_the_lifecycle_points_with_their_own_error() {
        let session = host().session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        for point in [
            InterceptionPoint::AgentStartup,
            InterceptionPoint::AgentShutdown,
        ] {
            let err = session.emit(point, Map::new()).await.unwrap_err();
            assert!(
                matches!(&err, Error::LifecyclePoint { session, point: p } if session == "s" && *p == point),
                "{err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains("Session::start or Session::shutdown"),
                "{text}"
            );
        }
        // Refusing them changed nothing: the session still runs and closes.
        let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
        assert_eq!(e.record().sequence, 1, "the refused emits took no sequence");
    }

    fn deny_tools() -> Host {
        let policy = interceptor_fn(|ctx: hookwire::AgentContext| {
            let deny = ctx.point() == InterceptionPoint::PreToolCall
                && ctx.get("tool_call").and_then(|c| c.get("name")) == Some(&json!("rm"));
            async move {
                Ok::<_, BoxError>(if deny {
                    Verdict::deny("test:rm")
                } else {
                    Verdict::allow()
                })
            }
        });
        Host::builder("agent", "hookwire")
            .interceptor("policy", policy)
            .build()
            .unwrap()
    }

    fn out_of_order(err: &Error, want: InterceptionPoint) -> String {
        match err {
            Error::OutOfOrder { point, reason, .. } if *point == want => reason.clone(),
            other => panic!("expected OutOfOrder at {want}, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_post_tool_call_needs_its_own_permitted_pre_tool_call() {
        let session = deny_tools().session("s").unwrap();
        session.start(["ls", "rm"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        let ls = ToolCall::new("c1", "ls", json!({}));
        let ok = ToolResult {
            value: json!("out"),
            is_error: false,
        };
        // No pre at all.
        let err = session.post_tool_call(&ls, &ok).await.unwrap_err();
        let reason = out_of_order(&err, InterceptionPoint::PostToolCall);
        assert!(reason.contains("no permitted pre_tool_call"), "{reason}");
        assert!(err.to_string().contains("out of order"), "{err}");
        // A blocked pre leaves nothing to post (§6.2).
        let rm = ToolCall::new("c2", "rm", json!({}));
        assert!(!session.pre_tool_call(&rm).await.unwrap().proceeds());
        let err = session.post_tool_call(&rm, &ok).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PostToolCall);
        // A permitted pre opens exactly one post; a second pre with the id
        // still open is refused.
        assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
        let err = session.pre_tool_call(&ls).await.unwrap_err();
        assert!(out_of_order(&err, InterceptionPoint::PreToolCall).contains("distinct id"));
        assert!(session.post_tool_call(&ls, &ok).await.unwrap().proceeds());
        let err = session.post_tool_call(&ls, &ok).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PostToolCall);
        // Refusals took no sequence: startup 0, input 1, pre c2 2, pre c1
        // 3, post 4.
        let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
        assert_eq!(e.record().sequence, 5);
    }

    #[tokio::test]
    async fn a_post_model_call_pairs_with_a_permitted_pre_model_call() {
        let session = host().session("m").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        let response = ModelResponse {
            content: json!("hi"),
            tool_calls: Vec::new(),
            finish_reason: "stop".into(),
        };
        let err = session.post_model_call("m", &response).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PostModelCall);
        session.pre_model_call("m", json!([])).await.unwrap();
        assert!(session.post_model_call("m", &response).await.is_ok());
        let err = session.post_model_call("m", &response).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PostModelCall);
    }

    #[tokio::test]
    async fn rule_3_needs_a_permitting_input_and_the_output_closes_the_turn() {
        let session = deny_inputs_saying("no").session("t").unwrap();
        session.start(["ls"]).await.unwrap();
        let ls = ToolCall::new("c1", "ls", json!({}));
        // Before any input: every point that results from one is refused.
        let err = session.pre_model_call("m", json!([])).await.unwrap_err();
        let reason = out_of_order(&err, InterceptionPoint::PreModelCall);
        assert!(reason.contains("rule 3"), "{reason}");
        let err = session.pre_tool_call(&ls).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PreToolCall);
        let err = session.output(json!("x")).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::Output);
        // A denied input begins no turn.
        let denied = session.input(json!("no"), InputRole::User).await.unwrap();
        assert!(!denied.proceeds());
        let err = session.pre_model_call("m", json!([])).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PreModelCall);
        // A permitting input opens one; the output closes it.
        session.input(json!("hi"), InputRole::User).await.unwrap();
        assert!(session.pre_model_call("m", json!([])).await.is_ok());
        assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
        assert!(session.output(json!("done")).await.unwrap().proceeds());
        let err = session.pre_model_call("m", json!([])).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PreModelCall);
        let err = session.output(json!("again")).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::Output);
        // The next turn needs the next input; end_turn closes a turn that
        // stopped without an output.
        session.input(json!("more"), InputRole::User).await.unwrap();
        assert!(session.pre_model_call("m", json!([])).await.is_ok());
        session.end_turn();
        let err = session.pre_model_call("m", json!([])).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::PreModelCall);
        // Concurrent turns each hold their own until their output.
        session.input(json!("a"), InputRole::User).await.unwrap();
        session.input(json!("b"), InputRole::User).await.unwrap();
        assert!(session.output(json!("a done")).await.is_ok());
        assert!(session.pre_model_call("m", json!([])).await.is_ok());
        assert!(session.output(json!("b done")).await.is_ok());
        let err = session.output(json!("c")).await.unwrap_err();
        out_of_order(&err, InterceptionPoint::Output);
    }

    fn deny_inputs_saying(word: &'static str) -> Host {
        let policy = interceptor_fn(move |ctx: hookwire::AgentContext| {
            let deny = ctx.point() == InterceptionPoint::Input
                && ctx.get("input").and_then(|i| i.get("content")) == Some(&json!(word));
            async move {
                Ok::<_, BoxError>(if deny {
                    Verdict::deny("test:input")
                } else {
                    Verdict::allow()
                })
            }
        });
        Host::builder("agent", "hookwire")
            .interceptor("policy", policy)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn the_raw_emit_path_books_pairs_without_refusing() {
        let session = host().session("raw").unwrap();
        session.start(["bash"]).await.unwrap();
        let mut m = Map::new();
        m.insert(
            "tool_call".into(),
            json!({"id": "c", "name": "bash", "args": {}}),
        );
        m.insert("tool_result".into(), json!({"value": 1, "is_error": false}));
        assert!(
            session
                .emit(InterceptionPoint::PostToolCall, m)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn output_content_is_reachable_only_through_a_permitting_verdict() {
        let deny_output = interceptor_fn(|ctx: hookwire::AgentContext| {
            let deny = ctx.point() == InterceptionPoint::Output;
            async move {
                Ok::<_, BoxError>(if deny {
                    Verdict::deny("test:no")
                } else {
                    Verdict::allow()
                })
            }
        });
        let denying = Host::builder("agent", "hookwire")
            .interceptor("p", deny_output)
            .build()
            .unwrap();
        let session = denying.session("o").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        let decision = session.output(json!("secret answer")).await.unwrap();
        assert!(!decision.proceeds());
        let withheld = decision.release().unwrap_err();
        assert_eq!(withheld.verdict().reason.as_deref(), Some("test:no"));

        let session = host().session("o2").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("go"), InputRole::User).await.unwrap();
        let released = session.output(json!("fine")).await.unwrap().release();
        assert_eq!(released.unwrap(), json!("fine"));
    }

    #[tokio::test]
    async fn a_session_overrides_mode_and_composition_per_point() {
        let deny_all = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("test:no")) });
        let denying = Host::builder("agent", "hookwire")
            .interceptor("p", deny_all)
            .build()
            .unwrap();
        let strictest = Composition::new(Profile::ParallelStrictest);
        let session = denying
            .session_builder("ov")
            .mode_at(InterceptionPoint::Input, Mode::EvaluateOnly)
            .composition_at(InterceptionPoint::Input, strictest)
            .open()
            .unwrap();
        assert_eq!(
            session.mode_at(InterceptionPoint::Input),
            Mode::EvaluateOnly
        );
        assert_eq!(session.mode_at(InterceptionPoint::Output), Mode::Enforce);
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(
            e.record().mode,
            Mode::Enforce,
            "startup keeps the host's mode"
        );
        assert!(!e.proceeds());
        let host2 = Host::builder("agent", "hookwire")
            .interceptor(
                "p",
                interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("test:no")) }),
            )
            .build()
            .unwrap();
        let session = host2
            .session_builder("ov2")
            .mode(Mode::EvaluateOnly)
            .composition_at(InterceptionPoint::Input, strictest)
            .open()
            .unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert!(e.proceeds(), "evaluate_only for the whole session");
        let e = session.input(json!("hi"), InputRole::User).await.unwrap();
        assert_eq!(e.record().mode, Mode::EvaluateOnly);
        assert_eq!(e.record().composition.profile, Profile::ParallelStrictest);
        assert_eq!(
            e.verdict().decision,
            hookwire::Decision::Deny,
            "recorded, not enforced"
        );
        assert!(e.proceeds());
        let e = session.output(json!("x")).await.unwrap();
        assert_eq!(e.record().composition.profile, host2.composition().profile);
    }

    #[tokio::test]
    async fn a_cancelled_emission_leaves_a_record_not_a_sequence_gap() {
        let slow_input = interceptor_fn(|ctx: hookwire::AgentContext| async move {
            if ctx.point() == InterceptionPoint::Input {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            Ok::<_, BoxError>(Verdict::allow())
        });
        let records = crate::RecordLog::new();
        let host = Host::builder("agent", "hookwire")
            .interceptor("slow", slow_input)
            .record_sink(records.clone())
            .build()
            .unwrap();
        let session = host.session("c").unwrap();
        session.start(["bash"]).await.unwrap();
        let cancelled = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            session.input(json!("hi"), InputRole::User),
        )
        .await;
        assert!(cancelled.is_err(), "the caller gave up");
        let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
        assert_eq!(e.record().sequence, 2);
        let trail = records.session("c");
        let sequences: Vec<i64> = trail.iter().map(|r| r.sequence).collect();
        assert_eq!(sequences, vec![0, 1, 2], "no gap");
        let r = &trail[1];
        assert_eq!(r.interception_point, InterceptionPoint::Input);
        assert_eq!(
            r.verdict.reason.as_deref(),
            Some("host_error:interceptor_timeout")
        );
        assert_eq!(r.extensions["hookwire"]["cancelled"], json!(true));
        assert_eq!(r.input_identity, None);
    }

    #[tokio::test]
    async fn emit_refuses_a_lifecycle_point_before_startup_too() {
        let session = host().session("fresh").unwrap();
        let err = session
            .emit(InterceptionPoint::AgentShutdown, Map::new())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::LifecyclePoint { .. }), "{err:?}");
    }

    /// Waits (bounded) until `records` holds `n` records of session `id`.
    async fn trail_of(
        records: &crate::RecordLog,
        id: &str,
        n: usize,
    ) -> Vec<hookwire::InterceptionRecord> {
        for _ in 0..200 {
            let trail = records.session(id);
            if trail.len() >= n {
                return trail;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        records.session(id)
    }

    fn recorded_host(records: &crate::RecordLog, deny_startup: bool) -> Host {
        let policy = interceptor_fn(move |ctx: hookwire::AgentContext| async move {
            Ok::<_, BoxError>(
                if deny_startup && ctx.point() == InterceptionPoint::AgentStartup {
                    Verdict::deny("test:closed")
                } else {
                    Verdict::allow()
                },
            )
        });
        Host::builder("agent", "hookwire")
            .interceptor("policy", policy)
            .record_sink(records.clone())
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_started_session_dropped_without_shutdown_still_emits_agent_shutdown() {
        let records = crate::RecordLog::new();
        let host = recorded_host(&records, false);
        let session = host.session("d").unwrap();
        session.start(["bash"]).await.unwrap();
        session.input(json!("hi"), InputRole::User).await.unwrap();
        drop(session);
        let trail = trail_of(&records, "d", 3).await;
        let points: Vec<_> = trail
            .iter()
            .map(|r| (r.sequence, r.interception_point))
            .collect();
        assert_eq!(
            points,
            vec![
                (0, InterceptionPoint::AgentStartup),
                (1, InterceptionPoint::Input),
                (2, InterceptionPoint::AgentShutdown),
            ]
        );
        assert_eq!(trail[2].verdict.decision, hookwire::Decision::Allow);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(records.session("d").len(), 3, "exactly one agent_shutdown");
    }

    #[tokio::test]
    async fn a_dropped_session_whose_startup_was_denied_shuts_down_with_reason_error() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let summaries = seen.clone();
        let watcher = interceptor_fn(move |ctx: hookwire::AgentContext| {
            let summaries = summaries.clone();
            async move {
                if ctx.point() == InterceptionPoint::AgentShutdown {
                    summaries.lock().unwrap().push(ctx.get("summary").cloned());
                }
                Ok::<_, BoxError>(if ctx.point() == InterceptionPoint::AgentStartup {
                    Verdict::deny("test:closed")
                } else {
                    Verdict::allow()
                })
            }
        });
        let records = crate::RecordLog::new();
        let host = Host::builder("agent", "hookwire")
            .interceptor("watcher", watcher)
            .record_sink(records.clone())
            .build()
            .unwrap();
        let session = host.session("denied").unwrap();
        assert!(!session.start(["bash"]).await.unwrap().proceeds());
        drop(session);
        let trail = trail_of(&records, "denied", 2).await;
        assert_eq!(trail.len(), 2);
        assert_eq!(
            trail[1].interception_point,
            InterceptionPoint::AgentShutdown
        );
        assert_eq!(
            seen.lock().unwrap().clone(),
            vec![Some(json!({"reason": "error"}))]
        );
    }

    #[tokio::test]
    async fn a_session_never_started_or_already_shut_down_emits_nothing_when_dropped() {
        let records = crate::RecordLog::new();
        let host = recorded_host(&records, false);
        drop(host.session("fresh").unwrap());
        let closed = host.session("closed").unwrap();
        closed.start(["bash"]).await.unwrap();
        closed.shutdown(ShutdownReason::Completed).await.unwrap();
        drop(closed);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(records.session("fresh").is_empty());
        assert_eq!(records.session("closed").len(), 2);
    }

    #[test]
    fn a_session_dropped_outside_a_runtime_emits_nothing_and_does_not_panic() {
        let records = crate::RecordLog::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let host = recorded_host(&records, false);
        let session = runtime.block_on(async {
            let session = host.session("outside").unwrap();
            session.start(["bash"]).await.unwrap();
            session
        });
        drop(session);
        assert_eq!(records.session("outside").len(), 1, "only agent_startup");
    }
}
