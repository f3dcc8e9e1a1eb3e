//! `hookwire hooks install`, run as a user runs it: merged into an
//! existing Claude Code settings file without losing its entries, the same
//! file again on a second run, nothing written with `--print`, and the
//! installed command, run as Claude Code runs it (`sh -c`), answering
//! from the daemon; the same round trip for Codex, Gemini CLI, Cursor
//! and Copilot, each in its own file and shape. With `--gateway`: the
//! model route beside the hooks (Codex's `config.toml`, Claude Code's
//! `env`), the agents it cannot route refused, and the installed hook
//! answered by `hookwire gateway --hooks-token-file`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::hooks::{Daemon, fixtures, golden, pre_tool_decision};

fn install(args: &[&str]) -> std::process::Output {
    install_as("claude-code", args)
}

fn install_as(agent: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "install", "--agent", agent])
        .args(args)
        .output()
        .unwrap()
}

/// Runs `command` as the agent runs a command hook, `payload` on stdin.
fn run_installed(shell: &str, command: &str, payload: &[u8]) -> std::process::Output {
    let mut child = Command::new(shell)
        .args(["-c", command])
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn every_agent_round_trips_its_own_file() {
    let d = Daemon::start(&[]);
    let token = d.token_file.to_str().unwrap();
    // agent, file, the user's entry at one event, where the installed
    // command sits, a destructive pre-tool payload, what its deny says.
    let cases: [(&str, &str, Value, &str, &str, &str); 4] = [
        (
            "codex",
            ".codex/hooks.json",
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}),
            "/hooks/PreToolUse/0/hooks/0/command",
            "claude-code/pre-tool-use-bash-destructive.json",
            "/hookSpecificOutput/permissionDecision",
        ),
        (
            "gemini-cli",
            ".gemini/settings.json",
            json!({"theme": "dark", "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}),
            "/hooks/BeforeTool/0/hooks/0/command",
            "gemini-cli/before-tool-shell-destructive.json",
            "/decision",
        ),
        (
            "cursor",
            ".cursor/hooks.json",
            json!({"version": 1, "hooks": {"stop": [{"command": "./notify.sh"}]}}),
            "/hooks/preToolUse/0/command",
            "cursor/pre-tool-use-shell-destructive.json",
            "/permission",
        ),
        (
            "copilot",
            ".github/hooks/hookwire.json",
            json!({"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./notify.sh"}]}}),
            "/hooks/preToolUse/0/bash",
            "copilot/pre-tool-use-bash-destructive.json",
            "/permissionDecision",
        ),
    ];
    for (agent, file, theirs, at, payload, decision) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, theirs.to_string()).unwrap();
        let args = [
            "--settings",
            path.to_str().unwrap(),
            "--endpoint",
            &d.base,
            "--token-file",
            token,
        ];
        let printed = install_as(agent, &[&args[..], &["--print"]].concat());
        assert!(printed.status.success(), "{agent}: {printed:?}");
        let on_disk: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(on_disk, theirs, "{agent}: --print wrote");
        assert!(install_as(agent, &args).status.success());
        let once = std::fs::read_to_string(&path).unwrap();
        assert!(install_as(agent, &args).status.success());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            once,
            "{agent}: not idempotent"
        );
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v, serde_json::from_slice::<Value>(&printed.stdout).unwrap());
        // The user's entry is kept, first.
        let (event, entry) = theirs["hooks"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(&v["hooks"][event][0], &entry[0], "{agent}");
        assert_eq!(v["hooks"][event].as_array().unwrap().len(), 2, "{agent}");
        if agent == "gemini-cli" {
            assert_eq!(
                (v["theme"].as_str(), v["hooksConfig"]["enabled"].as_bool()),
                (Some("dark"), Some(true))
            );
        }
        // The installed command, as the agent runs it.
        let command = v
            .pointer(at)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{agent}: {v}"));
        let shell = if agent == "copilot" { "bash" } else { "sh" };
        let bytes = std::fs::read(fixtures().join(payload)).unwrap();
        let out = run_installed(shell, command, &bytes);
        let answer = crate::hooks::answer(&out);
        assert_eq!(
            answer.pointer(decision).and_then(Value::as_str),
            Some("deny"),
            "{agent}: {answer}"
        );
    }
}

