//! The loop itself: an [`Agent`] brackets its session, runs each turn
//! through `input`, the model and tool brackets and the gated `output`,
//! and reports a [`Turn`]. See the [`agent`](super) overview.
//!
//! A streaming model's answer is assembled before `post_model_call`
//! (buffered, the default) or, with [`Agent::incremental_output`],
//! mediated segment by segment (§12.1's exception): each permitted segment
//! goes to the release callback and into [`Turn::released`], a deny or a
//! broken stream withholds the rest, and nothing of a terminated stream is
//! incorporated into the transcript.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::join_all;
use hookwire::{InterceptionPoint, InterceptionRecord};
use hookwire_client::{
    BoxError, ChunkStream, Emission, Error, InputRole, LabelLedger, ModelResponse, ResultLabels,
    Session, ShutdownReason, StreamEnd, ToolCall, ToolResult, assemble,
};
use serde_json::{Map, Value, json};

use super::model::Model;
use super::routing::{self, Executors, RoutedCall};
use super::tools::Toolbox;
use super::turn::{ToolCallOutcome, Turn, TurnError, TurnOutcome};

/// Default bound on model calls within one turn.
pub const DEFAULT_MAX_MODEL_CALLS: usize = 16;

#[derive(Debug, Clone)]
enum State {
    Fresh,
    Running,
    StartupDenied(Box<InterceptionRecord>),
    Closed,
}

/// Where the text of an incrementally mediated stream goes as each
/// segment is released.
type ReleaseFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What the model call of one step came to.
enum Answer {
    /// A permitted response to act on, and the turn so far.
    Response(ModelResponse, Turn),
    /// The turn ends here.
    Ended(Turn),
}

/// The reference agent loop over one session; see the module docs.
pub struct Agent<M, T> {
    session: Session,
    model: M,
    tools: T,
    max_model_calls: usize,
    transcript: Vec<Value>,
    state: State,
    incremental: bool,
    on_release: Option<ReleaseFn>,
    labels: LabelLedger,
    executors: Executors,
}

impl<M: Model, T: Toolbox> Agent<M, T> {
    /// An agent driving `session` with `model` and `tools`.
    pub fn new(session: Session, model: M, tools: T) -> Self {
        Self {
            session,
            model,
            tools,
            max_model_calls: DEFAULT_MAX_MODEL_CALLS,
            transcript: Vec::new(),
            state: State::Fresh,
            incremental: false,
            on_release: None,
            labels: LabelLedger::default(),
            executors: Executors::default(),
        }
    }

    /// Registers a named executor (e.g. a sandbox toolbox) that a
    /// `pre_tool_call` verdict may route a call to instead of the agent's
    /// own tools, through the `hookwire` response extension
    /// `{"route": {"executor": NAME}}` (see the `routing` module). A route
    /// acts only as the host releases it: in `enforce` mode, from a binding
    /// granted the `route` effect whose own verdict permitted
    /// ([`Emission::response_extensions`](hookwire_client::Emission::response_extensions)).
    /// A later registration under the same name replaces the earlier one.
    pub fn executor(mut self, name: impl Into<String>, toolbox: impl Toolbox) -> Self {
        self.executors.register(name.into(), toolbox);
        self
    }

    /// Mediates a streaming model's answers incrementally (§12.1's
    /// exception, `buffered_output: false`, exposure bound none) instead
    /// of assembling them first. Only a host that declares that posture
    /// should turn it on.
    pub fn incremental_output(mut self, on: bool) -> Self {
        self.incremental = on;
        self
    }

    /// Receives each segment of a streamed answer as it is released
    /// (incremental mediation only): the caller-facing channel.
    pub fn on_release(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_release = Some(Arc::new(f));
        self
    }

    /// The `result_labels` persisted so far, each with the data it labels
    /// (§5.4).
    pub fn result_labels(&self) -> &[ResultLabels] {
        self.labels.entries()
    }

    /// Bounds the model calls of one turn (default
    /// [`DEFAULT_MAX_MODEL_CALLS`]; at least 1).
    pub fn max_model_calls(mut self, bound: usize) -> Self {
        self.max_model_calls = bound.max(1);
        self
    }

    /// The session the agent drives.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The conversation so far: the permitted messages, as the model saw
    /// them, plus the turn's additions.
    pub fn transcript(&self) -> &[Value] {
        &self.transcript
    }

