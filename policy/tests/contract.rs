//! The decision contract, end to end through regorus: policy files in a
//! temporary directory, a context, the verdict (or the error) that comes
//! out. No server: `tests/service.rs` covers the wire.

use std::fs;
use std::path::Path;
use std::time::Duration;

use hookwire::{AgentContext, Decision, InterceptionPoint, SPEC_VERSION};
use hookwire_policy::{Error, PolicyOptions, PolicySet};
use serde_json::{Value, json};

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("folder");
        }
        fs::write(path, text).expect("write policy");
    }
    dir
}

fn load(dir: &Path) -> Result<PolicySet, Error> {
    PolicySet::load(dir, PolicyOptions::default())
}

fn ctx(point: &str, extra: Value) -> AgentContext {
    let mut m = json!({
        "spec": SPEC_VERSION,
        "interception_point": point,
        "timestamp": "2025-01-01T00:00:00Z",
        "sequence": 3,
        "agent": {"id": "agent-1", "framework": "hookwire"},
        "session": {"id": "s-1"},
    });
    if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
        m.extend(extra);
    }
    AgentContext::from_json(m).expect("valid context")
}

fn tool_call(name: &str, args: Value) -> AgentContext {
    ctx(
        "pre_tool_call",
        json!({"tool_call": {"id": "c1", "name": name, "args": args}}),
    )
}

const HEAD: &str = "package hookwire.p\nimport rego.v1\npoints := {\"pre_tool_call\", \"input\"}\n";

fn policy(body: &str) -> String {
    format!("{HEAD}{body}\n")
}

#[test]
fn deny_with_reason_and_message() {
    let dir = dir_with(&[(
        "p.rego",
        &policy(
            r#"deny contains {"reason": "policy:no_rm", "message": "no rm"} if input.tool_call.args.cmd == "rm""#,
        ),
    )]);
    let set = load(dir.path()).unwrap();
    let v = set
        .decide(&tool_call("bash", json!({"cmd": "rm"})))
        .unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.reason.as_deref(), Some("policy:no_rm"));
    assert_eq!(v.message.as_deref(), Some("no rm"));
    assert!(v.approval.is_none());
    let v = set
        .decide(&tool_call("bash", json!({"cmd": "ls"})))
        .unwrap();
    assert_eq!(v.decision, Decision::Allow);
}

#[test]
fn full_verdict_escalate_warn_labels_evidence() {
    let dir = dir_with(&[(
        "p.rego",
        &policy(
            r#"
escalate contains {"reason": "policy:big", "message": "needs a human", "approval": {"limit": 10}} if input.tool_call.args.amount > 10
warn contains "policy:watched"
warn contains {"message": "be careful"}
labels contains "finance"
evidence := {"rule": "spend"}
"#,
        ),
    )]);
    let set = load(dir.path()).unwrap();
    let v = set
        .decide(&tool_call("pay", json!({"amount": 11})))
        .unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.reason.as_deref(), Some("policy:big"));
    assert_eq!(v.message.as_deref(), Some("needs a human"));
    assert_eq!(
        v.approval,
        Some(json!({"limit": 10}).as_object().unwrap().clone())
    );
    assert!(v.is_liftable());
    assert_eq!(v.warnings.len(), 2);
    assert_eq!(v.warnings[0].reason.as_deref(), Some("policy:watched"));
    assert_eq!(v.warnings[1].message.as_deref(), Some("be careful"));
    assert_eq!(v.result_labels, vec!["finance".to_owned()]);
    assert_eq!(
        v.evidence,
        Some(json!({"rule": "spend"}).as_object().unwrap().clone())
    );

    let v = set.decide(&tool_call("pay", json!({"amount": 1}))).unwrap();
    assert_eq!(
        v.decision,
        Decision::Allow,
        "a warn is an allow with warnings"
    );
    assert_eq!(v.warnings.len(), 2);
}

#[test]
fn transform_path_and_value() {
    let dir = dir_with(&[(
        "p.rego",
        &policy(
            r#"transform contains {"path": "$target.content", "value": upper(input.target.content)}"#,
        ),
    )]);
    let set = load(dir.path()).unwrap();
    let v = set
        .decide(&ctx(
            "input",
            json!({"input": {"content": "hi", "role": "user"}}),
        ))
        .unwrap();
    assert_eq!(v.decision, Decision::Transform);
    let t = v.transform.unwrap();
    assert_eq!(t.path, "$target.content");
    assert_eq!(t.value, json!("HI"));
}

