//! Fixed cases named by the contract: JSON boundaries, extension caps,
//! nulls.

use super::*;

#[test]
fn json_decode_boundaries() {
    for refused in ["18446744073709551616", "-9223372036854775809"] {
        assert_eq!(
            json::decode(refused),
            Err(InvalidJson::IntegerOutOfRange(0)),
            "{refused}"
        );
    }
    for refused in ["1e400", "-1e400", "[1e999]"] {
        assert!(
            matches!(json::decode(refused), Err(InvalidJson::Syntax(_))),
            "{refused} must be refused, not read as infinity"
        );
    }
    assert_eq!(
        json::decode("18446744073709551615"),
        Ok(Value::from(u64::MAX))
    );
    assert_eq!(
        json::decode("-9223372036854775808"),
        Ok(Value::from(i64::MIN))
    );
    assert_eq!(json::decode("1.5"), Ok(json!(1.5)));
    let one_f = json::decode("1.0").unwrap();
    assert!(one_f.is_f64());
    assert_eq!(one_f, json!(1.0));
    assert_ne!(one_f, json!(1));
    assert_eq!(json::encode(&one_f), "1.0");
}

#[test]
fn response_extension_cap_is_enforced_on_the_wire() {
    let big = "x".repeat(RESPONSE_EXTENSIONS_MAX_BYTES);
    let mut resp = InterceptorResponse::from(Verdict::allow());
    resp.extensions.insert("acme".into(), json!(big));
    let wire = pb::InterceptorResponse::from(&resp);
    assert_eq!(
        InterceptorResponse::try_from(wire),
        Err(InvalidVerdict::ExtensionsTooLarge)
    );
}

#[test]
fn empty_extensions_and_nulls_survive() {
    let ctx = AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "post_tool_call",
        "timestamp": "t",
        "sequence": 0,
        "agent": {"id": "a", "framework": "f", "extra": null},
        "session": {"id": "s"},
        "tool_call": {"id": "c", "name": "n", "args": {"x": null}},
        "tool_result": {"value": null, "is_error": true},
        "extensions": {},
        "messages": null,
        "budgets": {"cost_usd": 3, "elapsed_seconds": 3.0},
    }))
    .unwrap();
    assert_round_trip(&ctx).unwrap();
}
