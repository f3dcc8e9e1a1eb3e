//! What a turn of an [`Agent`](super::Agent) reports: the [`Turn`], how
//! it ended ([`TurnOutcome`], [`TurnError`]) and what happened to each
//! tool call the model requested ([`ToolCallOutcome`]), including the tool
//! message the model sees for it.

use hookwire::{InterceptionPoint, InterceptionRecord};
use serde_json::{Map, Value, json};

use super::routing::RoutedCall;
use hookwire_client::{Emission, ShutdownReason, ToolCall, ToolResult};

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
    pub(super) fn message(&self) -> Value {
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
    /// The text released to the caller segment by segment while the turn
    /// streamed under incremental mediation (§12.1), in order; empty for a
    /// buffered turn, whose answer is released only by `output`.
    pub released: String,
    /// The calls a `pre_tool_call` verdict routed to a named executor, in
    /// request order.
    pub routed: Vec<RoutedCall>,
}

impl Turn {
    pub(super) fn new() -> Self {
        Self {
            outcome: TurnOutcome::Completed {
                output: Value::Null,
            },
            tool_calls: Vec::new(),
            model_calls: 0,
            released: String::new(),
            routed: Vec::new(),
        }
    }

    pub(super) fn end(mut self, outcome: TurnOutcome) -> Self {
        self.outcome = outcome;
        self
    }

    pub(super) fn blocked(self, e: Emission) -> Self {
        self.withheld(e.record().clone())
    }

    /// Blocked by the emission `record` tells of.
    pub(super) fn withheld(self, record: InterceptionRecord) -> Self {
        let at = record.interception_point;
        self.end(TurnOutcome::Blocked {
            at,
            record: Box::new(record),
        })
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
