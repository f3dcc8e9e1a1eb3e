//! The reference agent loop: what a Rust agent embeds to honour every host
//! obligation of AGENT-HOOKS-0.1 around its model and its tools.
//!
//! An [`Agent`] drives one [`Session`] through the eight points. It brackets
//! the session with `agent_startup`/`agent_shutdown` (§6.1a), lets a turn
//! begin only when `input` permits, wraps every model call in
//! `pre_model_call`/`post_model_call` and every tool call in
//! `pre_tool_call`/`post_tool_call` (several tool calls of one response run
//! concurrently, each in its own bracket, §12.2), hands every action the
//! verdicted target (transforms applied, §4.3), and buffers the final answer
//! until `output` permits it (§12.1a). A blocked tool call is surfaced to the
//! model as a tool error and the loop goes on (the `continue` posture of
//! §6.2); a deny after an action discards its result (§6.1).
//!
//! Each [`Agent::run_turn`] returns a typed [`Turn`]: completed with the
//! released output, blocked with the record of the blocking emission, or
//! failed (model error, iteration bound).

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::join_all;
use hookwire::{InterceptionPoint, InterceptionRecord};
use serde_json::{Map, Value, json};

use crate::emission::Emission;
use crate::error::Error;
use crate::interceptor::{BoxError, BoxFuture};
use crate::payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
use crate::session::Session;

/// Default bound on model calls within one turn.
pub const DEFAULT_MAX_MODEL_CALLS: usize = 16;

/// The model an agent talks to. It receives the conversation as the
/// `messages` array the `pre_model_call` verdict permitted (each message a
/// `{role, content, ...}` object) and answers with text and tool calls.
pub trait Model: Send + Sync + 'static {
    /// `model.id` in the contexts of both model points.
    fn id(&self) -> &str;

    /// Answers one request. An error (or a panic) fails the turn.
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>>;
}

/// A failed tool call: the value reported as the tool's result, with
/// `is_error: true` (§4.2 `tool_result`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// What the tool reports about its failure.
    pub value: Value,
}

impl ToolError {
    /// A tool error carrying `value`.
    pub fn new(value: impl Into<Value>) -> Self {
        Self {
            value: value.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool error: {}", self.value)
    }
}

impl std::error::Error for ToolError {}

/// One tool the model may call.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, as the model calls it.
    fn name(&self) -> &str;

    /// Runs the tool with the (verdicted) arguments.
    fn call<'a>(&'a self, args: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// The set of tools an agent can run, looked up by name.
pub trait Toolbox: Send + Sync + 'static {
    /// The names registered, reported at `agent_startup`.
    fn names(&self) -> Vec<String>;

    /// Runs tool `name` with `args`. An unknown name is a tool error.
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        (**self).respond(messages)
    }
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        (**self).respond(messages)
    }
}

impl<T: Toolbox + ?Sized> Toolbox for Arc<T> {
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args)
    }
}

impl<T: Toolbox + ?Sized> Toolbox for Box<T> {
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args)
    }
}

/// A [`Toolbox`] made of individual [`Tool`]s.
#[derive(Clone, Default)]
pub struct Tools {
    tools: Vec<Arc<dyn Tool>>,
}

impl Tools {
    /// An empty toolbox (an agent without tools).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. When two tools share a name, the first one added
    /// answers.
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl Toolbox for Tools {
    fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_owned()).collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match self.tools.iter().find(|t| t.name() == name) {
            Some(tool) => tool.call(args),
            None => Box::pin(async move { Err(ToolError::new(format!("unknown tool {name:?}"))) }),
        }
    }
}

/// A [`Tool`] made from an async closure; see [`tool_fn`].
pub struct ToolFn<F> {
    name: String,
    f: F,
}

/// Wraps `f(args) -> impl Future<Output = Result<Value, ToolError>>` as a
/// tool named `name`. The closure receives an owned copy of the arguments.
pub fn tool_fn<F, Fut>(name: impl Into<String>, f: F) -> ToolFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    ToolFn {
        name: name.into(),
        f,
    }
}

impl<F, Fut> Tool for ToolFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn call<'a>(&'a self, args: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin((self.f)(args.clone()))
    }
}

/// A [`Model`] made from an async closure; see [`model_fn`].
pub struct ModelFn<F> {
    id: String,
    f: F,
}

