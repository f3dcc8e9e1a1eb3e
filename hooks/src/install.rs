//! `hookwire hooks install`: an agent's hook configuration pointing at
//! `hookwire hook`, merged into the settings the user already has. Only
//! the six governed events are touched; in each, a handler group whose
//! command is already a `hookwire hook --agent NAME` is replaced (so that
//! installing twice changes nothing), anything else is kept as it was,
//! and every other setting is left alone.

use serde_json::{Map, Value, json};

use crate::agents::Agent;
use crate::error::Error;

/// The events a Claude Code configuration hooks, and whether each takes a
/// tool matcher.
const CLAUDE_EVENTS: [(&str, bool); 6] = [
    ("SessionStart", false),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PostToolUse", true),
    ("Stop", false),
    ("SessionEnd", false),
];

/// The settings text `existing` (none: a new file) with `command` — the
/// full `hookwire hook --agent NAME …` command line — hooked at every
/// governed event of `agent`.
pub fn merge_settings(
    agent: Agent,
    existing: Option<&str>,
    command: &str,
) -> Result<String, Error> {
    if agent != Agent::ClaudeCode {
        return Err(Error::Config(format!(
            "installing hooks for {} is not supported yet (docs/hooks.md shows its configuration)",
            agent.name()
        )));
    }
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
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(Error::Config(
            "the settings' `hooks` is not an object".into(),
        ));
    };
    for (event, matcher) in CLAUDE_EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            return Err(Error::Config(format!(
                "the settings' `hooks.{event}` is not an array"
            )));
        };
        let ours = |g: &Value| {
            g["hooks"].as_array().is_some_and(|hs| {
                hs.iter()
                    .any(|h| h["command"].as_str().is_some_and(|c| c.contains(&marker)))
            })
        };
        groups.retain(|g| !ours(g));
        let mut group = json!({"hooks": [{"type": "command", "command": command}]});
        if matcher && let Some(g) = group.as_object_mut() {
            g.insert("matcher".into(), "*".into());
        }
        groups.push(group);
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| Error::Config(format!("cannot write the settings: {e}")))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::merge_settings;
    use crate::agents::Agent;

    const CMD: &str = "/usr/bin/hookwire hook --agent claude-code";

    fn merged(existing: Option<&str>) -> Value {
        serde_json::from_str(&merge_settings(Agent::ClaudeCode, existing, CMD).unwrap()).unwrap()
    }

    #[test]
    fn a_new_file_hooks_the_six_events() {
        let v = merged(None);
        let hooks = v["hooks"].as_object().unwrap();
        assert_eq!(hooks.len(), 6);
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert!(v["hooks"]["Stop"][0].get("matcher").is_none());
        assert_eq!(v["hooks"]["SessionEnd"][0]["hooks"][0]["command"], CMD);
    }

    #[test]
    fn the_users_entries_are_kept_and_installing_twice_changes_nothing() {
        let existing = json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(npm test)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
            }
        })
        .to_string();
        let once = merge_settings(Agent::ClaudeCode, Some(&existing), CMD).unwrap();
        let twice = merge_settings(Agent::ClaudeCode, Some(&once), CMD).unwrap();
        assert_eq!(once, twice);
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(v["permissions"]["allow"][0], "Bash(npm test)");
        assert_eq!(
            v["hooks"]["Notification"][0]["hooks"][0]["command"],
            "notify-send hi"
        );
        let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "./lint.sh");
        assert_eq!(pre[1]["hooks"][0]["command"], CMD);
        // A changed command replaces the old one.
        let moved = "/opt/hookwire hook --agent claude-code --endpoint http://127.0.0.1:9";
        let v: Value =
            serde_json::from_str(&merge_settings(Agent::ClaudeCode, Some(&once), moved).unwrap())
                .unwrap();
        let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[1]["hooks"][0]["command"], moved);
    }

    #[test]
    fn unusable_settings_and_agents_are_refused() {
        for bad in [
            "[1]",
            "{not json",
            r#"{"hooks": []}"#,
            r#"{"hooks": {"Stop": {}}}"#,
        ] {
            assert!(
                merge_settings(Agent::ClaudeCode, Some(bad), CMD).is_err(),
                "{bad}"
            );
        }
        assert!(merge_settings(Agent::Codex, None, "hookwire hook --agent codex").is_err());
        assert!(merge_settings(Agent::ClaudeCode, None, "/bin/true").is_err());
        assert_eq!(merged(Some("  \n")), merged(None));
    }
}
