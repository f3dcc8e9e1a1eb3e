//! `hookwire policy`, run as the built binary: the example library's tests
//! pass, a failing test fails the command, `eval` prints the verdict, and
//! every subcommand has `--help`.

use std::fs;
use std::process::{Command, Output};

fn hookwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run hookwire")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn policy_test_runs_the_example_library() {
    let out = hookwire(&["policy", "test", "examples/policies"]);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("PASS  hookwire.pii_test.test_demo_request_redacted"),
        "{text}"
    );
    assert!(text.contains(" 0 failed"), "{text}");
}

#[test]
fn policy_test_fails_on_a_failing_test() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("p.rego"),
        "package hookwire.p\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains \"policy:x\"\ntest_ok if \"policy:x\" in deny\ntest_not_ok if count(deny) == 0\n",
    )
    .unwrap();
    let out = hookwire(&["policy", "test", dir.path().to_str().unwrap()]);
    let text = stdout(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("PASS  hookwire.p.test_ok"), "{text}");
    assert!(text.contains("FAIL  hookwire.p.test_not_ok"), "{text}");
}

#[test]
fn policy_eval_prints_the_verdict() {
    let out = hookwire(&[
        "policy",
        "eval",
        "examples/policies",
        "--point",
        "pre_tool_call",
        "--context",
        "examples/policies/contexts/rm_rf.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON verdict");
    assert_eq!(verdict["decision"], "deny");
    assert_eq!(verdict["reason"], "policy:destructive_command");

    let wrong_point = hookwire(&[
        "policy",
        "eval",
        "examples/policies",
        "--point",
        "output",
        "--context",
        "examples/policies/contexts/rm_rf.json",
    ]);
    assert!(!wrong_point.status.success());
}

#[test]
fn every_policy_subcommand_has_help() {
    for sub in ["serve", "test", "eval", "schema"] {
        let out = hookwire(&["policy", sub, "--help"]);
        assert!(out.status.success(), "{sub}");
        assert!(stdout(&out).contains("Usage: hookwire policy"), "{sub}");
    }
}
