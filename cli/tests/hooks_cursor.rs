//! Cursor's golden payloads (`tests/fixtures/hooks/cursor/`) through
//! `hookwire hook --agent cursor` and `POST /v1/hooks/cursor` against
//! `hookwire hooks serve`: each verdict in Cursor's output format (a
//! transform and a liftable deny are its documented deny), the deny
//! Cursor cannot enforce quarantining the turn, an ungoverned event and a
//! daemon that is down, slow or answers garbage failing closed (exit 2).

use serde_json::{Value, json};

use crate::hooks::{Daemon, failed_closed, fixtures, hook_as};

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("cursor").join(format!("{name}.json"))).unwrap()
}

fn answer(d: &Daemon, name: &str) -> Value {
    let out = hook_as("cursor", &d.base, Some(&d.token_file), &golden(name), &[]);
    assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn denied(v: &Value) -> &str {
    assert_eq!(v["permission"], "deny", "{v}");
    assert_eq!(v["agent_message"], v["user_message"], "{v}");
    v["user_message"].as_str().unwrap()
}

#[test]
fn cursor_payloads_through_the_command_hook() {
    let d = Daemon::start(&["--liftable", "ask"]);
    assert_eq!(answer(&d, "session-start"), json!({}));
    assert_eq!(
        answer(&d, "before-submit-prompt"),
        json!({"continue": true})
    );
    assert_eq!(answer(&d, "pre-tool-use-shell"), json!({}));
    assert_eq!(
        denied(&answer(&d, "pre-tool-use-shell-destructive")),
        "hookwire: denied at pre_tool_call: policy:destructive_command — Bash may not delete files recursively"
    );
    // No argument rewrite Cursor documents: the transform is a deny.
    assert!(denied(&answer(&d, "pre-tool-use-shell-rewritten")).contains("cannot rewrite"));
    // No reliable ask in Cursor: a liftable deny is a deny, even with
    // `--liftable ask`.
    assert!(denied(&answer(&d, "pre-tool-use-shell-review")).contains("pending approval"));
    assert!(denied(&answer(&d, "before-shell-execution-destructive")).contains("destructive"));
    assert_eq!(answer(&d, "before-mcp-execution"), json!({}));
    assert_eq!(answer(&d, "before-read-file"), json!({}));
    // The result cannot be withheld: the model is told, and the turn is
    // quarantined — the next tool call is denied.
    assert_eq!(
        answer(&d, "post-tool-use-shell-secret"),
        json!({"additional_context": "hookwire: denied at post_tool_call: policy:secret_in_output"})
    );
    assert!(denied(&answer(&d, "pre-tool-use-shell")).contains("quarantined"));
    assert_eq!(answer(&d, "stop"), json!({}));
    // A new prompt lifts the quarantine; an injected one is stopped.
    assert_eq!(
        answer(&d, "before-submit-prompt-injection"),
        json!({"continue": false, "user_message": "hookwire: denied at input: policy:prompt_injection"})
    );
    assert_eq!(answer(&d, "session-end"), json!({}));
    assert_eq!(
        d.points("cursor:9f1c2d3e-cursor"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "output",
            "input",
            "agent_shutdown"
        ]
    );
}

#[test]
fn cursor_fails_closed_with_exit_2() {
    let d = Daemon::start(&[]);
    let reason = failed_closed(&hook_as(
        "cursor",
        &d.base,
        Some(&d.token_file),
        &golden("after-file-edit"),
        &[],
    ));
    assert!(
        reason.contains("\"afterFileEdit\" is not governed"),
        "{reason}"
    );
    let payload = golden("pre-tool-use-shell");
    crate::hooks_faults::each_failure("cursor", &d.token_file, &payload, failed_closed);
}
