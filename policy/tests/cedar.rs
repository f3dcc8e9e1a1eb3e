//! Cedar policies in a policy directory: the ported examples and their
//! cases in both languages, the annotations onto verdicts, default-deny,
//! schema validation at load, composition with Rego, and the bounds.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookwire::{AgentContext, Decision, InterceptionPoint};
use hookwire_policy::{Error, PolicyOptions, PolicySet, TestStatus};
use serde_json::json;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A directory holding `files` (name, text).
fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(path, text).expect("write");
    }
    dir
}

fn copy(from: &Path, to: &Path) {
    fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
}

/// Every case outcome of `set`, failing with the ones that did not pass.
fn passing_cases(set: &PolicySet) -> Vec<String> {
    let outcomes = set.run_tests();
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|o| o.status != TestStatus::Passed)
        .map(|o| format!("{}: {}: {:?}", o.test.file, o.test.name, o.status))
        .collect();
    assert!(failures.is_empty(), "failing:\n{}", failures.join("\n"));
    outcomes
        .iter()
        .filter(|o| o.test.file.ends_with(".cedartest.json"))
        .map(|o| format!("{}: {}", o.test.file, o.test.name))
        .collect()
}

fn tool_call(agent: &str, tool: &str, args: serde_json::Value) -> AgentContext {
    AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1", "interception_point": "pre_tool_call",
        "timestamp": "2025-01-01T00:00:00Z", "sequence": 1,
        "agent": {"id": agent, "framework": "test"}, "session": {"id": "s1"},
        "tool_call": {"id": "c1", "name": tool, "args": args},
    }))
    .expect("a context")
}

#[test]
fn the_cedar_ports_pass_their_cases() {
    let set = PolicySet::load(&examples().join("policies-cedar"), PolicyOptions::default())
        .expect("the Cedar examples load");
    let names: Vec<&str> = set.packages().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "destructive_commands.cedar",
            "spending.cedar",
            "tool_allowlist.cedar"
        ]
    );
    assert_eq!(set.points(), [InterceptionPoint::PreToolCall]);
    let cases = passing_cases(&set);
    assert!(cases.len() >= 24, "{} cases", cases.len());
}

/// The shared case files run against the Rego originals (with their data)
/// and against the Cedar ports: every case expects the same decision and
/// reason of both.
#[test]
fn rego_and_cedar_decide_the_shared_cases_alike() {
    let rego = tempfile::tempdir().expect("tempdir");
    let cedar_dir = examples().join("policies-cedar");
    for name in [
        "tool_allowlist.rego",
        "spending.rego",
        "destructive_commands.rego",
        "data.yaml",
    ] {
        copy(
            &examples().join("policies").join(name),
            &rego.path().join(name),
        );
    }
    fs::create_dir(rego.path().join("contexts")).expect("mkdir");
    copy(
        &cedar_dir.join("contexts/wire_transfer.json"),
        &rego.path().join("contexts/wire_transfer.json"),
    );
    for name in [
        "tool_allowlist.cedartest.json",
        "spending.cedartest.json",
        "destructive_commands.cedartest.json",
    ] {
        copy(&cedar_dir.join(name), &rego.path().join(name));
    }
    let rego_set = PolicySet::load(rego.path(), PolicyOptions::default()).expect("Rego loads");
    assert!(
        rego_set
            .packages()
            .iter()
            .all(|p| p.name.starts_with("hookwire."))
    );
    let in_rego = passing_cases(&rego_set);

    let cedar_set = PolicySet::load(&cedar_dir, PolicyOptions::default()).expect("Cedar loads");
    let in_cedar = passing_cases(&cedar_set);
    assert_eq!(in_rego.len(), 23, "{in_rego:?}");
    for case in &in_rego {
        assert!(in_cedar.contains(case), "{case} not run on Cedar");
    }
}

const POINT_ONLY: &str =
    "permit (principal, action == Hookwire::Action::\"pre_tool_call\", resource);\n";

