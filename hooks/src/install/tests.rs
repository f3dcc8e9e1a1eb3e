//! Merging each agent's hook configuration: every governed event hooked
//! in the agent's shape, the user's entries kept, idempotent, a moved
//! command replacing the old one, unusable files refused.

use std::path::Path;

use serde_json::{Value, json};

use super::{merge_http_settings, merge_settings, project_settings, user_settings};
use crate::agents::Agent;

fn cmd(agent: Agent) -> String {
    format!("/usr/bin/hookwire hook --agent {}", agent.name())
}

fn merged(agent: Agent, existing: Option<&str>) -> Value {
    serde_json::from_str(&merge_settings(agent, existing, &cmd(agent)).unwrap()).unwrap()
}

#[test]
fn a_new_file_hooks_every_governed_event_in_the_agents_shape() {
    let v = merged(Agent::ClaudeCode, None);
    assert_eq!(v["hooks"].as_object().unwrap().len(), 6);
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert!(v["hooks"]["Stop"][0].get("matcher").is_none());
    assert_eq!(
        v["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
        cmd(Agent::ClaudeCode)
    );

    let v = merged(Agent::Codex, None);
    let events: Vec<&String> = v["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events.len(), 5);
    assert!(v["hooks"].get("SessionEnd").is_none());

    let v = merged(Agent::GeminiCli, None);
    assert_eq!(v["hooksConfig"]["enabled"], true);
    assert_eq!(v["hooks"].as_object().unwrap().len(), 8);
    assert_eq!(
        v["hooks"]["AfterModel"][0]["hooks"][0]["command"],
        cmd(Agent::GeminiCli)
    );

    let v = merged(Agent::Cursor, None);
    assert_eq!(v["version"], 1);
    assert_eq!(
        v["hooks"]["preToolUse"][0],
        json!({"command": cmd(Agent::Cursor), "failClosed": true})
    );
    assert_eq!(v["hooks"].as_object().unwrap().len(), 6);

    let v = merged(Agent::Copilot, None);
    assert_eq!(v["version"], 1);
    assert_eq!(
        v["hooks"]["agentStop"][0],
        json!({"type": "command", "bash": cmd(Agent::Copilot), "timeoutSec": 30})
    );
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
    let cc = Agent::ClaudeCode;
    let once = merge_settings(cc, Some(&existing), &cmd(cc)).unwrap();
    let twice = merge_settings(cc, Some(&once), &cmd(cc)).unwrap();
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
    assert_eq!(pre[1]["hooks"][0]["command"], cmd(cc));
    // A changed command replaces the old one.
    let moved = "/opt/hookwire hook --agent claude-code --endpoint http://127.0.0.1:9";
    let v: Value = serde_json::from_str(&merge_settings(cc, Some(&once), moved).unwrap()).unwrap();
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    assert_eq!(pre[1]["hooks"][0]["command"], moved);
    // The small binary replaces the subcommand, and back.
    let small = "/opt/hookwire-hook --agent claude-code";
    let once_small = merge_settings(cc, Some(&once), small).unwrap();
    let v: Value = serde_json::from_str(&once_small).unwrap();
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    assert_eq!(pre[1]["hooks"][0]["command"], small);
    let back: Value =
        serde_json::from_str(&merge_settings(cc, Some(&once_small), &cmd(cc)).unwrap()).unwrap();
    assert_eq!(back["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert!(merge_settings(cc, None, "/opt/hookwire-hook --agent codex").is_err());

    for (agent, event, theirs) in [
        (Agent::Cursor, "stop", json!({"command": "./audit.sh"})),
        (
            Agent::Copilot,
            "preToolUse",
            json!({"type": "command", "bash": "./guard.sh"}),
        ),
    ] {
        let existing = json!({"version": 1, "hooks": {event: [theirs.clone()], "afterFileEdit": [{"command": "fmt"}]}});
        let once = merge_settings(agent, Some(&existing.to_string()), &cmd(agent)).unwrap();
        assert_eq!(
            merge_settings(agent, Some(&once), &cmd(agent)).unwrap(),
            once
        );
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["hooks"][event][0], theirs);
        assert_eq!(v["hooks"][event].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["afterFileEdit"][0]["command"], "fmt");
    }
    // Gemini's other settings survive; a disabled hook system is enabled.
    let existing =
        json!({"theme": "dark", "hooksConfig": {"enabled": false, "disabled": ["x"]}}).to_string();
    let v = merged(Agent::GeminiCli, Some(&existing));
    assert_eq!(
        (v["theme"].as_str(), v["hooksConfig"]["enabled"].as_bool()),
        (Some("dark"), Some(true))
    );
    assert_eq!(v["hooksConfig"]["disabled"][0], "x");
}

#[test]
fn unusable_settings_are_refused() {
    for bad in [
        "[1]",
        "{not json",
        r#"{"hooks": []}"#,
        r#"{"hooks": {"Stop": {}}}"#,
    ] {
        assert!(
            merge_settings(Agent::ClaudeCode, Some(bad), &cmd(Agent::ClaudeCode)).is_err(),
            "{bad}"
        );
    }
    assert!(
        merge_settings(
            Agent::Cursor,
            Some(r#"{"version": 2}"#),
            &cmd(Agent::Cursor)
        )
        .is_err()
    );
    assert!(
        merge_settings(
            Agent::GeminiCli,
            Some(r#"{"hooksConfig": 1}"#),
            &cmd(Agent::GeminiCli)
        )
        .is_err()
    );
    assert!(merge_settings(Agent::Codex, None, "hookwire hook --agent claude-code").is_err());
    assert!(merge_settings(Agent::ClaudeCode, None, "/bin/true").is_err());
    assert_eq!(
        merged(Agent::ClaudeCode, Some("  \n")),
        merged(Agent::ClaudeCode, None)
    );
}

#[test]
fn each_agent_has_its_files() {
    let home = Path::new("/home/u");
    assert_eq!(
        project_settings(Agent::Codex),
        Path::new(".codex/hooks.json")
    );
    assert_eq!(
        project_settings(Agent::Copilot),
        Path::new(".github/hooks/hookwire.json")
    );
    assert_eq!(
        user_settings(Agent::Cursor, home, None).unwrap(),
        home.join(".cursor/hooks.json")
    );
    assert_eq!(
        user_settings(Agent::Codex, home, None).unwrap(),
        home.join(".codex/hooks.json")
    );
    assert_eq!(
        user_settings(Agent::Codex, home, Some(Path::new("/etc/cx"))).unwrap(),
        Path::new("/etc/cx/hooks.json")
    );
    assert!(user_settings(Agent::Copilot, home, None).is_err());
}

#[test]
fn claude_code_can_call_the_daemon_over_http_and_blocks_when_it_fails() {
    let existing = json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
    ]}})
    .to_string();
    let text = merge_http_settings(
        Agent::ClaudeCode,
        Some(&existing),
        "http://127.0.0.1:8790/",
        Some("HOOKWIRE_HOOKS_TOKEN"),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["hooks"].as_object().unwrap().len(), 6);
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "the user's hook kept: {v}");
    let hook = &pre[1]["hooks"][0];
    assert_eq!(hook["type"], "http");
    assert_eq!(hook["url"], "http://127.0.0.1:8790/v1/hooks/claude-code");
    assert_eq!(hook["onFailure"], "block");
    assert_eq!(
        hook["headers"]["Authorization"],
        "Bearer $HOOKWIRE_HOOKS_TOKEN"
    );
    assert_eq!(hook["allowedEnvVars"], json!(["HOOKWIRE_HOOKS_TOKEN"]));
    assert_eq!(pre[1]["matcher"], "*");

    // Installing again, or switching from the command hook, leaves one of ours.
    let again = merge_http_settings(
        Agent::ClaudeCode,
        Some(&text),
        "http://127.0.0.1:8790",
        Some("HOOKWIRE_HOOKS_TOKEN"),
    )
    .unwrap();
    assert_eq!(again, text);
    let command = merge_settings(Agent::ClaudeCode, Some(&text), &cmd(Agent::ClaudeCode)).unwrap();
    let v: Value = serde_json::from_str(&command).unwrap();
    assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["type"], "command");
    let back = merge_http_settings(
        Agent::ClaudeCode,
        Some(&command),
        "http://127.0.0.1:8790",
        None,
    )
    .unwrap();
    let v: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert!(
        v["hooks"]["PreToolUse"][1]["hooks"][0]
            .get("headers")
            .is_none()
    );

    // What an HTTP hook cannot be.
    for (agent, base, var) in [
        (Agent::Codex, "http://127.0.0.1:8790", None),
        (Agent::ClaudeCode, "unix:/run/hooks.sock", None),
        (Agent::ClaudeCode, "https://127.0.0.1:8790/x", None),
        (
            Agent::ClaudeCode,
            "http://127.0.0.1:8790",
            Some("TOKEN; rm -rf /"),
        ),
    ] {
        assert!(
            merge_http_settings(agent, None, base, var).is_err(),
            "{base} {var:?}"
        );
    }
}

