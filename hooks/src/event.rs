//! The agent-neutral vocabulary between the adapters and the core: a
//! decoded hook call ([`HookCall`], one [`Event`] of one agent session),
//! what the agent can express ([`Capabilities`]), and what the core
//! decided ([`Outcome`]), which each adapter encodes in its own format.

use serde_json::Value;

/// One hook invocation, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// The agent's own session id (the key of its hookwire session).
    pub session_id: String,
    /// The agent's own name for the event (e.g. `PreToolUse`), for
    /// messages and the context's `extensions`.
    pub event_name: String,
    /// The working directory the agent reported, when it did.
    pub cwd: Option<String>,
    /// What happened.
    pub event: Event,
}

/// The hook events the core maps to points.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The agent session began (or was resumed): `agent_startup`.
    SessionStart {
        /// Why it started (`startup`, `resume`, `clear`, `compact`).
        source: Option<String>,
    },
    /// The user submitted a prompt: `input` (role `user`).
    Prompt {
        /// The prompt text.
        prompt: String,
    },
    /// A tool is about to run: `pre_tool_call`.
    PreTool {
        /// The agent's id of this tool use.
        id: String,
        /// The tool's name as the agent reports it (`Bash`, `mcp__s__t`).
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// A tool ran: `post_tool_call`.
    PostTool {
        /// The agent's id of this tool use.
        id: String,
        /// The tool's name as the agent reports it.
        name: String,
        /// The arguments it ran with.
        input: Value,
        /// What it returned.
        response: Value,
        /// Whether it failed.
        is_error: bool,
    },
    /// A model request is about to be sent: `pre_model_call`.
    PreModel {
        /// The model asked for.
        model: String,
        /// The request's messages, as the agent reports them.
        messages: Value,
    },
    /// A model response arrived, or one streamed chunk of it:
    /// `post_model_call` (each chunk governed as it arrives).
    PostModel {
        /// The model that answered.
        model: String,
        /// The text of this response or chunk.
        text: String,
        /// Why the model stopped; `None` on a chunk before the last.
        finish_reason: Option<String>,
    },
    /// The agent is about to finish its answer: `output`.
    Stop {
        /// The final message when the agent reports it, else `null`.
        message: Value,
    },
    /// The agent session ended: `agent_shutdown`.
    SessionEnd,
}

impl Event {
    /// The point the event is emitted at.
    pub fn point(&self) -> hookwire::InterceptionPoint {
        use hookwire::InterceptionPoint as P;
        match self {
            Self::SessionStart { .. } => P::AgentStartup,
            Self::Prompt { .. } => P::Input,
            Self::PreTool { .. } => P::PreToolCall,
            Self::PostTool { .. } => P::PostToolCall,
            Self::PreModel { .. } => P::PreModelCall,
            Self::PostModel { .. } => P::PostModelCall,
            Self::Stop { .. } => P::Output,
            Self::SessionEnd => P::AgentShutdown,
        }
    }
}

/// What an agent's hook output can express, so that the core never
/// answers with something the agent would silently ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The pre-tool hook can replace the tool's arguments.
    pub rewrite_tool_input: bool,
    /// The post-tool hook can replace the tool's result.
    pub rewrite_tool_output: bool,
    /// The prompt hook can replace the prompt.
    pub rewrite_prompt: bool,
    /// The pre-tool hook can hand the decision to the human at the
    /// terminal (`ask`).
    pub ask: bool,
    /// The before-model hook can replace the request's messages.
    pub rewrite_model_request: bool,
    /// The after-model hook can replace the response (or chunk).
    pub rewrite_model_response: bool,
    /// The prompt hook can stop the prompt. Where it cannot, a deny is
    /// recorded and the rest of the turn is quarantined.
    pub block_prompt: bool,
    /// The post-tool hook can withhold the tool's result. Where it
    /// cannot, a deny is recorded and the rest of the turn is
    /// quarantined.
    pub block_post_tool: bool,
}

impl Capabilities {
    /// What no agent can be assumed to express: every rewrite, the ask
    /// and the blocks after the fact are off; the adapters turn on what
    /// their agent has.
    pub const NONE: Self = Self {
        rewrite_tool_input: false,
        rewrite_tool_output: false,
        rewrite_prompt: false,
        ask: false,
        rewrite_model_request: false,
        rewrite_model_response: false,
        block_prompt: false,
        block_post_tool: false,
    };
}

/// What the core decided for one hook call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The step proceeds unchanged (the agent's own permission rules
    /// still apply).
    Proceed,
    /// The step proceeds with this replacement: the tool's arguments at a
    /// pre-tool event, its result at a post-tool event, the prompt at a
    /// prompt event. Only produced where [`Capabilities`] allow it.
    Rewrite(Value),
    /// The step is blocked, with the reason the agent shows.
    Block {
        /// Why, for the agent and its user.
        reason: String,
    },
    /// A liftable deny handed to the human at the terminal.
    Ask {
        /// Why the call needs a decision.
        reason: String,
    },
    /// The session start was denied: the agent stops altogether.
    Stop {
        /// Why.
        reason: String,
    },
}
