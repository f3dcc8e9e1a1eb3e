//! The agents whose hooks the core governs, one adapter module each. An
//! adapter only decodes the agent's payload into a [`HookCall`] and
//! encodes an [`Outcome`] in the agent's own output format; every
//! decision is the core's (`host`).

mod claude;
mod gemini;

use serde_json::Value;

use crate::error::Error;
use crate::event::{Capabilities, Event, HookCall, Outcome};

/// A supported coding agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code (`@anthropic-ai/claude-code`).
    ClaudeCode,
    /// OpenAI's Codex CLI, whose hooks are Claude Code's format; it has
    /// no session-end event, so its sessions end on idle-out.
    Codex,
    /// Google's Gemini CLI (`@google/gemini-cli`).
    GeminiCli,
}

impl Agent {
    /// Every supported agent.
    pub const ALL: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::GeminiCli];

    /// The agent named on a route or the command line (`claude-code`,
    /// `codex`, `gemini-cli`).
    pub fn from_name(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| Error::UnknownAgent(name.chars().take(64).collect()))
    }

    /// The agent's name on routes, flags and in contexts.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }

    /// What the agent's hook output can express.
    pub const fn capabilities(self) -> Capabilities {
        match self {
            Self::ClaudeCode | Self::Codex => claude::CAPABILITIES,
            Self::GeminiCli => gemini::CAPABILITIES,
        }
    }

    /// Decodes one hook payload.
    pub fn decode(self, payload: &[u8]) -> Result<HookCall, Error> {
        match self {
            Self::ClaudeCode | Self::Codex => claude::decode(self.name(), payload),
            Self::GeminiCli => gemini::decode(payload),
        }
    }

    /// The agent's output for `outcome` at `event`.
    pub fn encode(self, event: &Event, outcome: &Outcome) -> Value {
        match self {
            Self::ClaudeCode | Self::Codex => claude::encode(event, outcome),
            Self::GeminiCli => gemini::encode(event, outcome),
        }
    }

    /// The output that stops the agent when the payload could not be
    /// read at all (the event is unknown, so only an answer every event
    /// honours will do).
    pub fn fail_closed(self, reason: &str) -> Value {
        match self {
            Self::ClaudeCode | Self::Codex => claude::stop_agent(reason),
            Self::GeminiCli => gemini::stop_agent(reason),
        }
    }

    /// The exit status of a command hook that blocks (2 for all three;
    /// any other non-zero status lets the step through).
    pub const fn blocking_exit_code(self) -> u8 {
        2
    }
}