#[test]
fn forbid_reason_message_and_escalate_become_the_verdict() {
    let dir = dir_with(&[(
        "p.cedar",
        r#"@reason("policy:no_bash") @message("no shell")
forbid (principal, action == Hookwire::Action::"pre_tool_call", resource == Hookwire::Tool::"bash");
@reason("policy:needs_review") @escalate
forbid (principal == Hookwire::Agent::"intern", action == Hookwire::Action::"pre_tool_call", resource);
"#,
    )]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let denied = set
        .decide(&tool_call("a", "bash", json!({})))
        .expect("decides");
    assert_eq!(denied.decision, Decision::Deny);
    assert_eq!(denied.reason.as_deref(), Some("policy:no_bash"));
    assert_eq!(denied.message.as_deref(), Some("no shell"));
    assert!(denied.approval.is_none());

    let escalated = set
        .decide(&tool_call("intern", "search", json!({})))
        .expect("decides");
    assert_eq!(escalated.decision, Decision::Deny);
    assert_eq!(escalated.reason.as_deref(), Some("policy:needs_review"));
    assert!(escalated.approval.is_some(), "an escalation is liftable");

    // Both: the deny wins, the escalation is kept as a warning.
    let both = set
        .decide(&tool_call("intern", "bash", json!({})))
        .expect("decides");
    assert_eq!(both.reason.as_deref(), Some("policy:no_bash"));
    assert_eq!(both.warnings.len(), 1);

    // A forbid-only file allows what it does not forbid.
    let allowed = set
        .decide(&tool_call("a", "search", json!({})))
        .expect("decides");
    assert_eq!(allowed.decision, Decision::Allow);
}

#[test]
fn a_file_with_permits_is_default_deny_at_their_points() {
    let dir = dir_with(&[(
        "allow.cedar",
        r#"@reason("policy:not_on_list")
permit (principal, action == Hookwire::Action::"pre_tool_call", resource == Hookwire::Tool::"search");
"#,
    )]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    assert_eq!(
        set.decide(&tool_call("a", "search", json!({})))
            .unwrap()
            .decision,
        Decision::Allow
    );
    let denied = set.decide(&tool_call("a", "bash", json!({}))).unwrap();
    assert_eq!(denied.decision, Decision::Deny);
    assert_eq!(denied.reason.as_deref(), Some("policy:not_on_list"));

    let unannotated = dir_with(&[(
        "allow.cedar",
        POINT_ONLY
            .replace("resource)", "resource == Hookwire::Tool::\"x\")")
            .as_str(),
    )]);
    let set = PolicySet::load(unannotated.path(), PolicyOptions::default()).expect("loads");
    let denied = set.decide(&tool_call("a", "bash", json!({}))).unwrap();
    assert_eq!(
        denied.reason.as_deref(),
        Some(hookwire_policy::NOT_PERMITTED)
    );
}

#[test]
fn policies_that_do_not_validate_or_break_the_mapping_are_refused() {
    for (text, expected) in [
        (
            "@reason(\"policy:x\") forbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.tool_call.args.amount > 5 };",
            "does not validate",
        ),
        (
            "@reason(\"policy:x\") forbid (principal, action == Hookwire::Action::\"delete\", resource);",
            "not an interception point",
        ),
        ("forbid (principal, action, resource);", "needs @reason"),
        (
            "@reasn(\"policy:x\") forbid (principal, action, resource);",
            "unknown annotation @reasn",
        ),
        (
            "@reason(\"host_error:x\") forbid (principal, action, resource);",
            "reserved",
        ),
        (
            "@escalate permit (principal, action, resource);",
            "belongs on a forbid",
        ),
        ("permit (principal, action, resource", "p.cedar"),
    ] {
        let dir = dir_with(&[("p.cedar", text)]);
        let err = PolicySet::load(dir.path(), PolicyOptions::default()).expect_err(text);
        assert!(matches!(err, Error::Cedar { .. }), "{err:?}");
        assert!(err.to_string().contains(expected), "{text}: {err}");
    }
}

#[test]
fn rego_and_cedar_in_one_directory_compose_like_two_packages() {
    let dir = dir_with(&[
        (
            "a.cedar",
            "@reason(\"policy:cedar_says_no\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource == Hookwire::Tool::\"bash\");\n",
        ),
        (
            "z.rego",
            "package hookwire.z\nimport rego.v1\npoints := {\"pre_tool_call\", \"input\"}\ndeny contains \"policy:rego_says_no\" if input.tool_call.name == \"bash\"\n",
        ),
    ]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    assert_eq!(
        set.points(),
        [InterceptionPoint::Input, InterceptionPoint::PreToolCall]
    );
    let ctx = tool_call("a", "bash", json!({}));
    let documents = set.decision_documents(&ctx).expect("documents");
    let names: Vec<&str> = documents.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a.cedar", "hookwire.z"]);
    let verdict = set.decide(&ctx).expect("decides");
    assert_eq!(verdict.reason.as_deref(), Some("policy:cedar_says_no"));
    assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
    assert_eq!(
        verdict.warnings[0].reason.as_deref(),
        Some("policy:rego_says_no")
    );
}

#[test]
fn a_decision_past_its_bound_is_an_error_not_a_verdict() {
    let dir = dir_with(&[("allow.cedar", POINT_ONLY)]);
    let options = PolicyOptions {
        eval_limit: Duration::from_nanos(1),
        ..PolicyOptions::default()
    };
    let set = PolicySet::load(dir.path(), options).expect("loads");
    let err = set
        .decide(&tool_call("a", "bash", json!({})))
        .expect_err("bounded");
    assert!(matches!(err, Error::Bounded { .. }), "{err:?}");
}

#[test]
fn contexts_are_converted_within_bounds_and_types_fail_closed() {
    let schema = hookwire_policy::CEDAR_SCHEMA.replace(
        "type ToolArgs = {};",
        "type ToolArgs = { tags?: Set<String>, amount?: Long };",
    );
    let dir = dir_with(&[
        ("s.cedarschema", &schema),
        (
            "p.cedar",
            "@reason(\"policy:tagged\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.tool_call.args has tags && context.tool_call.args.tags.contains(\"x\") };\n",
        ),
    ]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let tagged = set
        .decide(&tool_call(
            "a",
            "t",
            json!({"tags": ["x"], "other": {"deep": [1, 2]}}),
        ))
        .unwrap();
    assert_eq!(tagged.reason.as_deref(), Some("policy:tagged"));

    let many = vec!["y"; 5000];
    let err = set
        .decide(&tool_call("a", "t", json!({"tags": many})))
        .expect_err("bounded");
    assert!(err.to_string().contains("more than 4096 values"), "{err}");

    let err = set
        .decide(&tool_call("a", "t", json!({"amount": "secret-text"})))
        .expect_err("a type mismatch");
    assert!(
        err.to_string().contains("context.tool_call.args.amount"),
        "{err}"
    );
    assert!(!err.to_string().contains("secret-text"), "{err}");
}

#[test]
fn two_schemas_and_broken_cases_are_refused() {
    let dir = dir_with(&[
        ("a.cedarschema", hookwire_policy::CEDAR_SCHEMA),
        ("b.cedarschema", hookwire_policy::CEDAR_SCHEMA),
        ("p.cedar", POINT_ONLY),
    ]);
    let err = PolicySet::load(dir.path(), PolicyOptions::default()).expect_err("two schemas");
    assert!(err.to_string().contains("a second Cedar schema"), "{err}");

    for (cases, expected) in [
        ("{}", "not a list of test cases"),
        (
            "[{\"name\": \"n\", \"point\": \"nowhere\", \"context\": {}, \"expect\": \"allow\"}]",
            "not an interception point",
        ),
        (
            "[{\"name\": \"n\", \"point\": \"input\", \"context\": {}, \"expect\": \"allow\", \"extra\": 1}]",
            "unknown field",
        ),
        (
            "[{\"name\": \"n\", \"point\": \"pre_tool_call\", \"context\": \"../outside.json\", \"expect\": \"allow\"}]",
            "cannot read",
        ),
    ] {
        let dir = dir_with(&[("p.cedar", POINT_ONLY), ("c.cedartest.json", cases)]);
        let err = PolicySet::load(dir.path(), PolicyOptions::default()).expect_err(cases);
        assert!(err.to_string().contains(expected), "{cases}: {err}");
    }
}

#[test]
fn a_case_whose_verdict_differs_reports_both() {
    let dir = dir_with(&[
        ("p.cedar", POINT_ONLY),
        (
            "c.cedartest.json",
            r#"[{"name": "wrong", "point": "pre_tool_call", "context": {"tool_call": {"id": "c", "name": "bash", "args": {}}}, "expect": "deny", "reason": "policy:x"}]"#,
        ),
    ]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let outcomes = set.run_tests();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(
        outcomes[0].status,
        TestStatus::Mismatch("expected deny policy:x, got allow".into())
    );
}

#[test]
fn a_policy_erroring_on_a_request_fails_the_decision_closed() {
    // Valid against the schema, but overflows at sequence 1: Cedar would
    // skip the forbid (an allow); the service fails the call instead.
    let dir = dir_with(&[(
        "p.cedar",
        "@reason(\"policy:x\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.sequence + 9223372036854775807 > 0 };\n",
    )]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let err = set
        .decide(&tool_call("a", "bash", json!({})))
        .expect_err("fails closed");
    assert!(matches!(err, Error::Evaluation(_)), "{err:?}");
    assert!(err.to_string().contains("policy0 errored"), "{err}");
    assert!(!err.to_string().contains("9223372036854775807"), "{err}");
}

#[test]
fn a_schema_in_cedars_json_format_validates_as_well() {
    let (fragment, _) = cedar_policy::SchemaFragment::from_cedarschema_str(
        &hookwire_policy::CEDAR_SCHEMA
            .replace("type ToolArgs = {};", "type ToolArgs = { cmd?: String };"),
    )
    .expect("the published schema parses");
    let json = fragment.to_json_string().expect("as JSON");
    let dir = dir_with(&[
        ("hookwire.cedarschema.json", &json),
        (
            "p.cedar",
            "@reason(\"policy:no_rm\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.tool_call.args has cmd && context.tool_call.args.cmd like \"rm *\" };\n",
        ),
    ]);
    let set = PolicySet::load(dir.path(), PolicyOptions::default()).expect("loads");
    let denied = set
        .decide(&tool_call("a", "bash", json!({"cmd": "rm -rf /"})))
        .unwrap();
    assert_eq!(denied.reason.as_deref(), Some("policy:no_rm"));
    let allowed = set
        .decide(&tool_call("a", "bash", json!({"cmd": "ls"})))
        .unwrap();
    assert_eq!(allowed.decision, Decision::Allow);

    // The same policy against the published schema (no `cmd`) is refused.
    let dir = dir_with(&[(
        "p.cedar",
        "@reason(\"policy:no_rm\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.tool_call.args has cmd && context.tool_call.args.cmd like \"rm *\" };\n",
    )]);
    let Err(err) = PolicySet::load(dir.path(), PolicyOptions::default()) else {
        panic!("a policy that can never apply under the schema loaded");
    };
    assert!(err.to_string().contains("the published schema"), "{err}");
    assert!(err.to_string().contains("impossible"), "{err}");
}
