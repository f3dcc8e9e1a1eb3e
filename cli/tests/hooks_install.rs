//! `hookwire hooks install`, run as a user runs it: merged into an
//! existing Claude Code settings file without losing its entries, the same
//! file again on a second run, nothing written with `--print`, and the
//! installed command, run as Claude Code runs it (`sh -c`), answering
//! from the daemon.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::hooks::{Daemon, golden, pre_tool_decision};

fn install(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "install", "--agent", "claude-code"])
        .args(args)
        .output()
        .unwrap()
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
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "install", "--agent", "codex", "--print"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not supported yet"));
}
