//! [`Session`], the handle an agent holds for one run: the typed API of
//! each interception point (each checked in order), the raw
//! [`Session::emit`] of the tools that replay contexts, and the `Drop` that
//! hands an unclosed session's state to a task emitting its
//! `agent_shutdown` (see the `session` module docs).

use std::sync::Arc;

use hookwire::{HostError, InterceptionPoint};
use serde_json::{Map, Value};

use super::lifecycle::{Lifecycle, SessionState};
use super::members::{
    input_members, output_members, post_model_members, post_tool_members, pre_model_members,
    pre_tool_members, undecodable,
};
use super::order::{OrderOptions, PostModel};
use super::output::OutputDecision;
use super::overrides::Overrides;
use crate::emission::Emission;
use crate::error::Error;
use crate::host_state::HostState;
use crate::payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};

/// One session of the agent. Emissions take `&self` and may run
/// concurrently; share the session behind an `Arc` across tasks.
pub struct Session {
    /// The whole state, shared only with the task that shuts the session
    /// down when it is dropped unclosed.
    pub(super) state: Arc<SessionState>,
}

impl Session {
    pub(super) fn new(
        host: Arc<HostState>,
        id: String,
        members: Map<String, Value>,
        overrides: Overrides,
        order: OrderOptions,
    ) -> Self {
        Self {
            state: Arc::new(SessionState::new(host, id, members, overrides, order)),
        }
    }

    /// `session.id`.
    pub fn id(&self) -> &str {
        &self.state.id
    }

    /// The mode `point` runs under in this session (§8).
    pub fn mode_at(&self, point: InterceptionPoint) -> hookwire::Mode {
        self.state.overrides.at(&self.state.host, point).mode
    }

    /// The composition `point` runs under in this session (§7.2), resolved.
    pub fn composition_at(&self, point: InterceptionPoint) -> hookwire::Composition {
        let settings = self.state.overrides.at(&self.state.host, point);
        settings.composition.resolved()
    }

    /// `agent_startup` (§3): must come first. A denied startup closes the
    /// session to everything but [`Session::shutdown`].
    pub async fn start<S: Into<String>>(
        &self,
        tools_registered: impl IntoIterator<Item = S>,
    ) -> Result<Emission, Error> {
        let tools = tools_registered.into_iter().map(Into::into).collect();
        self.state.start(tools).await
    }

    /// `input`: an external request entering the session. A permitting
    /// verdict opens a turn (§3.1 rule 3), which `pre_model_call`,
    /// `pre_tool_call` and `output` need; when it is denied the turn does
    /// not begin.
    pub async fn input(&self, content: Value, role: InputRole) -> Result<Emission, Error> {
        self.input_with(content, role, Map::new()).await
    }

    /// [`Session::input`] with `extra` members in its context (e.g.
    /// `extensions`; see "Extra members" in the module docs).
    pub async fn input_with(
        &self,
        content: Value,
        role: InputRole,
        extra: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let members = with_extra(input_members(content, role), extra);
        self.checked(InterceptionPoint::Input, members).await
    }

    /// `pre_model_call`: before a model request with `messages`. Refused
    /// ([`Error::OutOfOrder`]) outside a turn (§3.1 rule 3).
    pub async fn pre_model_call(&self, model_id: &str, messages: Value) -> Result<Emission, Error> {
        self.pre_model_call_with(model_id, messages, Map::new())
            .await
    }

    /// [`Session::pre_model_call`] with `extra` members (e.g. the
    /// `request_id` its `post_model_call` pairs by, `extensions`).
    pub async fn pre_model_call_with(
        &self,
        model_id: &str,
        messages: Value,
        extra: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let members = with_extra(pre_model_members(model_id, messages), extra);
        self.checked(InterceptionPoint::PreModelCall, members).await
    }