#[test]
fn the_gateway_url_is_its_root_whatever_the_user_wrote() {
    use super::gateway_root;
    for (given, root) in [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("https://gw.internal/v1/", "https://gw.internal"),
    ] {
        assert_eq!(gateway_root(given).unwrap(), root, "{given}");
    }
    for bad in [
        "127.0.0.1:8080",
        "http://",
        "http://a/b",
        "http://u@a",
        "ftp://a",
        "http://a b",
    ] {
        assert!(gateway_root(bad).is_err(), "{bad}");
    }
}

#[test]
fn claude_codes_model_route_joins_its_hooks_and_keeps_the_users_env() {
    use super::merge_claude_base_url;
    let cc = Agent::ClaudeCode;
    let existing = json!({"env": {"DISABLE_TELEMETRY": "1"}, "model": "opus"}).to_string();
    let hooked = merge_settings(cc, Some(&existing), &cmd(cc)).unwrap();
    let once = merge_claude_base_url(Some(&hooked), "http://127.0.0.1:8080").unwrap();
    let twice = merge_claude_base_url(Some(&once), "http://127.0.0.1:8080").unwrap();
    assert_eq!(once, twice);
    // The hooks merged again over the routed file change nothing either.
    assert_eq!(merge_settings(cc, Some(&once), &cmd(cc)).unwrap(), once);
    let v: Value = serde_json::from_str(&once).unwrap();
    assert_eq!(v["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:8080");
    assert_eq!(v["env"]["DISABLE_TELEMETRY"], "1");
    assert_eq!(v["model"], "opus");
    assert_eq!(v["hooks"].as_object().unwrap().len(), 6);
    // A moved gateway replaces the old address.
    let moved = merge_claude_base_url(Some(&once), "http://127.0.0.1:9090").unwrap();
    let v: Value = serde_json::from_str(&moved).unwrap();
    assert_eq!(v["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9090");
    assert!(merge_claude_base_url(Some(r#"{"env": []}"#), "http://a").is_err());
    assert!(merge_claude_base_url(Some("[]"), "http://a").is_err());
}

#[test]
fn codexs_provider_is_merged_into_its_config_keeping_the_users_settings() {
    use super::{CODEX_PROVIDER, merge_codex_provider};
    let existing = "# my settings\nmodel = \"gpt-5\"\napproval_policy = \"on-request\"\n\n\
                    [model_providers.azure]\nname = \"Azure\" # mine\nbase_url = \"https://x\"\n\n\
                    [features]\nweb_search = true\n";
    let once =
        merge_codex_provider(Some(existing), "http://127.0.0.1:8080", "OPENAI_API_KEY").unwrap();
    let twice =
        merge_codex_provider(Some(&once), "http://127.0.0.1:8080", "OPENAI_API_KEY").unwrap();
    assert_eq!(once, twice);
    assert!(once.starts_with("# my settings\n"), "{once}");
    assert!(once.contains("name = \"Azure\" # mine"), "{once}");
    let v: toml_edit::DocumentMut = once.parse().unwrap();
    assert_eq!(v["model_provider"].as_str(), Some(CODEX_PROVIDER));
    assert_eq!(v["model"].as_str(), Some("gpt-5"));
    assert_eq!(v["approval_policy"].as_str(), Some("on-request"));
    let p = &v["model_providers"][CODEX_PROVIDER];
    assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:8080/v1"));
    assert_eq!(p["wire_api"].as_str(), Some("responses"));
    assert_eq!(p["env_key"].as_str(), Some("OPENAI_API_KEY"));
    assert_eq!(
        v["model_providers"]["azure"]["base_url"].as_str(),
        Some("https://x")
    );
    assert_eq!(v["features"]["hooks"].as_bool(), Some(true));
    assert_eq!(v["features"]["web_search"].as_bool(), Some(true));
    // `model_provider` is a top-level key, not one of a table's.
    let top = once.find("model_provider =").unwrap();
    assert!(top < once.find('[').unwrap(), "{once}");

    let fresh = merge_codex_provider(None, "https://gw", "K").unwrap();
    let v: toml_edit::DocumentMut = fresh.parse().unwrap();
    assert_eq!(
        v["model_providers"][CODEX_PROVIDER]["base_url"].as_str(),
        Some("https://gw/v1")
    );
    assert!(merge_codex_provider(Some("model_providers = 1"), "http://a", "K").is_err());
    assert!(merge_codex_provider(Some("features = \"x\""), "http://a", "K").is_err());
    assert!(merge_codex_provider(Some("not toml ="), "http://a", "K").is_err());
    assert!(merge_codex_provider(None, "http://a", "BAD VAR").is_err());
}

#[test]
fn agents_whose_model_traffic_cannot_be_routed_say_why() {
    use super::unroutable;
    assert!(unroutable(Agent::ClaudeCode).is_none());
    assert!(unroutable(Agent::Codex).is_none());
    for agent in [Agent::GeminiCli, Agent::Cursor, Agent::Copilot] {
        assert!(unroutable(agent).is_some_and(|why| why.contains("withh")));
    }
}
