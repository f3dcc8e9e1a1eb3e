//! `hookwire hooks install`: an agent's hook configuration pointing at
//! `hookwire hook`, merged into the file the user already has. Only the
//! events hookwire governs are touched; in each, a handler whose command
//! is already a `hookwire hook --agent NAME` is replaced (so that
//! installing twice changes nothing), anything else is kept as it was,
//! and every other setting is left alone.
//!
//! | agent | project file | user file | shape |
//! |---|---|---|---|
//! | Claude Code | `.claude/settings.json` | `~/.claude/settings.json` | `hooks.EVENT[]` groups `{matcher?, hooks: [{type, command}]}` |
//! | Codex | `.codex/hooks.json` | `$CODEX_HOME/hooks.json` (`~/.codex`) | the same, without `SessionEnd` |
//! | Gemini CLI | `.gemini/settings.json` | `~/.gemini/settings.json` | the same groups; `hooksConfig.enabled` set |
//! | Cursor | `.cursor/hooks.json` | `~/.cursor/hooks.json` | `version: 1`, `hooks.event[]` handlers `{command, failClosed}` |
//! | Copilot CLI | `.github/hooks/hookwire.json` | — (repository only) | `version: 1`, `hooks.event[]` handlers `{type, bash, timeoutSec}` |

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::agents::Agent;
use crate::error::Error;

/// How an agent's configuration lists the handlers of one event.
#[derive(Clone, Copy)]
enum Shape {
    /// Claude Code's groups: `{matcher?, hooks: [{type, command}]}`.
    Groups,
    /// Cursor's handlers: `{command, failClosed}`.
    Cursor,
    /// Copilot's handlers: `{type, bash, timeoutSec}`.
    Copilot,
}

/// The events an agent's configuration hooks (and whether each takes a
/// tool matcher), and the shape of its handlers.
fn events(agent: Agent) -> (&'static [(&'static str, bool)], Shape) {
    match agent {
        Agent::ClaudeCode => (
            &[
                ("SessionStart", false),
                ("UserPromptSubmit", false),
                ("PreToolUse", true),
                ("PostToolUse", true),
                ("Stop", false),
                ("SessionEnd", false),
            ],
            Shape::Groups,
        ),
        Agent::Codex => (
            &[
                ("SessionStart", false),
                ("UserPromptSubmit", false),
                ("PreToolUse", true),
                ("PostToolUse", true),
                ("Stop", false),
            ],
            Shape::Groups,
        ),
        // Gemini's matcher is optional: without one, a hook sees every tool.
        Agent::GeminiCli => (
            &[
                ("SessionStart", false),
                ("BeforeAgent", false),
                ("BeforeModel", false),
                ("AfterModel", false),
                ("BeforeTool", false),
                ("AfterTool", false),
                ("AfterAgent", false),
                ("SessionEnd", false),
            ],
            Shape::Groups,
        ),
        Agent::Cursor => (
            &[
                ("sessionStart", false),
                ("beforeSubmitPrompt", false),
                ("preToolUse", false),
                ("postToolUse", false),
                ("stop", false),
                ("sessionEnd", false),
            ],
            Shape::Cursor,
        ),
        Agent::Copilot => (
            &[
                ("sessionStart", false),
                ("userPromptSubmitted", false),
                ("preToolUse", false),
                ("postToolUse", false),
                ("agentStop", false),
                ("sessionEnd", false),
            ],
            Shape::Copilot,
        ),
    }
}

/// The agent's project configuration file, relative to the project's
/// root.
pub fn project_settings(agent: Agent) -> PathBuf {
    PathBuf::from(match agent {
        Agent::ClaudeCode => ".claude/settings.json",
        Agent::Codex => ".codex/hooks.json",
        Agent::GeminiCli => ".gemini/settings.json",
        Agent::Cursor => ".cursor/hooks.json",
        Agent::Copilot => ".github/hooks/hookwire.json",
    })
}

/// The agent's user configuration file under `home` (for Codex, its
/// `CODEX_HOME` when `codex_home` is given); Copilot reads hooks from the
/// repository only.
pub fn user_settings(
    agent: Agent,
    home: &Path,
    codex_home: Option<&Path>,
) -> Result<PathBuf, Error> {
    Ok(match agent {
        Agent::ClaudeCode => home.join(".claude/settings.json"),
        Agent::Codex => codex_home
            .map_or_else(|| home.join(".codex"), Path::to_path_buf)
            .join("hooks.json"),
        Agent::GeminiCli => home.join(".gemini/settings.json"),
        Agent::Cursor => home.join(".cursor/hooks.json"),
        Agent::Copilot => {
            return Err(Error::Config(
                "Copilot CLI reads hooks from the repository's .github/hooks/ only: use --scope project"
                    .into(),
            ));
        }
    })
}

/// One handler of `command` in `shape`.
fn handler(shape: Shape, command: &str, matcher: bool) -> Value {
    match shape {
        Shape::Groups => {
            let mut group = json!({"hooks": [{"type": "command", "command": command}]});
            if matcher && let Some(g) = group.as_object_mut() {
                g.insert("matcher".into(), "*".into());
            }
            group
        }
        // A hook that crashes or times out blocks, rather than letting
        // the step through.
        Shape::Cursor => json!({"command": command, "failClosed": true}),
        Shape::Copilot => json!({"type": "command", "bash": command, "timeoutSec": 30}),
    }
}

/// Whether `entry` (a group or a handler) runs a command with `marker`.
fn ours(entry: &Value, marker: &str) -> bool {
    let runs = |h: &Value| {
        ["command", "bash"]
            .iter()
            .any(|k| h[*k].as_str().is_some_and(|c| c.contains(marker)))
    };
    runs(entry)
        || entry["hooks"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(runs))
}

/// The configuration text `existing` (none: a new file) with `command` —
/// the full `hookwire hook --agent NAME …` command line — hooked at every
/// governed event of `agent`.
pub fn merge_settings(
    agent: Agent,
    existing: Option<&str>,
    command: &str,
) -> Result<String, Error> {
    let marker = format!(" hook --agent {}", agent.name());
    if !command.contains(&marker) {
        return Err(Error::Config(format!(
            "the hook command must contain {marker:?}"
        )));
    }
    let mut settings = match existing.map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Error::Config(
                    "the settings file is not a JSON object".into(),
                ));
            }
            Err(e) => return Err(Error::Config(format!("the settings file is not JSON: {e}"))),
        },
    };
    let (events, shape) = events(agent);
    match shape {
        Shape::Cursor | Shape::Copilot => match settings.get("version") {
            None => {
                settings.insert("version".into(), 1.into());
            }
            Some(v) if v == 1 => {}
            Some(v) => {
                return Err(Error::Config(format!(
                    "the hooks file's `version` is {v}, not 1"
                )));
            }
        },
        Shape::Groups if agent == Agent::GeminiCli => {
            // Hooks run only where the hook system is enabled.
            let config = settings
                .entry("hooksConfig")
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(config) = config else {
                return Err(Error::Config(
                    "the settings' `hooksConfig` is not an object".into(),
                ));
            };
            config.insert("enabled".into(), true.into());
        }
        Shape::Groups => {}
    }
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(Error::Config(
            "the settings' `hooks` is not an object".into(),
        ));
    };
    for (event, matcher) in events {
        let entries = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(entries) = entries else {
            return Err(Error::Config(format!(
                "the settings' `hooks.{event}` is not an array"
            )));
        };
        entries.retain(|e| !ours(e, &marker));
        entries.push(handler(shape, command, *matcher));
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| Error::Config(format!("cannot write the settings: {e}")))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests;