    /// Emits `agent_startup` with the registered tool names (sorted). After
    /// a deny, every turn is blocked at `agent_startup` without emitting.
    pub async fn start(&mut self) -> Result<Emission, Error> {
        let mut names = self.tools.names();
        names.sort();
        names.dedup();
        let e = self.session.start(names).await?;
        self.state = if e.proceeds() {
            State::Running
        } else {
            State::StartupDenied(Box::new(e.record().clone()))
        };
        Ok(e)
    }

    /// Runs one turn for an external request: `input`, then model calls
    /// and tool calls until the model answers without tools (or the bound
    /// is reached), then the buffered `output`. Errors are lifecycle
    /// misuse only (not started, already shut down); every contract
    /// outcome is a [`Turn`].
    pub async fn run_turn(&mut self, content: Value, role: InputRole) -> Result<Turn, Error> {
        match &self.state {
            State::Fresh => return Err(Error::NotStarted(self.session.id().to_owned())),
            State::Closed => return Err(Error::Closed(self.session.id().to_owned())),
            State::StartupDenied(record) => {
                return Ok(Turn::new().end(TurnOutcome::Blocked {
                    at: InterceptionPoint::AgentStartup,
                    record: record.clone(),
                }));
            }
            State::Running => {}
        }
        let turn = Turn::new();
        let input = self.session.input(content, role).await?;
        if !input.proceeds() {
            return Ok(turn.blocked(input));
        }
        self.transcript
            .push(input_message(input.into_target(), role));
        let turn = self.model_loop(turn).await?;
        let reached_output = matches!(
            &turn.outcome,
            TurnOutcome::Completed { .. }
                | TurnOutcome::Blocked {
                    at: InterceptionPoint::Output,
                    ..
                }
        );
        if !reached_output {
            // Stopped before its output (§3.1 rule 3): the next model or
            // tool call needs the next input.
            self.session.end_turn();
        }
        Ok(turn)
    }

    async fn model_loop(&mut self, mut turn: Turn) -> Result<Turn, Error> {
        let model_id = self.model.id().to_owned();
        loop {
            if turn.model_calls >= self.max_model_calls {
                let error = TurnError::MaxModelCalls(self.max_model_calls);
                return Ok(turn.end(TurnOutcome::Failed { error }));
            }
            let messages = Value::Array(self.transcript.clone());
            let labels = self.labels.resurface(Map::new());
            let pre = self
                .session
                .pre_model_call_with(&model_id, messages, labels)
                .await?;
            if !pre.proceeds() {
                return Ok(turn.blocked(pre));
            }
            // The permitted messages are the conversation from now on: a
            // redaction applies to what the model sees and keeps seeing.
            if let Some(Value::Array(messages)) = pre.into_target() {
                self.transcript = messages;
            }
            turn.model_calls += 1;
            let response = match self.call_model(&model_id, turn).await? {
                Answer::Response(response, t) => {
                    turn = t;
                    response
                }
                Answer::Ended(turn) => return Ok(turn),
            };
            if response.tool_calls.is_empty() {
                return self.finish(turn, response.content).await;
            }
            self.transcript.push(assistant_message(&response));
            let (outcomes, routed) = self.run_tools(&response.tool_calls).await?;
            self.transcript
                .extend(outcomes.iter().map(ToolCallOutcome::message));
            turn.tool_calls.extend(outcomes);
            turn.routed.extend(routed);
        }
    }

    /// The buffered `output`: nothing is released before the verdict, and
    /// what is released is the verdicted content.
    async fn finish(&mut self, turn: Turn, content: Value) -> Result<Turn, Error> {
        let labels = self.labels.resurface(Map::new());
        let decision = self.session.output_with(content, labels).await?;
        let output = match decision.clone().release() {
            Ok(output) => output,
            Err(withheld) => return Ok(turn.withheld(withheld.into_record())),
        };
        self.labels.persist_output(&decision, &output);
        self.transcript
            .push(json!({"role": "assistant", "content": output}));
        Ok(turn.end(TurnOutcome::Completed { output }))
    }

    /// Runs every tool call of one response concurrently, each in its own
    /// `pre_tool_call`/`post_tool_call` bracket (§12.2).
    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<(Vec<ToolCallOutcome>, Vec<RoutedCall>), Error> {
        let ran: Vec<_> = join_all(calls.iter().map(|c| self.run_tool(c)))
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let mut outcomes = Vec::with_capacity(ran.len());
        let mut routed = Vec::new();
        for (outcome, post, route) in ran {
            if let (Some(post), ToolCallOutcome::Completed { call, result }) = (&post, &outcome) {
                self.labels.persist(post, &call.id, &result.value);
            }
            routed.extend(route);
            outcomes.push(outcome);
        }
        Ok((outcomes, routed))
    }