/// Wraps `f(messages) -> impl Future<Output = Result<ModelResponse, BoxError>>`
/// as a model with id `id`. The closure receives an owned copy of the
/// messages.
pub fn model_fn<F, Fut>(id: impl Into<String>, f: F) -> ModelFn<F>
where
    F: Fn(Vec<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelResponse, BoxError>> + Send + 'static,
{
    ModelFn { id: id.into(), f }
}

impl<F, Fut> Model for ModelFn<F>
where
    F: Fn(Vec<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelResponse, BoxError>> + Send + 'static,
{
    fn id(&self) -> &str {
        &self.id
    }

    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        Box::pin((self.f)(messages.to_vec()))
    }
}

/// How one turn ended.
#[derive(Debug, Clone)]
pub enum TurnOutcome {
    /// The final answer was permitted at `output`; this is the verdicted
    /// content (transformed when the verdict was a transform), the only
    /// thing released to the caller.
    Completed {
        /// The released output content.
        output: Value,
    },
    /// A combined deny stopped the turn: at `agent_startup` (the session
    /// processes no input), `input` (the turn never began), a model point
    /// (no response is used), or `output` (nothing is released).
    Blocked {
        /// Where the turn was blocked.
        at: InterceptionPoint,
        /// The record of the blocking emission.
        record: Box<InterceptionRecord>,
    },
    /// The turn could not complete for a reason outside the contract.
    Failed {
        /// What went wrong.
        error: TurnError,
    },
}

/// Why a turn failed without being blocked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// The model returned an error or panicked.
    #[error("model call failed: {0}")]
    Model(String),
    /// A transform left the response in a shape the agent cannot read.
    #[error("the permitted model response is not a response object")]
    UnreadableResponse,
    /// The model kept requesting tools past the per-turn bound.
    #[error("no final answer within {0} model calls")]
    MaxModelCalls(usize),
}

/// What happened to one tool call the model requested.
#[derive(Debug, Clone)]
pub enum ToolCallOutcome {
    /// The tool ran and its (verdicted) result was incorporated.
    Completed {
        /// The call as the tool received it (verdicted arguments).
        call: ToolCall,
        /// The result as incorporated: transformed when `post_tool_call`
        /// transformed it.
        result: ToolResult,
    },
    /// `pre_tool_call` blocked the call: the tool never ran, no
    /// `post_tool_call` was emitted, the model sees a tool error.
    Blocked {
        /// The call as the model requested it.
        call: ToolCall,
        /// The record of the blocking emission.
        record: Box<InterceptionRecord>,
    },
    /// The tool ran but `post_tool_call` denied: the result was discarded
    /// as if the tool had failed (§6.1).
    Discarded {
        /// The call as the tool received it.
        call: ToolCall,
        /// The record of the denying emission.
        record: Box<InterceptionRecord>,
    },
}

impl ToolCallOutcome {
    /// The call: as received by the tool when it ran, as requested when
    /// it was blocked.
    pub fn call(&self) -> &ToolCall {
        match self {
            Self::Completed { call, .. }
            | Self::Blocked { call, .. }
            | Self::Discarded { call, .. } => call,
        }
    }

    /// Whether the tool actually ran.
    pub fn invoked(&self) -> bool {
        !matches!(self, Self::Blocked { .. })
    }

    /// The tool message the model sees for this call.
    fn message(&self) -> Value {
        let (call, content, is_error) = match self {
            Self::Completed { call, result } => (call, result.value.clone(), result.is_error),
            Self::Blocked { call, record } | Self::Discarded { call, record } => {
                (call, blocked_content(record), true)
            }
        };
        let mut m = Map::new();
        m.insert("role".into(), "tool".into());
        m.insert("tool_call_id".into(), call.id.clone().into());
        m.insert("name".into(), call.name.clone().into());
        m.insert("content".into(), content);
        if is_error {
            m.insert("is_error".into(), true.into());
        }
        Value::Object(m)
    }
}

/// What the model learns about a blocked or discarded call: the point and
/// the machine reason only, never the verdict's message or payload.
fn blocked_content(record: &InterceptionRecord) -> Value {
    json!({
        "error": "blocked",
        "interception_point": record.interception_point.as_str(),
        "reason": record.verdict.reason,
    })
}

/// The result of one turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// How the turn ended.
    pub outcome: TurnOutcome,
    /// Every tool call the model requested, in request order.
    pub tool_calls: Vec<ToolCallOutcome>,
    /// How many model calls were dispatched.
    pub model_calls: usize,
}

impl Turn {
    fn new() -> Self {
        Self {
            outcome: TurnOutcome::Completed {
                output: Value::Null,
            },
            tool_calls: Vec::new(),
            model_calls: 0,
        }
    }

    fn end(mut self, outcome: TurnOutcome) -> Self {
        self.outcome = outcome;
        self
    }

    fn blocked(self, e: Emission) -> Self {
        let at = e.record().interception_point;
        let record = Box::new(e.record().clone());
        self.end(TurnOutcome::Blocked { at, record })
    }

