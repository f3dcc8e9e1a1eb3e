//! Codex's golden payloads (`tests/fixtures/hooks/codex/`, their source
//! in its README) through `hookwire hook --agent codex`, answered in the
//! forms Codex's own output parser applies: a deny with a non-empty
//! reason, a rewrite as `allow` with `updatedInput`, a post-tool block
//! whose reason replaces the tool's output; the session's points in
//! order.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use crate::hooks::run_with_stdin;
use crate::hooks::{Daemon, answer, pre_tool_decision};

fn codex(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks/codex");
    std::fs::read(dir.join(format!("{name}.json"))).unwrap()
}

/// Runs `hookwire hook --agent codex` against the daemon.
fn codex_hook(d: &Daemon, payload: &[u8]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookwire"));
    command
        .args(["hook", "--agent", "codex", "--endpoint", &d.base])
        .arg("--token-file")
        .arg(&d.token_file)
        .env_remove("HOOKWIRE_HOOKS_TOKEN");
    run_with_stdin(command, payload)
}

#[test]
fn codex_payloads_are_answered_in_forms_codex_applies() {
    let d = Daemon::start(&[]);
    assert_eq!(answer(&codex_hook(&d, &codex("session-start"))), json!({}));
    assert_eq!(
        answer(&codex_hook(&d, &codex("user-prompt-submit"))),
        json!({})
    );
    // Codex blocks on `permissionDecision: deny` only with a non-empty
    // reason.
    let denied = answer(&codex_hook(&d, &codex("pre-tool-use-bash-destructive")));
    let (decision, reason) = pre_tool_decision(&denied);
    assert_eq!(decision, "deny");
    assert!(!reason.trim().is_empty());
    // A rewrite is `allow` with `updatedInput` (Codex refuses `allow`
    // without it, and `updatedInput` without `allow`).
    let rewritten = answer(&codex_hook(&d, &codex("pre-tool-use-bash-rewritten")));
    assert_eq!(pre_tool_decision(&rewritten).0, "allow");
    assert_eq!(
        rewritten["hookSpecificOutput"]["updatedInput"]["command"],
        "make deploy DRY_RUN=1"
    );
    // Codex replaces the model-visible tool output with a block's reason.
    let secret = answer(&codex_hook(&d, &codex("post-tool-use-bash-secret")));
    assert_eq!(secret["decision"], "block");
    assert!(
        secret["reason"]
            .as_str()
            .is_some_and(|r| r.contains("secret")),
        "{secret}"
    );
    assert_eq!(answer(&codex_hook(&d, &codex("stop"))), json!({}));
    let points = d.points("codex:019a5f2e-7c1d-7b40-9a51-3f0c2d8e6b11");
    assert_eq!(
        points,
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "output"
        ]
    );
}