    /// One model call and its `post_model_call`: a response in one piece,
    /// its exact JSON text, or a stream (assembled, or mediated
    /// incrementally). `Answer::Ended` when the turn stops here.
    async fn call_model(&mut self, model_id: &str, turn: Turn) -> Result<Answer, Error> {
        let messages = self.transcript.clone();
        if let Some(stream) = self.model.respond_stream(&messages) {
            return if self.incremental {
                mediate(
                    &self.session,
                    model_id,
                    stream,
                    self.on_release.as_ref(),
                    turn,
                )
                .await
            } else {
                buffered(&self.session, model_id, stream, turn).await
            };
        }
        let post = if let Some(text) = self.model.respond_json(&messages) {
            match caught(text).await {
                Ok(text) => self.session.post_model_call_json(model_id, &text).await?,
                Err(error) => return Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error }))),
            }
        } else {
            match caught(self.model.respond(&messages)).await {
                Ok(response) => self.session.post_model_call(model_id, &response).await?,
                Err(error) => return Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error }))),
            }
        };
        if !post.proceeds() {
            // §6.1: discarded as if the call had errored.
            return Ok(Answer::Ended(turn.blocked(post)));
        }
        let Some(response) = post.target().and_then(ModelResponse::from_target) else {
            let error = TurnError::UnreadableResponse;
            return Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error })));
        };
        self.labels.persist(&post, model_id, &response.content);
        Ok(Answer::Response(response, turn))
    }

    /// One tool call in its bracket. A permitting `pre_tool_call` may
    /// route the call to a named executor (module `routing`): the call
    /// runs there, the `post_tool_call` context says where
    /// (`extensions.hookwire.executor`), and the route is reported; a
    /// route to an executor the agent does not have fails closed — the
    /// call does not run and its `post_tool_call` is the host's own deny
    /// (`host_error:verdict_invalid`), the result discarded.
    async fn run_tool(
        &self,
        requested: &ToolCall,
    ) -> Result<(ToolCallOutcome, Option<Emission>, Option<RoutedCall>), Error> {
        let labels = self.labels.resurface(Map::new());
        let pre = self.session.pre_tool_call_with(requested, labels).await?;
        if !pre.proceeds() {
            // §6.2: no post_tool_call; the model sees a tool error.
            let blocked = ToolCallOutcome::Blocked {
                call: requested.clone(),
                record: Box::new(pre.record().clone()),
            };
            return Ok((blocked, None, None));
        }
        let route = routing::route_of(&pre);
        let args = pre.into_target().unwrap_or_else(|| requested.args.clone());
        let call = ToolCall {
            args,
            ..requested.clone()
        };
        let executor = match &route {
            None => Some(&self.tools as &dyn Toolbox),
            Some(Ok(name)) => self.executors.get(name),
            Some(Err(_)) => None,
        };
        let Some(executor) = executor else {
            let asked = match &route {
                Some(Ok(name)) => format!("executor {name:?} is not registered"),
                Some(Err(problem)) => problem.clone(),
                None => String::new(),
            };
            let post = self.session.post_tool_call_misrouted(&call, &asked).await?;
            let routed = route.and_then(Result::ok).map(|executor| RoutedCall {
                call_id: call.id.clone(),
                executor,
                ran: false,
            });
            let discarded = ToolCallOutcome::Discarded {
                call,
                record: Box::new(post.record().clone()),
            };
            return Ok((discarded, None, routed));
        };
        let ran = AssertUnwindSafe(executor.call(&call.name, &call.args))
            .catch_unwind()
            .await;
        let result = match ran {
            Ok(Ok(value)) => ToolResult {
                value,
                is_error: false,
            },
            Ok(Err(e)) => ToolResult {
                value: e.value,
                is_error: true,
            },
            Err(_) => ToolResult {
                value: Value::String("the tool panicked".into()),
                is_error: true,
            },
        };
        let routed = route.and_then(Result::ok).map(|executor| RoutedCall {
            call_id: call.id.clone(),
            executor,
            ran: true,
        });
        let mut extra = Map::new();
        if let Some(r) = &routed {
            extra.insert(
                "extensions".into(),
                json!({routing::NAMESPACE: {"executor": r.executor}}),
            );
        }
        let post = self
            .session
            .post_tool_call_with(&call, &result, extra)
            .await?;
        if !post.proceeds() {
            let discarded = ToolCallOutcome::Discarded {
                call,
                record: Box::new(post.record().clone()),
            };
            return Ok((discarded, None, routed));
        }
        let value = post.target().cloned().unwrap_or(Value::Null);
        let completed = ToolCallOutcome::Completed {
            call,
            result: ToolResult {
                value,
                is_error: result.is_error,
            },
        };
        Ok((completed, Some(post), routed))
    }

    /// Emits `agent_shutdown` with `reason` (always `error` after a denied
    /// startup, §6.1a) and closes the agent.
    pub async fn shutdown(&mut self, reason: ShutdownReason) -> Result<Emission, Error> {
        let e = self.session.shutdown(reason).await?;
        self.state = State::Closed;
        Ok(e)
    }

    /// A whole single-turn session: startup, one turn, and shutdown with
    /// `completed` or `error` depending on the turn.
    pub async fn run_once(
        &mut self,
        content: Value,
        role: InputRole,
    ) -> Result<(Turn, Emission), Error> {
        self.start().await?;
        let turn = self.run_turn(content, role).await?;
        let shutdown = self.shutdown(turn.shutdown_reason()).await?;
        Ok((turn, shutdown))
    }
}

