//! The agents whose hooks the core governs, one adapter module each. An
//! adapter only decodes the agent's payload into a [`HookCall`] and
//! encodes an [`Outcome`] in the agent's own output format; every
//! decision is the core's (`host`).

mod claude;
mod copilot;
mod cursor;
mod derived;
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
    /// no session-end event, so its sessions end on idle-out, and no
    /// `ask`.
    Codex,
    /// Google's Gemini CLI (`@google/gemini-cli`).
    GeminiCli,
    /// Cursor's agent (`.cursor/hooks.json`).
    Cursor,
    /// GitHub Copilot CLI (`.github/hooks/*.json`).
    Copilot,
}

impl Agent {
    /// Every supported agent.
    pub const ALL: [Agent; 5] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::GeminiCli,
        Agent::Cursor,
        Agent::Copilot,
    ];

    /// The agent named on a route or the command line (`claude-code`,
    /// `codex`, `gemini-cli`, `cursor`, `copilot`).
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
            Self::Cursor => "cursor",
            Self::Copilot => "copilot",
        }
    }

    /// What the agent's hook output can express.
    pub const fn capabilities(self) -> Capabilities {
        match self {
            Self::ClaudeCode => claude::CAPABILITIES,
            // Codex refuses `permissionDecision: "ask"` as unsupported and
            // then runs the tool: a liftable deny must be a deny there.
            Self::Codex => Capabilities {
                ask: false,
                ..claude::CAPABILITIES
            },
            Self::GeminiCli => gemini::CAPABILITIES,
            Self::Cursor => cursor::CAPABILITIES,
            Self::Copilot => copilot::CAPABILITIES,
        }
    }

    /// Decodes one hook payload.
    pub fn decode(self, payload: &[u8]) -> Result<HookCall, Error> {
        match self {
            Self::ClaudeCode | Self::Codex => claude::decode(self.name(), payload),
            Self::GeminiCli => gemini::decode(payload),
            Self::Cursor => cursor::decode(payload),
            Self::Copilot => copilot::decode(payload),
        }
    }

    /// The agent's output for `outcome` at `event`.
    pub fn encode(self, event: &Event, outcome: &Outcome) -> Value {
        match self {
            Self::ClaudeCode | Self::Codex => claude::encode(event, outcome),
            Self::GeminiCli => gemini::encode(event, outcome),
            Self::Cursor => cursor::encode(event, outcome),
            Self::Copilot => copilot::encode(event, outcome),
        }
    }

    /// The output that stops the agent when the payload could not be
    /// read at all (the event is unknown, so only an answer every event
    /// honours will do).
    pub fn fail_closed(self, reason: &str) -> Value {
        match self {
            Self::ClaudeCode | Self::Codex => claude::stop_agent(reason),
            Self::GeminiCli => gemini::stop_agent(reason),
            Self::Cursor => cursor::stop_agent(reason),
            Self::Copilot => copilot::stop_agent(reason),
        }
    }

    /// What a command hook that could not get an answer prints and exits
    /// with, so that the agent blocks: Claude Code, Codex, Gemini CLI and
    /// Cursor block on exit status 2 (the reason on stderr) and let any
    /// other non-zero status through; Copilot skips every failing hook,
    /// so it is given its deny on stdout with status 0.
    pub fn command_failure(self, reason: &str) -> (Option<Value>, u8) {
        match self {
            Self::Copilot => (Some(copilot::stop_agent(reason)), 0),
            _ => (None, 2),
        }
    }
}