    /// `completed`, `blocked` or `error`: the CTK's run outcome vocabulary.
    pub fn outcome_name(&self) -> &'static str {
        match self.outcome {
            TurnOutcome::Completed { .. } => "completed",
            TurnOutcome::Blocked { .. } => "blocked",
            TurnOutcome::Failed { .. } => "error",
        }
    }

    /// Whether the turn released an output.
    pub fn is_completed(&self) -> bool {
        matches!(self.outcome, TurnOutcome::Completed { .. })
    }

    /// The released output, when the turn completed.
    pub fn output(&self) -> Option<&Value> {
        match &self.outcome {
            TurnOutcome::Completed { output } => Some(output),
            _ => None,
        }
    }

    /// The record of the blocking emission, when the turn was blocked.
    pub fn blocked_by(&self) -> Option<&InterceptionRecord> {
        match &self.outcome {
            TurnOutcome::Blocked { record, .. } => Some(record),
            _ => None,
        }
    }

    /// The calls that actually ran, with the arguments the tools received.
    pub fn tool_invocations(&self) -> impl Iterator<Item = &ToolCall> {
        self.tool_calls
            .iter()
            .filter(|o| o.invoked())
            .map(ToolCallOutcome::call)
    }

    /// The `summary.reason` a session ending after this turn reports:
    /// `completed` when it completed, `error` otherwise.
    pub fn shutdown_reason(&self) -> ShutdownReason {
        if self.is_completed() {
            ShutdownReason::Completed
        } else {
            ShutdownReason::Error
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    Fresh,
    Running,
    StartupDenied(Box<InterceptionRecord>),
    Closed,
}

/// The reference agent loop over one session; see the module docs.
pub struct Agent<M, T> {
    session: Session,
    model: M,
    tools: T,
    max_model_calls: usize,
    transcript: Vec<Value>,
    state: State,
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
        }
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
        self.model_loop(turn).await
    }

    async fn model_loop(&mut self, mut turn: Turn) -> Result<Turn, Error> {
        let model_id = self.model.id().to_owned();
        loop {
            if turn.model_calls >= self.max_model_calls {
                let error = TurnError::MaxModelCalls(self.max_model_calls);
                return Ok(turn.end(TurnOutcome::Failed { error }));
            }
            let pre = self
                .session
                .pre_model_call(&model_id, Value::Array(self.transcript.clone()))
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
            let answer = AssertUnwindSafe(self.model.respond(&self.transcript))
                .catch_unwind()
                .await;
            let response = match answer {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    let error = TurnError::Model(e.to_string());
                    return Ok(turn.end(TurnOutcome::Failed { error }));
                }
                Err(_) => {
                    let error = TurnError::Model("the model panicked".into());
                    return Ok(turn.end(TurnOutcome::Failed { error }));
                }
            };
            let post = self.session.post_model_call(&model_id, &response).await?;
            if !post.proceeds() {
                // §6.1: discarded as if the call had errored.
                return Ok(turn.blocked(post));
            }
            let Some(response) = post.target().and_then(ModelResponse::from_target) else {
                let error = TurnError::UnreadableResponse;
                return Ok(turn.end(TurnOutcome::Failed { error }));
            };
            if response.tool_calls.is_empty() {
                return self.finish(turn, response.content).await;
            }
            self.transcript.push(assistant_message(&response));
            let outcomes = self.run_tools(&response.tool_calls).await?;
            self.transcript
                .extend(outcomes.iter().map(ToolCallOutcome::message));
            turn.tool_calls.extend(outcomes);
        }
    }

    /// The buffered `output`: nothing is released before the verdict, and
    /// what is released is the verdicted content.
    async fn finish(&mut self, turn: Turn, content: Value) -> Result<Turn, Error> {
        let e = self.session.output(content).await?;
        if !e.proceeds() {
            return Ok(turn.blocked(e));
        }
        let output = match e.into_target() {
            Some(Value::Object(mut o)) if o.contains_key("content") => {
                o.remove("content").unwrap_or_default()
            }
            Some(other) => other,
            None => Value::Null,
        };
        self.transcript
            .push(json!({"role": "assistant", "content": output}));
        Ok(turn.end(TurnOutcome::Completed { output }))
    }

    /// Runs every tool call of one response concurrently, each in its own
    /// `pre_tool_call`/`post_tool_call` bracket (§12.2).
    async fn run_tools(&self, calls: &[ToolCall]) -> Result<Vec<ToolCallOutcome>, Error> {
        join_all(calls.iter().map(|c| self.run_tool(c)))
            .await
            .into_iter()
            .collect()
    }

    async fn run_tool(&self, requested: &ToolCall) -> Result<ToolCallOutcome, Error> {
        let pre = self.session.pre_tool_call(requested).await?;
        if !pre.proceeds() {
            // §6.2: no post_tool_call; the model sees a tool error.
            return Ok(ToolCallOutcome::Blocked {
                call: requested.clone(),
                record: Box::new(pre.record().clone()),
            });
        }
        let args = pre.into_target().unwrap_or_else(|| requested.args.clone());
        let call = ToolCall {
            args,
            ..requested.clone()
        };
        let ran = AssertUnwindSafe(self.tools.call(&call.name, &call.args))
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
        let post = self.session.post_tool_call(&call, &result).await?;
        if !post.proceeds() {
            return Ok(ToolCallOutcome::Discarded {
                call,
                record: Box::new(post.record().clone()),
            });
        }
        let value = post.into_target().unwrap_or(Value::Null);
        Ok(ToolCallOutcome::Completed {
            call,
            result: ToolResult {
                value,
                is_error: result.is_error,
            },
        })
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

#[cfg(test)]
mod tests;
