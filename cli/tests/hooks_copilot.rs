//! GitHub Copilot's golden payloads (`tests/fixtures/hooks/copilot/`)
//! through `hookwire hook --agent copilot` and `POST /v1/hooks/copilot`
//! against `hookwire hooks serve`: each verdict in the answers Copilot
//! reads (`permissionDecision`, `modifiedArgs`, `ask`, `agentStop`'s
//! block), the prompt and result denies Copilot cannot enforce
//! quarantining the turn, a payload without a session id, and every
//! failure (ungoverned event, daemon down, slow, garbage) failing closed
//! as Copilot needs it: the deny on stdout, exit 0 (Copilot skips a hook
//! that exits non-zero).

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};

use crate::hooks::{Daemon, fixtures, hook_as};

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("copilot").join(format!("{name}.json"))).unwrap()
}

fn run(d: &Daemon, name: &str) -> Output {
    hook_as("copilot", &d.base, Some(&d.token_file), &golden(name), &[])
}

fn answer(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A failure answered as Copilot blocks: the deny on stdout, exit 0, the
/// reason on stderr too.
fn failed_closed(out: &Output) -> String {
    let v = answer(out);
    assert_eq!(v["permissionDecision"], "deny", "{v}");
    assert_eq!(v["decision"], "block", "{v}");
    let reason = v["permissionDecisionReason"].as_str().unwrap().to_owned();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&reason));
    reason
}

#[test]
fn copilot_payloads_through_the_command_hook() {
    let d = Daemon::start(&["--liftable", "ask"]);
    assert_eq!(answer(&run(&d, "session-start")), json!({}));
    assert_eq!(answer(&run(&d, "user-prompt-submitted")), json!({}));
    assert_eq!(answer(&run(&d, "pre-tool-use-bash")), json!({}));
    assert_eq!(
        answer(&run(&d, "pre-tool-use-bash-destructive")),
        json!({"permissionDecision": "deny",
               "permissionDecisionReason": "hookwire: denied at pre_tool_call: policy:destructive_command — Bash may not delete files recursively"})
    );
    let rewritten = answer(&run(&d, "pre-tool-use-bash-rewritten"));
    assert_eq!(rewritten["permissionDecision"], "allow");
    assert_eq!(
        rewritten["modifiedArgs"],
        json!({"command": "make deploy DRY_RUN=1", "description": "Deploy"})
    );
    assert_eq!(
        answer(&run(&d, "pre-tool-use-bash-review")),
        json!({"permissionDecision": "ask",
               "permissionDecisionReason": "hookwire: denied at pre_tool_call pending approval: policy:needs_review"})
    );
    // Paired with pre-tool-use-bash by name and arguments; Copilot reads
    // no answer here, so the turn is quarantined: the next call is denied.
    assert_eq!(answer(&run(&d, "post-tool-use-bash-secret")), json!({}));
    let quarantined = answer(&run(&d, "pre-tool-use-bash"));
    assert_eq!(quarantined["permissionDecision"], "deny");
    assert!(
        quarantined["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("quarantined since postToolUse: hookwire: denied at post_tool_call: policy:secret_in_output")
    );
    assert_eq!(answer(&run(&d, "agent-stop")), json!({}));
    // An injected prompt cannot be stopped: recorded, and nothing of its
    // turn runs.
    assert_eq!(
        answer(&run(&d, "user-prompt-submitted-injection")),
        json!({})
    );
    assert_eq!(
        answer(&run(&d, "pre-tool-use-bash"))["permissionDecision"],
        "deny"
    );
    assert_eq!(answer(&run(&d, "session-end")), json!({}));
    assert_eq!(
        d.points("copilot:5e6f7a8b-copilot"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "output",
            "input",
            "input",
            "agent_shutdown"
        ]
    );
}

#[test]
fn a_payload_without_a_session_id_is_one_session_per_directory() {
    let d = Daemon::start(&[]);
    let v = answer(&run(&d, "pre-tool-use-no-session-id"));
    assert_eq!(v["permissionDecision"], "deny");
    let records: Vec<Value> =
        std::iter::from_fn(|| d.records.recv_timeout(Duration::from_millis(500)).ok())
            .filter_map(|l| serde_json::from_str(&l).ok())
            .filter(|r: &Value| {
                r["session_id"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("copilot:cwd-"))
            })
            .collect();
    let points: Vec<&str> = records
        .iter()
        .map(|r| r["interception_point"].as_str().unwrap())
        .collect();
    assert_eq!(points, ["agent_startup", "input", "pre_tool_call"]);
}

#[test]
fn copilot_fails_closed_on_stdout_with_exit_0() {
    let d = Daemon::start(&[]);
    let reason = failed_closed(&run(&d, "error-occurred"));
    assert!(
        reason.contains("\"errorOccurred\" is not governed"),
        "{reason}"
    );
    let payload = golden("pre-tool-use-bash");
    crate::hooks_faults::each_failure("copilot", &d.token_file, &payload, failed_closed);
    // No token.
    let out = hook_as("copilot", &d.base, None, &payload, &[]);
    assert!(failed_closed(&out).contains("no token"));
}
