//! The loop itself: an [`Agent`] brackets its session, runs each turn
//! through `input`, the model and tool brackets and the buffered `output`,
//! and reports a [`Turn`]. See the [`agent`](super) overview.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use futures::future::join_all;
use hookwire::{InterceptionPoint, InterceptionRecord};
use serde_json::{Value, json};

use super::model::Model;
use super::tools::Toolbox;
use super::turn::{ToolCallOutcome, Turn, TurnError, TurnOutcome};
use crate::emission::Emission;
use crate::error::Error;
use crate::payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
use crate::session::Session;

/// Default bound on model calls within one turn.
pub const DEFAULT_MAX_MODEL_CALLS: usize = 16;

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