#[test]
fn deny_wins_and_further_entries_become_warnings() {
    let dir = dir_with(&[
        (
            "a.rego",
            "package hookwire.a\nimport rego.v1\npoints := [\"pre_tool_call\"]\ndeny contains \"policy:a\"\ntransform contains {\"path\": \"$target\", \"value\": {}}\n",
        ),
        (
            "b.rego",
            "package hookwire.b\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains \"policy:b\"\nescalate contains \"policy:b_human\"\n",
        ),
    ]);
    let set = load(dir.path()).unwrap();
    let v = set.decide(&tool_call("x", json!({}))).unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(
        v.reason.as_deref(),
        Some("policy:a"),
        "packages in name order"
    );
    assert!(v.approval.is_none() && v.transform.is_none());
    let warned: Vec<_> = v
        .warnings
        .iter()
        .filter_map(|w| w.reason.as_deref())
        .collect();
    assert_eq!(warned, ["policy:b", "policy:b_human"]);
}

#[test]
fn ill_formed_documents_are_errors_never_allows() {
    let cases = [
        ("deny contains 42", "deny"),
        ("deny := \"policy:x\"", "deny"),
        (
            "deny contains {\"reason\": \"host_error:interceptor_failed\"}",
            "deny",
        ),
        (
            "deny contains {\"reason\": \"policy:x\", \"mesage\": \"typo\"}",
            "deny",
        ),
        (
            "escalate contains {\"reason\": \"policy:x\", \"approval\": \"yes\"}",
            "escalate",
        ),
        ("transform contains {\"value\": 1}", "transform"),
        (
            "transform contains {\"path\": \"content\", \"value\": 1}",
            "transform",
        ),
        ("warn contains {}", "warn"),
        ("labels contains 7", "labels"),
        ("evidence := [1]", "evidence"),
    ];
    for (body, rule) in cases {
        let dir = dir_with(&[("p.rego", &policy(body))]);
        let set = load(dir.path()).unwrap();
        match set.decide(&tool_call("x", json!({}))) {
            Err(Error::IllFormed { rule: r, .. }) => assert_eq!(r, rule, "{body}"),
            other => panic!("{body}: expected an ill-formed decision, got {other:?}"),
        }
    }
}

