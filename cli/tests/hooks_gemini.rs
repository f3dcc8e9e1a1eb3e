//! Gemini CLI's golden payloads (`tests/fixtures/hooks/gemini-cli/`)
//! through `hookwire hook --agent gemini-cli` against `hookwire hooks
//! serve`: each verdict in Gemini's own output format, the tool events
//! paired without an id, the model events and their streamed chunks, the
//! result and chunk rewrites, an ungoverned event failing closed (exit 2).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::hooks::Daemon;

fn golden(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks/gemini-cli");
    std::fs::read(dir.join(format!("{name}.json"))).unwrap()
}

fn gemini_hook(d: &Daemon, payload: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hook", "--agent", "gemini-cli", "--endpoint", &d.base])
        .arg("--token-file")
        .arg(&d.token_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}

fn answer(d: &Daemon, name: &str) -> Value {
    let out = gemini_hook(d, &golden(name));
    assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn gemini_cli_payloads_through_the_command_hook() {
    let d = Daemon::start(&[]);
    assert_eq!(answer(&d, "session-start"), json!({}));
    assert_eq!(answer(&d, "before-agent"), json!({}));
    assert_eq!(answer(&d, "before-tool-shell"), json!({}));
    assert_eq!(
        answer(&d, "before-tool-shell-destructive"),
        json!({"decision": "deny", "reason": "hookwire: denied at pre_tool_call: policy:destructive_command — Bash may not delete files recursively"})
    );
    assert_eq!(
        answer(&d, "before-tool-shell-rewritten"),
        json!({"hookSpecificOutput": {"tool_input": {"command": "make deploy DRY_RUN=1", "description": "Deploy"}}})
    );
    // Paired with before-tool-shell by name and arguments.
    assert_eq!(
        answer(&d, "after-tool-shell-secret"),
        json!({"decision": "deny", "reason": "hookwire: denied at post_tool_call: policy:secret_in_output"})
    );
    assert_eq!(answer(&d, "after-agent"), json!({}));
    assert_eq!(answer(&d, "session-end"), json!({}));
    let out = gemini_hook(&d, &golden("notification"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"Notification\" is not governed"));
    let records: Vec<Value> = std::iter::from_fn(|| {
        d.records
            .recv_timeout(std::time::Duration::from_millis(500))
            .ok()
    })
    .filter_map(|l| serde_json::from_str(&l).ok())
    .filter(|r: &Value| r["session_id"] == "gemini-cli:c2b4e8a1-gemini")
    .collect();
    let points: Vec<&str> = records
        .iter()
        .map(|r| r["interception_point"].as_str().unwrap())
        .collect();
    assert_eq!(
        points,
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "output",
            "agent_shutdown"
        ]
    );
}

#[test]
fn gemini_cli_model_events_and_rewrites_through_the_command_hook() {
    let d = Daemon::start(&[]);
    assert_eq!(answer(&d, "before-agent"), json!({}));
    assert_eq!(answer(&d, "before-model"), json!({}));
    // Each streamed chunk is governed as it arrives.
    assert_eq!(answer(&d, "after-model-chunk"), json!({}));
    assert_eq!(
        answer(&d, "after-model-chunk-password"),
        json!({"hookSpecificOutput": {"llm_response": {"candidates": [
            {"content": {"role": "model", "parts": ["[password withheld]"]}}]}}})
    );
    assert_eq!(
        answer(&d, "after-model-last-chunk-secret"),
        json!({"decision": "deny", "reason": "hookwire: denied at post_model_call: policy:secret_in_model_output"})
    );
    assert_eq!(
        answer(&d, "before-model-injection"),
        json!({"decision": "deny", "reason": "hookwire: denied at pre_model_call: policy:prompt_injection"})
    );
    assert_eq!(answer(&d, "before-tool-shell-env"), json!({}));
    assert_eq!(
        answer(&d, "after-tool-shell-password"),
        json!({"hookSpecificOutput": {"tool_output": "[password withheld]"}})
    );
    assert_eq!(
        d.points("gemini-cli:c2b4e8a1-gemini"),
        [
            "agent_startup",
            "input",
            "pre_model_call",
            "post_model_call",
            "post_model_call",
            "post_model_call",
            "pre_model_call",
            "pre_tool_call",
            "post_tool_call"
        ]
    );
}
