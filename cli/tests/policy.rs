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
    // As the docs run it: `policy test`'s own bound is generous enough
    // for a loaded debug build (it checks outcomes, not latency).
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
    let dir = one_rule_at_pre_tool_call(
        "deny contains \"policy:x\"\ntest_ok if \"policy:x\" in deny\ntest_not_ok if count(deny) == 0",
    );
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
    for sub in ["serve", "test", "eval", "bench", "schema"] {
        let out = hookwire(&["policy", sub, "--help"]);
        assert!(out.status.success(), "{sub}");
        assert!(stdout(&out).contains("Usage: hookwire policy"), "{sub}");
    }
}

#[test]
fn policy_test_coverage_reports_each_module_of_the_example_library() {
    let json = tempfile::tempdir().unwrap();
    let json_path = json.path().join("coverage.json");
    let out = hookwire(&[
        "policy",
        "test",
        "examples/policies",
        "--coverage",
        "--coverage-json",
        json_path.to_str().unwrap(),
        "--eval-timeout-ms",
        "10000",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("coverage: "), "{text}");
    for module in [
        "destructive_commands.rego",
        "pii.rego",
        "spending.rego",
        "tool_budget.rego",
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!(" {module} (")))
            .unwrap_or_else(|| panic!("no coverage line for {module}: {text}"));
        assert!(
            line.trim_start()
                .split('%')
                .next()
                .unwrap()
                .parse::<f64>()
                .is_ok(),
            "{line}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json_path).unwrap()).unwrap();
    let files = report["files"].as_array().unwrap();
    assert!(
        files
            .iter()
            .all(|f| f["covered"].is_array() && f["uncovered"].is_array())
    );
    assert!(
        files
            .iter()
            .any(|f| !f["covered"].as_array().unwrap().is_empty()),
        "{report}"
    );
}

#[test]
fn policy_test_coverage_names_the_lines_no_test_reached() {
    let dir = one_rule_at_pre_tool_call(
        "deny contains \"policy:x\" if {\n  input.tool_call.name == \"x\"\n}\ndeny contains \"policy:y\" if {\n  input.tool_call.name == \"y\"\n  startswith(input.tool_call.name, \"yy\")\n}\ntest_x if \"policy:x\" in deny with input as {\"tool_call\": {\"name\": \"x\"}}",
    );
    let out = hookwire(&["policy", "test", dir.path().to_str().unwrap(), "--coverage"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    // The test's input fails the second body at line 8: its head (7) and
    // its last line (9) are never reached, nor is `points` (3).
    assert!(
        text.contains("57.1%  p.rego (4/7 lines)  uncovered: 3, 7, 9"),
        "{text}"
    );
}

#[test]
fn policy_bench_times_each_context_and_package_of_the_example_library() {
    let out = hookwire(&[
        "policy",
        "bench",
        "examples/policies",
        "--duration",
        "300ms",
        "--eval-timeout-ms",
        "10000",
    ]);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("policy bench examples/policies: 3 contexts"),
        "{text}"
    );
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["context", "decision", "decisions/s", "p50", "p99"]);
    let rows: Vec<&str> = lines.collect();
    for context in ["input_pii.json", "rm_rf.json", "wire_transfer.json"] {
        assert!(
            rows.iter()
                .any(|r| r.starts_with(context) && r.contains("(all ")),
            "{context}: {text}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r.contains("hookwire.destructive_commands")),
        "{text}"
    );
    for row in &rows {
        let rate: f64 = row
            .split_whitespace()
            .rev()
            .nth(2)
            .unwrap()
            .parse()
            .expect(row);
        assert!(rate > 0.0, "{row}");
    }
}

#[test]
fn policy_bench_refuses_a_directory_without_contexts() {
    let dir =
        one_rule_at_pre_tool_call("deny contains \"policy:x\" if input.tool_call.name == \"x\"");
    let out = hookwire(&[
        "policy",
        "bench",
        dir.path().to_str().unwrap(),
        "--duration",
        "100ms",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --context FILE"));
}

#[test]
fn policy_eval_of_the_report_rule_is_an_error_not_an_allow() {
    let dir = one_rule_at_pre_tool_call(
        "deny contains \"policy:never\" if count(numbers.range(1, 30000000)) == -1",
    );
    let out = hookwire(&[
        "policy",
        "eval",
        dir.path().to_str().unwrap(),
        "--point",
        "pre_tool_call",
        "--context",
        "examples/policies/contexts/rm_rf.json",
    ]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(!stdout(&out).contains("allow"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("numbers.range would build"));
}

/// A policy directory of one module deciding at `pre_tool_call` with the
/// one `deny` rule given.
fn one_rule_at_pre_tool_call(rule: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("p.rego"),
        format!("package hookwire.p\nimport rego.v1\npoints := {{\"pre_tool_call\"}}\n{rule}\n"),
    )
    .unwrap();
    dir
}