#[test]
fn install_merges_round_trips_and_the_installed_hook_answers() {
    let d = Daemon::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let existing = json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"PreToolUse": [{"matcher": "Write",
                                   "hooks": [{"type": "command", "command": "./lint.sh"}]}]}
    });
    std::fs::write(&settings, existing.to_string()).unwrap();
    let path = settings.to_str().unwrap();
    let token = d.token_file.to_str().unwrap();
    let args = [
        "--settings",
        path,
        "--endpoint",
        &d.base,
        "--token-file",
        token,
    ];

    // --print writes nothing.
    let printed = install(&[&args[..], &["--print"]].concat());
    assert!(printed.status.success(), "{printed:?}");
    let shown: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(on_disk, existing);

    let out = install(&args);
    assert!(out.status.success(), "{out:?}");
    let once = std::fs::read_to_string(&settings).unwrap();
    let v: Value = serde_json::from_str(&once).unwrap();
    assert_eq!(v, shown);
    assert_eq!(v["permissions"], existing["permissions"]);
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0], existing["hooks"]["PreToolUse"][0]);
    assert_eq!(pre.len(), 2);
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert_eq!(v["hooks"][event].as_array().unwrap().len(), 1, "{event}");
    }
    let out = install(&args);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), once);

    // The installed command, as Claude Code runs a command hook.
    let command = pre[1]["hooks"][0]["command"].as_str().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", command])
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&golden("pre-tool-use-bash-destructive"))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v = crate::hooks::answer(&out);
    assert_eq!(pre_tool_decision(&v).0, "deny");
    // The daemon itself answers the same.
    assert_eq!(
        pre_tool_decision(&crate::hooks::answer(
            &d.hook(&golden("pre-tool-use-bash-destructive"))
        ))
        .0,
        "deny"
    );
}

