//! `hookwire hooks install`: an agent's hook configuration pointing at
//! `hookwire hook`, merged into the file the user already has. Only the
//! events hookwire governs are touched; in each, a handler whose command
//! is already a `hookwire hook --agent NAME` is replaced (so that
//! installing twice changes nothing), anything else is kept as it was,
//! and every other setting is left alone.
//!
//! Claude Code can also call the daemon itself: an `http` handler posting
//! the payload to `/v1/hooks/claude-code`, with `onFailure: "block"`, so
//! an unreachable or failing daemon blocks the step as a crashing command
//! hook cannot (it only blocks on exit status 2), and no process starts
//! per event ([`merge_http_settings`]).
//!
//! With `--gateway URL` the agent's model traffic is routed through
//! `hookwire gateway` too (module `model_route`): Claude Code's
//! `env.ANTHROPIC_BASE_URL`, Codex's `model_providers` entry.
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

mod model_route;

pub use model_route::{
    CODEX_PROVIDER, gateway_root, merge_claude_base_url, merge_codex_provider, unroutable,
};

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

/// The route path an `http` handler of `agent` posts to.
fn route(agent: Agent) -> String {
    format!("/v1/hooks/{}", agent.name())
}

/// One Claude Code `http` handler group posting to `url`, presenting the
/// token held by the environment variable `token_env` (interpolated by
/// the agent, never written into the file).
fn http_handler(url: &str, token_env: Option<&str>, matcher: bool) -> Value {
    let mut hook = json!({"type": "http", "url": url, "timeout": 30, "onFailure": "block"});
    if let (Some(var), Some(h)) = (token_env, hook.as_object_mut()) {
        h.insert(
            "headers".into(),
            json!({"Authorization": format!("Bearer ${var}")}),
        );
        h.insert("allowedEnvVars".into(), json!([var]));
    }
    let mut group = json!({"hooks": [hook]});
    if matcher && let Some(g) = group.as_object_mut() {
        g.insert("matcher".into(), "*".into());
    }
    group
}

/// Whether `command` runs hookwire's command hook for the agent whose
/// marker is `marker` (` hook --agent NAME`): `hookwire hook …` or the
/// small `hookwire-hook …`.
fn runs_hook(command: &str, marker: &str) -> bool {
    command.contains(marker) || command.contains(&format!("hookwire-{}", marker.trim_start()))
}

/// Whether `entry` (a group or a handler) runs hookwire's command hook
/// (`runs_hook`), or posts to a URL ending in `route`.
fn ours(entry: &Value, marker: &str, route: &str) -> bool {
    let runs = |h: &Value| {
        ["command", "bash"]
            .iter()
            .any(|k| h[*k].as_str().is_some_and(|c| runs_hook(c, marker)))
            || (h["type"] == "http" && h["url"].as_str().is_some_and(|u| u.ends_with(route)))
    };
    runs(entry)
        || entry["hooks"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(runs))
}

/// What one installed handler does.
enum Handler<'a> {
    /// Runs `hookwire hook --agent NAME …`.
    Command(&'a str),
    /// Posts to the daemon's route (Claude Code only).
    Http {
        url: &'a str,
        token_env: Option<&'a str>,
    },
}

/// The configuration text `existing` (none: a new file) with `command` —
/// the full `hookwire hook --agent NAME …` (or `hookwire-hook --agent
/// NAME …`) command line — hooked at every governed event of `agent`,
/// replacing either form installed before.
pub fn merge_settings(
    agent: Agent,
    existing: Option<&str>,
    command: &str,
) -> Result<String, Error> {
    let marker = format!(" hook --agent {}", agent.name());
    if !runs_hook(command, &marker) {
        return Err(Error::Config(format!(
            "the hook command must run `hookwire hook --agent {0}` or `hookwire-hook --agent {0}`",
            agent.name()
        )));
    }
    merge(agent, existing, &Handler::Command(command))
}

/// The configuration text `existing` with an `http` handler posting every
/// governed event to the daemon at `base` (`http://HOST:PORT`), with
/// `onFailure: "block"`; `token_env` names the environment variable the
/// agent reads the daemon's token from. Claude Code only: the other
/// agents run command hooks.
pub fn merge_http_settings(
    agent: Agent,
    existing: Option<&str>,
    base: &str,
    token_env: Option<&str>,
) -> Result<String, Error> {
    if agent != Agent::ClaudeCode {
        return Err(Error::Config(format!(
            "{} has no HTTP hooks hookwire installs: use its command hook",
            agent.name()
        )));
    }
    let authority = base
        .strip_prefix("http://")
        .map(|a| a.trim_end_matches('/'))
        .filter(|a| !a.is_empty() && !a.contains(['/', '?', '#', '@']))
        .ok_or_else(|| {
            Error::Config("an HTTP hook needs the daemon's base URL, http://HOST:PORT".into())
        })?;
    if let Some(var) = token_env
        && (var.is_empty()
            || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || var.starts_with(|c: char| c.is_ascii_digit()))
    {
        return Err(Error::Config(
            "the token's environment variable must be a name of letters, digits and _".into(),
        ));
    }
    let url = format!("http://{authority}{}", route(agent));
    merge(
        agent,
        existing,
        &Handler::Http {
            url: &url,
            token_env,
        },
    )
}

fn merge(agent: Agent, existing: Option<&str>, handler_of: &Handler<'_>) -> Result<String, Error> {
    let marker = format!(" hook --agent {}", agent.name());
    let route = route(agent);
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
        entries.retain(|e| !ours(e, &marker, &route));
        entries.push(match handler_of {
            Handler::Command(command) => handler(shape, command, *matcher),
            Handler::Http { url, token_env } => http_handler(url, *token_env, *matcher),
        });
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| Error::Config(format!("cannot write the settings: {e}")))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests;