#[test]
fn two_different_transforms_are_an_error() {
    let dir = dir_with(&[
        (
            "a.rego",
            "package hookwire.a\nimport rego.v1\npoints := {\"input\"}\ntransform contains {\"path\": \"$target.content\", \"value\": \"a\"}\n",
        ),
        (
            "b.rego",
            "package hookwire.b\nimport rego.v1\npoints := {\"input\"}\ntransform contains {\"path\": \"$target.content\", \"value\": \"b\"}\n",
        ),
    ]);
    let set = load(dir.path()).unwrap();
    let err = set
        .decide(&ctx(
            "input",
            json!({"input": {"content": "x", "role": "user"}}),
        ))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::IllFormed {
                rule: "transform",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn points_are_the_manifest_and_other_points_allow() {
    let dir = dir_with(&[
        ("a.rego", &policy("deny contains \"policy:always\"")),
        (
            "lib/helpers.rego",
            "package hookwire.lib\nimport rego.v1\nshout(s) := upper(s)\n",
        ),
    ]);
    let set = load(dir.path()).unwrap();
    assert_eq!(
        set.points(),
        vec![InterceptionPoint::Input, InterceptionPoint::PreToolCall]
    );
    assert_eq!(set.packages().len(), 1, "helper packages do not decide");
    let v = set
        .decide(&ctx("output", json!({"output": {"content": "x"}})))
        .unwrap();
    assert_eq!(v.decision, Decision::Allow);
}

#[test]
fn load_time_contract_errors() {
    let no_points = dir_with(&[(
        "p.rego",
        "package hookwire.p\nimport rego.v1\ndeny contains \"x\"\n",
    )]);
    assert!(matches!(
        load(no_points.path()),
        Err(Error::Contract { .. })
    ));

    let input_points = dir_with(&[(
        "p.rego",
        "package hookwire.p\nimport rego.v1\npoints := {input.interception_point}\ndeny contains \"x\"\n",
    )]);
    assert!(matches!(
        load(input_points.path()),
        Err(Error::Contract { .. })
    ));

    let bad_point = dir_with(&[(
        "p.rego",
        "package hookwire.p\nimport rego.v1\npoints := {\"pre_tool\"}\n",
    )]);
    assert!(matches!(
        load(bad_point.path()),
        Err(Error::Contract { .. })
    ));

    let reserved = dir_with(&[
        ("p.rego", &policy("deny contains \"x\"")),
        ("r.rego", "package hookwire_internal\nx := 1\n"),
    ]);
    assert!(matches!(load(reserved.path()), Err(Error::Contract { .. })));

    let nothing = dir_with(&[("p.rego", "package other\nimport rego.v1\nx := 1\n")]);
    assert!(matches!(load(nothing.path()), Err(Error::NoDecisions(_))));

    let syntax = dir_with(&[("p.rego", &policy("deny contains if {"))]);
    assert!(matches!(load(syntax.path()), Err(Error::Parse { .. })));

    let unsafe_var = dir_with(&[("p.rego", &policy("deny contains x if { y == 1 }"))]);
    assert!(load(unsafe_var.path()).is_err());
}

#[test]
fn data_documents_json_and_yaml_at_their_folder() {
    let dir = dir_with(&[
        (
            "p.rego",
            &policy(
                r#"deny contains data.reasons.blocked if input.tool_call.name in data.tools.blocked
deny contains "policy:yaml" if input.tool_call.name == data.tools.yaml_blocked"#,
            ),
        ),
        ("data.json", r#"{"reasons": {"blocked": "policy:blocked"}}"#),
        (
            "tools/data.yaml",
            "blocked: [curl, wget]\nyaml_blocked: nc\n",
        ),
        ("contexts/example.json", "not data, ignored"),
    ]);
    let set = load(dir.path()).unwrap();
    let reason = |tool: &str| set.decide(&tool_call(tool, json!({}))).unwrap().reason;
    assert_eq!(reason("curl").as_deref(), Some("policy:blocked"));
    assert_eq!(reason("nc").as_deref(), Some("policy:yaml"));
    assert_eq!(reason("ls"), None);

    let broken = dir_with(&[("p.rego", &policy("")), ("data.json", "{not json")]);
    assert!(matches!(load(broken.path()), Err(Error::Data { .. })));
}

#[test]
fn runaway_evaluation_is_cut_off() {
    let dir = dir_with(&[(
        "p.rego",
        &policy(
            "deny contains \"policy:never\" if { count([x | some a in numbers.range(1, 100000); some b in numbers.range(1, 100000); x := a * b]) < 0 }",
        ),
    )]);
    let limit = Duration::from_millis(50);
    let set = PolicySet::load(
        dir.path(),
        PolicyOptions {
            eval_limit: limit,
            ..PolicyOptions::default()
        },
    )
    .unwrap();
    let started = std::time::Instant::now();
    let err = set.decide(&tool_call("x", json!({}))).unwrap_err();
    assert!(matches!(err, Error::Bounded { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn test_runner_reports_pass_fail_and_error() {
    let dir = dir_with(&[
        (
            "p.rego",
            &policy("deny contains \"policy:x\" if input.tool_call.name == \"x\""),
        ),
        (
            "p_test.rego",
            r#"package hookwire.p_test
import rego.v1
import data.hookwire.p
test_denies_x if "policy:x" in p.deny with input as {"tool_call": {"name": "x"}}
test_wrong if "policy:x" in p.deny with input as {"tool_call": {"name": "y"}}
test_broken if to_number("nope")
# test_in_a_comment is not a rule
"#,
        ),
    ]);
    let set = load(dir.path()).unwrap();
    let outcomes = set.run_tests();
    let by_name = |name: &str| {
        outcomes
            .iter()
            .find(|o| o.test.name == name)
            .map(|o| o.status.clone())
    };
    assert_eq!(outcomes.len(), 3);
    assert_eq!(
        by_name("test_denies_x"),
        Some(hookwire_policy::TestStatus::Passed)
    );
    assert_eq!(
        by_name("test_wrong"),
        Some(hookwire_policy::TestStatus::Failed)
    );
    assert!(matches!(
        by_name("test_broken"),
        Some(hookwire_policy::TestStatus::Error(_))
    ));
}