#[test]
fn install_refuses_what_it_cannot_merge() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "[1, 2]").unwrap();
    let out = install(&["--settings", settings.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a JSON object"));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "[1, 2]");
    let out = install_as("copilot", &["--scope", "user", "--print"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("from the repository's .github/hooks/ only")
    );
    let out = install_as("windsurf", &["--print"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown agent"));
}

#[test]
fn claude_code_is_installed_as_an_http_hook_that_blocks_when_the_daemon_fails() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let path = settings.to_str().unwrap();
    let out = install(&["--settings", path, "--endpoint", "http://127.0.0.1:8790"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let hook = &v["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(hook["type"], "http", "{v}");
    assert_eq!(hook["url"], "http://127.0.0.1:8790/v1/hooks/claude-code");
    assert_eq!(hook["onFailure"], "block");
    assert_eq!(
        hook["headers"]["Authorization"],
        "Bearer $HOOKWIRE_HOOKS_TOKEN"
    );

    // Asked for the command, or given a token file: the command hook.
    for extra in [
        &["--transport", "command"][..],
        &["--token-file", "/etc/hookwire/token"],
    ] {
        let out = install(
            &[
                &["--settings", path, "--endpoint", "http://127.0.0.1:8790"][..],
                extra,
            ]
            .concat(),
        );
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"].as_array().unwrap().len(),
            1,
            "replaced: {v}"
        );
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["type"], "command",
            "{extra:?}"
        );
    }

    // What an http hook cannot be given.
    for args in [
        &["--transport", "http"][..],
        &["--transport", "http", "--endpoint", "unix:/run/hooks.sock"],
        &[
            "--transport",
            "http",
            "--endpoint",
            "http://127.0.0.1:8790",
            "--token-file",
            "/t",
        ],
    ] {
        let out = install(&[&["--settings", path, "--print"][..], args].concat());
        assert!(!out.status.success(), "{args:?}");
    }
    let codex = install_as(
        "codex",
        &[
            "--print",
            "--transport",
            "http",
            "--endpoint",
            "http://127.0.0.1:8790",
        ],
    );
    assert!(!codex.status.success());
}

#[test]
fn install_with_a_gateway_routes_the_model_beside_the_hooks_and_refuses_what_it_cannot_route() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "# mine\nmodel = \"gpt-5\"\n").unwrap();
    let codex = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(["hooks", "install", "--agent", "codex", "--scope", "user"])
            .args(["--gateway", "http://127.0.0.1:8080/v1"])
            .args(extra)
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .output()
            .unwrap()
    };
    // --print shows both files and writes neither.
    let printed = codex(&["--print"]);
    assert!(printed.status.success(), "{printed:?}");
    let shown = String::from_utf8_lossy(&printed.stdout);
    assert!(
        shown.contains("base_url = \"http://127.0.0.1:8080/v1\""),
        "{shown}"
    );
    assert!(
        shown.contains("--endpoint http://127.0.0.1:8080"),
        "{shown}"
    );
    assert!(!home.path().join("hooks.json").exists());
    let out = codex(&[]);
    assert!(out.status.success(), "{out:?}");
    let once = std::fs::read_to_string(&config).unwrap();
    assert!(once.starts_with("# mine\nmodel = \"gpt-5\"\n"), "{once}");
    assert!(once.contains("model_provider = \"hookwire\""), "{once}");
    assert!(once.contains("[features]\nhooks = true"), "{once}");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("hooks.json")).unwrap())
            .unwrap();
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.ends_with("--endpoint http://127.0.0.1:8080"),
        "{command}"
    );
    // Twice changes nothing.
    assert!(codex(&[]).status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), once);

    for (agent, why) in [
        ("cursor", "Cursor's own service"),
        ("copilot", "GitHub's service"),
        ("gemini-cli", "Gemini API"),
    ] {
        let out = install_as(agent, &["--gateway", "http://127.0.0.1:8080", "--print"]);
        assert!(!out.status.success(), "{agent}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--gateway cannot route") && err.contains(why),
            "{err}"
        );
    }
    let out = install(&["--gateway", "127.0.0.1:8080", "--print"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://HOST:PORT"));
}

#[test]
fn the_hook_the_gateway_install_writes_is_answered_by_hookwire_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("hooks-token");
    std::fs::write(&token, "gateway-hooks-token").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["gateway", "--listen", "127.0.0.1:0"])
        .args(["--upstream", "http://127.0.0.1:9/v1", "--policy"])
        .arg(fixtures().join("policy"))
        .arg("--hooks-token-file")
        .arg(&token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let said = crate::operable::stderr_lines(&mut child);
    let _gateway = crate::gateway::Running(child);
    let banner = crate::gateway::line_starting(&said, "hookwire gateway: ");
    let root = banner
        .split_whitespace()
        .nth(2)
        .expect("the banner names the address")
        .trim_end_matches("/v1")
        .to_owned();

    let settings = dir.path().join("settings.json");
    let out = install(&[
        "--settings",
        settings.to_str().unwrap(),
        "--gateway",
        &root,
        "--token-file",
        token.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["env"]["ANTHROPIC_BASE_URL"], root.as_str());
    let command = v["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    let out = run_installed("sh", command, &golden("pre-tool-use-bash-destructive"));
    assert_eq!(pre_tool_decision(&crate::hooks::answer(&out)).0, "deny");
    // Another token: the gateway's hook route refuses the caller.
    let wrong = dir.path().join("wrong-token");
    std::fs::write(&wrong, "not-the-hooks-token").unwrap();
    let out = crate::hooks::hook(
        &root,
        Some(&wrong),
        &golden("pre-tool-use-bash-destructive"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{out:?}"
    );
}