    /// `post_model_call`: after the model answered. Refused
    /// ([`Error::OutOfOrder`]) unless a permitted `pre_model_call` waits
    /// for it (§3.1 rule 4, §6.2), and not forgotten past
    /// [`MAX_OPEN_CALLS`](crate::MAX_OPEN_CALLS).
    pub async fn post_model_call(
        &self,
        model_id: &str,
        response: &ModelResponse,
    ) -> Result<Emission, Error> {
        self.post_model_call_with(model_id, response, Map::new())
            .await
    }

    /// [`Session::post_model_call`] with `extra` members (its
    /// `request_id` pairs it with the `pre_model_call` of that id).
    pub async fn post_model_call_with(
        &self,
        model_id: &str,
        response: &ModelResponse,
        extra: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let members = with_extra(post_model_members(model_id, response.to_json()), extra);
        self.checked(InterceptionPoint::PostModelCall, members)
            .await
    }

    /// One `post_model_call` of a response the caller receives in
    /// chunks, one call per chunk, rather than as a stream it can hand to
    /// [`Session::mediate_stream`] (a hook daemon told of each chunk by a
    /// separate hook; §12.1): checked like [`Session::post_model_call`]
    /// against the open `pre_model_call`, which a segment that is not
    /// `last` keeps open for the next one. The `last` segment closes the
    /// pair, and so does a denied one (nothing after a deny is released).
    pub async fn post_model_call_segment_with(
        &self,
        model_id: &str,
        response: &ModelResponse,
        extra: Map<String, Value>,
        last: bool,
    ) -> Result<Emission, Error> {
        let members = with_extra(post_model_members(model_id, response.to_json()), extra);
        if last {
            return self.stream_segment(members, PostModel::Closing).await;
        }
        let mut pair = Map::new();
        if let Some(id) = members.get("request_id") {
            pair.insert("request_id".into(), id.clone());
        }
        let e = self.stream_segment(members, PostModel::Segment).await?;
        if !e.proceeds() {
            self.close_model_pair(&pair);
        }
        Ok(e)
    }