/// The model's answer, or the turn's error when it failed or panicked.
async fn caught<T>(
    answer: impl std::future::Future<Output = Result<T, BoxError>>,
) -> Result<T, TurnError> {
    match AssertUnwindSafe(answer).catch_unwind().await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(TurnError::Model(e.to_string())),
        Err(_) => Err(TurnError::Model("the model panicked".into())),
    }
}

/// A buffering host's stream (§12.1): assembled, then one
/// `post_model_call`; a stream that broke before its finish reason is
/// emitted `stream_incomplete`, denied by the host
/// (`host_error:streaming_unsupported`), and not incorporated.
async fn buffered(
    session: &Session,
    model_id: &str,
    stream: ChunkStream<'_>,
    turn: Turn,
) -> Result<Answer, Error> {
    let post = match AssertUnwindSafe(assemble(stream)).catch_unwind().await {
        Ok(assembly) => {
            session
                .post_model_call_assembled(model_id, assembly)
                .await?
        }
        Err(_) => {
            let error = TurnError::Model("the model panicked".into());
            return Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error })));
        }
    };
    if !post.proceeds() {
        return Ok(Answer::Ended(turn.blocked(post)));
    }
    match post.target().and_then(ModelResponse::from_target) {
        Some(response) => Ok(Answer::Response(response, turn)),
        None => {
            let error = TurnError::UnreadableResponse;
            Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error })))
        }
    }
}

/// Incremental mediation (§12.1's exception): each permitted segment is
/// released to `on_release` and the turn; a terminated stream ends the
/// turn blocked, with nothing of it incorporated.
async fn mediate(
    session: &Session,
    model_id: &str,
    stream: ChunkStream<'_>,
    on_release: Option<&ReleaseFn>,
    mut turn: Turn,
) -> Result<Answer, Error> {
    let mut mediated = session.mediate_stream(model_id, stream);
    loop {
        let next = AssertUnwindSafe(mediated.next()).catch_unwind().await;
        match next {
            Ok(Ok(Some(released))) => {
                if let Some(f) = on_release {
                    f(released.as_str());
                }
                turn.released.push_str(released.as_str());
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                let error = TurnError::Model("the model stream panicked".into());
                return Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error })));
            }
        }
    }
    match mediated.into_end() {
        Some(StreamEnd::Completed { response, .. }) => Ok(Answer::Response(response, turn)),
        Some(end) => Ok(Answer::Ended(turn.withheld(end.record().clone()))),
        None => {
            let error = TurnError::Model("the model stream ended without an outcome".into());
            Ok(Answer::Ended(turn.end(TurnOutcome::Failed { error })))
        }
    }
}

/// The user (or system, or external) message for a permitted input target.
fn input_message(target: Option<Value>, role: InputRole) -> Value {
    let role = serde_json::to_value(role).unwrap_or(Value::Null);
    match target {
        Some(Value::Object(mut o)) if o.contains_key("content") => {
            let role = o.remove("role").unwrap_or(role);
            json!({"role": role, "content": o.remove("content").unwrap_or_default()})
        }
        other => json!({"role": role, "content": other.unwrap_or_default()}),
    }
}

/// The assistant message that requested tool calls.
fn assistant_message(response: &ModelResponse) -> Value {
    json!({
        "role": "assistant",
        "content": response.content,
        "tool_calls": response.tool_calls,
    })
}
