//! `hookwire hooks serve` and `hookwire hook`, run as an operator and an
//! agent run them: the daemon governed by a Rego policy service
//! (`hookwire policy serve`), Claude Code's golden payloads
//! (`tests/fixtures/hooks/claude-code/`) through the command hook, every
//! verdict kind and every way the command fails closed (exit 2, the
//! reason on stderr). The daemon's own routes, socket and series are
//! tested with it in `hooks/tests/hooks/`; the helpers both share are
//! [`hookwire_testkit::hooks_daemon`].

use std::process::{Command, Stdio};

use serde_json::json;

pub(crate) use hookwire_testkit::hooks_daemon::{
    Daemon, Program, answer, failed_closed, fixtures, golden, hook, hook_as, hook_via,
    pre_tool_decision, run_with_stdin,
};

#[test]
fn every_verdict_kind_through_the_command_hook() {
    let d = Daemon::start(&[]);
    assert_eq!(answer(&d.hook(&golden("session-start"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("user-prompt-submit"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("pre-tool-use-bash"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("pre-tool-use-mcp"))), json!({}));
    let denied = answer(&d.hook(&golden("pre-tool-use-bash-destructive")));
    assert_eq!(
        pre_tool_decision(&denied),
        (
            "deny",
            "hookwire: denied at pre_tool_call: policy:destructive_command — Bash may not delete files recursively"
        )
    );
    let rewritten = answer(&d.hook(&golden("pre-tool-use-bash-rewritten")));
    assert_eq!(pre_tool_decision(&rewritten).0, "allow");
    assert_eq!(
        rewritten["hookSpecificOutput"]["updatedInput"],
        json!({"command": "make deploy DRY_RUN=1", "description": "Deploy"})
    );
    let review = answer(&d.hook(&golden("pre-tool-use-bash-review")));
    assert_eq!(
        pre_tool_decision(&review),
        (
            "deny",
            "hookwire: denied at pre_tool_call pending approval: policy:needs_review"
        )
    );
    let secret = answer(&d.hook(&golden("post-tool-use-bash-secret")));
    assert_eq!(
        secret,
        json!({"decision": "block", "reason": "hookwire: denied at post_tool_call: policy:secret_in_output"})
    );
    assert_eq!(answer(&d.hook(&golden("post-tool-use-write"))), json!({}));
    let unfinished = answer(&d.hook(&golden("stop-unfinished")));
    assert_eq!(
        unfinished,
        json!({"decision": "block", "reason": "hookwire: denied at output: policy:unfinished"})
    );
    // The stop closed the turn; the next prompt is denied.
    let injected = answer(&d.hook(&golden("user-prompt-submit-injection")));
    assert_eq!(injected["decision"], "block");
    // With no turn open, a stop opens a synthetic one first.
    assert_eq!(answer(&d.hook(&golden("stop"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("session-end"))), json!({}));
    assert_eq!(
        d.points("claude-code:abc123"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            // `post-tool-use-write` had no pre: its pre_tool_call is
            // emitted before its post (both unpaired).
            "pre_tool_call",
            "post_tool_call",
            "output",
            "input",
            "input",
            "output",
            "agent_shutdown",
        ]
    );
}

#[test]
fn a_liftable_deny_asks_the_user_when_told_to() {
    let d = Daemon::start(&["--liftable", "ask"]);
    let review = answer(&d.hook(&golden("pre-tool-use-bash-review")));
    assert_eq!(pre_tool_decision(&review).0, "ask");
    // A tool event first: the session is started and a turn opened,
    // both recorded.
    assert_eq!(
        d.points("claude-code:abc123"),
        ["agent_startup", "input", "pre_tool_call"]
    );
}

#[test]
fn an_event_hookwire_does_not_govern_fails_closed() {
    let d = Daemon::start(&[]);
    let reason = failed_closed(&d.hook(&golden("notification")));
    assert!(
        reason.contains("\"Notification\" is not governed"),
        "{reason}"
    );
    let reason = failed_closed(&d.hook(b"{not json"));
    assert!(reason.contains("not JSON"), "{reason}");
    let big = vec![b' '; (1 << 20) + 1];
    let reason = failed_closed(&d.hook(&big));
    assert!(reason.contains("exceeds 1048576 bytes"), "{reason}");
}

#[test]
fn the_command_fails_closed_without_a_usable_daemon() {
    let d = Daemon::start(&[]);
    let payload = golden("pre-tool-use-bash");
    // No token, a wrong token, an unknown agent.
    let reason = failed_closed(&hook(&d.base, None, &payload, &[]));
    assert!(reason.contains("no token"), "{reason}");
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-token").unwrap();
    let reason = failed_closed(&hook(&d.base, Some(&wrong), &payload, &[]));
    assert!(reason.contains("401"), "{reason}");
    assert!(!reason.contains("not-the-token"), "{reason}");
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hook", "--agent", "windsurf", "--endpoint", &d.base])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(failed_closed(&out).contains("unknown agent"));

    // An agent that never closes stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hook", "--agent", "claude-code", "--endpoint", &d.base])
        .arg("--token-file")
        .arg(&d.token_file)
        .args(["--timeout-ms", "300"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held_open = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    drop(held_open);
    let reason = failed_closed(&out);
    assert!(reason.contains("did not arrive within 300 ms"), "{reason}");

    // Down, slow, garbage.
    crate::hooks_faults::each_failure("claude-code", &d.token_file, &payload, failed_closed);
}

#[test]
fn hooks_serve_refuses_a_non_loopback_address_and_a_missing_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .args([
            "--listen",
            "0.0.0.0:0",
            "--token-env",
            "HOOKWIRE_TEST_HOOKS_TOKEN",
        ])
        .env("HOOKWIRE_TEST_HOOKS_TOKEN", "t")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token-file"));
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .args(["--token-env", "HOOKWIRE_TEST_HOOKS_UNSET"])
        .env_remove("HOOKWIRE_TEST_HOOKS_UNSET")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unset or empty"));
}

/// `hookwire-hook` and `hookwire hook` run the one relay: they take turns
/// in one agent session and govern it as one, and the small binary fails
/// closed as the subcommand does.
#[test]
fn the_small_binary_and_the_subcommand_govern_one_session_alike() {
    use Program::{Small, Subcommand};
    let d = Daemon::start(&[]);
    let via = |program, name: &str| {
        hook_via(
            program,
            "claude-code",
            &d.base,
            Some(&d.token_file),
            &golden(name),
            &[],
        )
    };
    assert_eq!(answer(&via(Small, "session-start")), json!({}));
    assert_eq!(answer(&via(Subcommand, "user-prompt-submit")), json!({}));
    assert_eq!(answer(&via(Small, "pre-tool-use-bash")), json!({}));
    let denied = answer(&via(Small, "pre-tool-use-bash-destructive"));
    assert_eq!(pre_tool_decision(&denied).0, "deny");
    let secret = answer(&via(Subcommand, "post-tool-use-bash-secret"));
    assert_eq!(secret["decision"], "block");
    assert_eq!(answer(&via(Small, "session-end")), json!({}));
    assert_eq!(
        d.points("claude-code:abc123"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );

    let payload = golden("pre-tool-use-bash");
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &d.base,
        None,
        &payload,
        &[],
    ));
    assert!(reason.starts_with("hookwire-hook: no token"), "{reason}");
    let reason = failed_closed(&hook_via(Small, "windsurf", &d.base, None, &payload, &[]));
    assert!(reason.contains("unknown agent"), "{reason}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &down,
        Some(&d.token_file),
        &payload,
        &[],
    ));
    assert!(reason.contains("unreachable"), "{reason}");
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &d.base,
        Some(&d.token_file),
        &payload,
        &["--timeout-ms", "soon"],
    ));
    assert!(
        reason.contains("--timeout-ms takes milliseconds"),
        "{reason}"
    );
    let help = Command::new(env!("CARGO_BIN_EXE_hookwire-hook"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Usage: hookwire-hook --agent NAME") && text.contains("Example"),
        "{text}"
    );
}