    /// `post_model_call` over the model's response as the JSON text it
    /// arrived in, decoded exactly (§4.4): a text the host cannot carry
    /// without rounding (an integer literal beyond the 64-bit range, a
    /// duplicate member, malformed text) is the emission denied
    /// `host_error:context_invalid` before any interceptor runs, with null
    /// identities (§6.3), never a silently rounded context. For an agent
    /// loop that reads its model's answer as text (the reference loop,
    /// `hookwire-agent`, does).
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
                let invalid = undecodable("response", &e);
                self.state.refused(point, members, &invalid).await
            }
        }
    }

    /// `pre_tool_call`: before invoking a tool. Invoke it with
    /// [`Emission::target`] as the arguments (transforms applied). Refused
    /// while an earlier `pre_tool_call` with the same id waits for its
    /// post (§12.2), and outside a turn (§3.1 rule 3).
    pub async fn pre_tool_call(&self, call: &ToolCall) -> Result<Emission, Error> {
        self.pre_tool_call_with(call, Map::new()).await
    }

    /// [`Session::pre_tool_call`] with `extra` members.
    pub async fn pre_tool_call_with(
        &self,
        call: &ToolCall,
        extra: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let members = with_extra(pre_tool_members(call), extra);
        self.checked(InterceptionPoint::PreToolCall, members).await
    }

    /// `post_tool_call`: after the tool returned. `call.args` must be the
    /// arguments the tool actually received (§4.2). Refused
    /// ([`Error::OutOfOrder`]) unless the `pre_tool_call` with the same id
    /// completed and permitted the call (§3.1 rule 5, §6.2), and was not
    /// forgotten past [`MAX_OPEN_CALLS`](crate::MAX_OPEN_CALLS).
    pub async fn post_tool_call(
        &self,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<Emission, Error> {
        self.post_tool_call_with(call, result, Map::new()).await
    }

    /// [`Session::post_tool_call`] with `extra` members.
    pub async fn post_tool_call_with(
        &self,
        call: &ToolCall,
        result: &ToolResult,
        extra: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let members = with_extra(post_tool_members(call, result), extra);
        self.checked(InterceptionPoint::PostToolCall, members).await
    }

    /// `post_tool_call` for a call whose result cannot be had: its
    /// executor failed, went silent or answered what cannot be read (a
    /// tool server that exited, timed out or sent garbage), or the call
    /// was abandoned. No context can be built from a result that does not
    /// exist, so the emission is denied `host_error:context_invalid`
    /// before any interceptor runs (§6.3), its record naming `problem`
    /// (which must not carry a payload), and the call's pair is closed.
    /// Refused like [`Session::post_tool_call`] when no permitted
    /// `pre_tool_call` with the call's id waits for it.
    pub async fn post_tool_call_unavailable(
        &self,
        call: &ToolCall,
        problem: &str,
    ) -> Result<Emission, Error> {
        let result = ToolResult {
            value: Value::Null,
            is_error: true,
        };
        let members = post_tool_members(call, &result);
        let invalid = hookwire::InvalidContext::Json {
            member: "tool_result".into(),
            problem: problem.to_owned(),
        };
        self.state
            .refused(InterceptionPoint::PostToolCall, members, &invalid)
            .await
    }

    /// `post_tool_call` for a call a permitting `pre_tool_call` routed to
    /// an executor the agent does not have (`problem` says which, or why
    /// the route could not be read): the call did not run, so the host
    /// denies the emission itself, `host_error:verdict_invalid`, recorded
    /// and never dispatched, with `problem` as the error result. Fails
    /// closed for an agent loop that honours routes (`hookwire-agent`'s).
    pub async fn post_tool_call_misrouted(
        &self,
        call: &ToolCall,
        problem: &str,
    ) -> Result<Emission, Error> {
        let result = ToolResult {
            value: Value::String(problem.to_owned()),
            is_error: true,
        };
        let members = post_tool_members(call, &result);
        let error = HostError::VerdictInvalid;
        self.self_denied(InterceptionPoint::PostToolCall, members, error)
            .await
    }

    /// `output`: before the final response reaches the caller. The
    /// verdicted content is reachable only through
    /// [`OutputDecision::release`], which refuses it unless the verdict
    /// permits (§12.1a). Refused ([`Error::OutOfOrder`]) outside a turn;
    /// closes its turn whatever the verdict (§3.1 rule 3), so the next
    /// turn needs the next `input`.
    pub async fn output(&self, content: Value) -> Result<OutputDecision, Error> {
        self.output_with(content, Map::new()).await
    }

    /// [`Session::output`] with `extra` members; still gated.
    pub async fn output_with(
        &self,
        content: Value,
        extra: Map<String, Value>,
    ) -> Result<OutputDecision, Error> {
        let members = with_extra(output_members(content), extra);
        self.checked(InterceptionPoint::Output, members)
            .await
            .map(OutputDecision::new)
    }

    /// Whether `agent_startup` was emitted, whatever its verdict.
    pub fn is_started(&self) -> bool {
        !matches!(self.state.lifecycle_now().0, Lifecycle::Fresh)
    }

    /// The combined verdict's reason when `agent_startup` was denied (the
    /// session then takes nothing but [`Session::shutdown`]); `None` when
    /// it was not emitted or permitted.
    pub fn startup_denial(&self) -> Option<String> {
        match self.state.lifecycle_now() {
            (Lifecycle::StartupDenied, reason) => reason,
            _ => None,
        }
    }

    /// Whether `agent_shutdown` was emitted: the session takes nothing
    /// more.
    pub fn is_closed(&self) -> bool {
        matches!(self.state.lifecycle_now().0, Lifecycle::Closed)
    }

    /// Whether a turn is open: an `input` permitted it and neither its
    /// `output` nor [`Session::end_turn`] closed it (§3.1 rule 3).
    pub fn is_turn_open(&self) -> bool {
        self.state.order().turn_open()
    }

    /// The call whose `pre_tool_call` with `id` permitted it, arguments as
    /// governed, while its `post_tool_call` may come (§3.1 rule 5), in a
    /// session opened with
    /// [`SessionBuilder::remember_calls`](crate::SessionBuilder::remember_calls);
    /// `None` when there is no such call (never permitted, blocked, in
    /// flight, already posted, or forgotten past
    /// [`MAX_OPEN_CALLS`](crate::MAX_OPEN_CALLS)) and in a session that
    /// does not remember calls.
    pub fn open_tool_call(&self, id: &str) -> Option<ToolCall> {
        self.state.order().open_tool_call(id)
    }

    /// Ends the current turn without an `output`, for a turn that stopped
    /// early (blocked or failed at a model or tool point): what follows
    /// needs the next `input` (§3.1 rule 3). No emission; a no-op when no
    /// turn is open.
    pub fn end_turn(&self) {
        self.state.order().end_turn();
    }

    /// `agent_shutdown` (§3): waits for in-flight emissions, emits last, and
    /// closes the session. After a denied startup the reason is `error`
    /// whatever was asked (§6.1a).
    pub async fn shutdown(&self, reason: ShutdownReason) -> Result<Emission, Error> {
        self.state.shutdown(reason).await
    }

    /// Emits any point between startup and shutdown with the given
    /// conditional and optional members: the raw path, which exists for
    /// what replays contexts it did not build — the `hookwire emit`
    /// command, the fuzz targets and the tests (conformance, trust,
    /// polyglot) — and is not an edge's way to emit: hidden from the
    /// docs, and the typed methods are the API. It books the §3.1 pairs
    /// like the typed methods but does not refuse an emission out of
    /// order, and an `output` emitted here is an ordinary [`Emission`],
    /// not the gated [`OutputDecision`]: the caller takes on §3.1 and
    /// §12.1a itself. `agent_startup` and `agent_shutdown` carry the
    /// lifecycle and are refused here ([`Error::LifecyclePoint`]): use
    /// [`Session::start`] and [`Session::shutdown`].
    #[doc(hidden)]
    pub async fn emit(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        let enforce = false;
        self.state
            .admitted(point, members, PostModel::Closing, enforce)
            .await
    }

    /// An emission of a typed method: admitted only in order.
    pub(crate) async fn checked(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        self.state
            .admitted(point, members, PostModel::Closing, true)
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
        let point = InterceptionPoint::PostModelCall;
        self.state.admitted(point, members, post_model, true).await
    }

    /// Closes the `pre_model_call` pair of a stream that a segment's deny
    /// terminated.
    pub(crate) fn close_model_pair(&self, members: &Map<String, Value>) {
        self.state.order().close_stream(members);
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
        self.state.self_denied(point, members, error).await
    }
}

/// A point's own members with the caller's `extra` ones: the point's own
/// win a clash, so an extra member can add context but never replace
/// what the typed arguments say.
fn with_extra(mut members: Map<String, Value>, extra: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in extra {
        members.entry(k).or_insert(v);
    }
    members
}

impl Drop for Session {
    /// Emits `agent_shutdown` for a started session that was not shut
    /// down (see the module docs, "Dropped without shutdown"): the state
    /// goes to a task on the current runtime, which emits it and then
    /// lets the state go.
    fn drop(&mut self) {
        if !self.state.is_open() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                session = %self.state.id,
                "session dropped without shutdown outside a Tokio runtime: no agent_shutdown emitted"
            );
            return;
        };
        let state = Arc::clone(&self.state);
        runtime.spawn(async move {
            if let Err(e) = state.shutdown(ShutdownReason::Cancelled).await {
                tracing::warn!(session = %state.id, error = %e, "agent_shutdown of a dropped session refused");
            }
        });
    }
}
