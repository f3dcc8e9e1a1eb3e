use super::*;
use serde_json::json;

#[test]
fn constructors_build_valid_verdicts_of_the_right_severity() {
    let cases = [
        (Verdict::allow(), Severity::Allow),
        (Verdict::warn("pii", "looks like an email"), Severity::Allow),
        (
            Verdict::transform("$target.x", json!(1)),
            Severity::Transform,
        ),
        (Verdict::escalate("needs_human"), Severity::LiftableDeny),
        (Verdict::deny("blocked"), Severity::Deny),
    ];
    for (v, s) in cases {
        v.validate().unwrap();
        assert_eq!(v.severity(), s);
        assert_eq!(Verdict::from_json(&v.to_json()).unwrap(), v);
    }
    assert!(Severity::Deny > Severity::LiftableDeny);
    assert!(Severity::LiftableDeny > Severity::Transform);
    assert!(Severity::Transform > Severity::Allow);
}

#[test]
fn section_5_rejections() {
    let bad = [
        json!("allow"),
        json!({}),
        json!({"decision": "warn"}),
        json!({"decision": "deny", "reason": "host_error:context_invalid"}),
        json!({"decision": "allow", "approval": {}}),
        json!({"decision": "transform"}),
        json!({"decision": "allow", "transform": {"path": "$target", "value": 1}}),
        json!({"decision": "allow", "warnings": {}}),
        json!({"decision": "allow", "warnings": ["x"]}),
        json!({"decision": "allow", "evidence": "uri"}),
        json!({"decision": "allow", "result_labels": [1]}),
        json!({"decision": "deny", "approval": true}),
    ];
    for v in bad {
        assert!(Verdict::from_json(&v).is_err(), "{v} accepted");
    }
}

#[test]
fn evidence_cap_is_measured_canonically() {
    let at_cap = "x".repeat(EVIDENCE_MAX_BYTES - r#"{"a":""}"#.len());
    let ok = json!({"decision": "allow", "evidence": {"a": at_cap}});
    Verdict::from_json(&ok).unwrap();
    let over = json!({"decision": "allow", "evidence": {"a": format!("{at_cap}x")}});
    assert_eq!(
        Verdict::from_json(&over),
        Err(InvalidVerdict::EvidenceTooLarge)
    );
}

#[test]
fn absent_transform_value_is_null() {
    let v = Verdict::from_json(&json!({"decision": "transform", "transform": {"path": "$target"}}))
        .unwrap();
    assert_eq!(v.transform.unwrap().value, Value::Null);
}
