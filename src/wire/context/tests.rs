use serde_json::{Value, json};

use super::*;
use crate::context::{AgentContext, InvalidContext};
use crate::pb;
use crate::point::InterceptionPoint;

fn core() -> Value {
    json!({
        "spec": "agent-hooks/0.1",
        "timestamp": "2026-06-19T14:03:11.123Z",
        "sequence": 7,
        "agent": {"id": "a", "framework": "hookwire", "name": "n", "x-extra": [1, 1.0]},
        "session": {"id": "s", "turn": 2, "extra": {"k": null}},
    })
}

fn ctx(point: &str, members: Value) -> Value {
    let mut c = core();
    c["interception_point"] = json!(point);
    if let (Some(c), Some(m)) = (c.as_object_mut(), members.as_object()) {
        c.extend(m.clone());
    }
    c
}

fn samples() -> Vec<Value> {
    vec![
        ctx(
            "agent_startup",
            json!({"agent_init": {"tools_registered": ["bash"], "config": {"x": 1}}}),
        ),
        ctx(
            "input",
            json!({"input": {"content": "hi 😀", "role": "user"}, "messages": [], "extensions": {}}),
        ),
        ctx(
            "pre_model_call",
            json!({
                "model": {"id": "m", "vendor": "v", "params": {"t": 0.5}, "other": true},
                "messages": [{"role": "user", "content": "x"}],
                "request_id": "r1", "tools": [{"name": "bash"}],
            }),
        ),
        ctx(
            "post_model_call",
            json!({
                "model": {"id": ""},
                "response": {"content": null, "tool_calls": [], "finish_reason": "stop"},
                "usage": {"prompt_tokens": 3}, "messages": [1],
            }),
        ),
        ctx(
            "pre_tool_call",
            json!({
                "tool_call": {"id": "c", "name": "bash", "args": {"n": 18446744073709551615u64}, "content_hash": "sha256:00"},
                "trace": {"trace_id": "ab", "flags": 1}, "tenant": {}, "actor": {"kind": "human"},
                "budgets": {"tool_call_count": 3, "cost_usd": 3.0},
                "extensions": {"acme": {"k": [-9223372036854775808i64]}},
                "x_future": "kept", "input": {"not": "this point's"},
            }),
        ),
        ctx(
            "post_tool_call",
            json!({
                "tool_call": {"id": "c", "name": "bash", "args": {}},
                "tool_result": {"value": null, "is_error": false, "duration_ms": 1.0, "stderr": ""},
            }),
        ),
        ctx("output", json!({"output": {"content": "bye"}})),
        ctx(
            "agent_shutdown",
            json!({"summary": {"reason": "completed"}}),
        ),
    ]
}

#[test]
fn every_point_round_trips() {
    for sample in samples() {
        let c = AgentContext::from_json(sample.clone()).unwrap();
        let req = context_to_request(&c).unwrap();
        assert_eq!(req.point(), c.point());
        let back = context_from_request(req).unwrap();
        assert_eq!(back, c, "{sample}");
        assert_eq!(back.to_json(), c.to_json());
    }
}

#[test]
fn layout_puts_members_in_their_typed_fields() {
    let c = AgentContext::from_json(samples().swap_remove(4)).unwrap();
    let PointRequest::PreToolCall(r) = context_to_request(&c).unwrap() else {
        panic!("wrong kind");
    };
    let core = r.core.unwrap();
    assert_eq!(core.sequence, 7);
    assert_eq!(core.agent.as_ref().unwrap().name.as_deref(), Some("n"));
    assert_eq!(
        core.agent.unwrap().additional["x-extra"].json,
        "[1,1.0]",
        "unknown agent members travel verbatim"
    );
    assert_eq!(core.session.unwrap().turn, Some(2));
    let call = r.tool_call.unwrap();
    assert_eq!(call.args.unwrap().json, r#"{"n":18446744073709551615}"#);
    let o = r.optional.unwrap();
    assert_eq!(o.trace.unwrap().trace_id.as_deref(), Some("ab"));
    assert_eq!(o.tenant, Some(pb::Tenant::default()));
    assert_eq!(o.extensions["acme"].json, r#"{"k":[-9223372036854775808]}"#);
    let mut extra: Vec<_> = o.additional.keys().cloned().collect();
    extra.sort();
    assert_eq!(extra, ["input", "x_future"]);
}

#[test]
fn wrong_types_are_refused_not_coerced() {
    let base = samples().swap_remove(5);
    let cases: [(&str, &[&str], Value); 9] = [
        ("agent.name", &["agent", "name"], json!(1)),
        ("agent.version", &["agent", "version"], Value::Null),
        ("session.turn", &["session", "turn"], json!(-1)),
        ("session.turn", &["session", "turn"], json!(1.0)),
        ("session.started_at", &["session", "started_at"], json!([])),
        (
            "tool_call.content_hash",
            &["tool_call", "content_hash"],
            json!(1),
        ),
        ("tool_call", &["tool_call", "extra"], json!(1)),
        (
            "tool_result.is_error",
            &["tool_result", "is_error"],
            json!("no"),
        ),
        ("trace", &["trace"], json!("ab")),
    ];
    for (name, at, v) in cases {
        let mut c = base.clone();
        let mut slot = &mut c;
        for k in at {
            slot = &mut slot[*k];
        }
        *slot = v;
        let members = c.as_object().cloned().unwrap_or_default();
        let ctx = AgentContext::from_members_unchecked(InterceptionPoint::PostToolCall, members);
        match context_to_request(&ctx) {
            Err(InvalidContext::Member { member, .. }) => assert_eq!(member, name),
            other => panic!("{name}: {other:?}"),
        }
    }
    let mut no_seq = base.as_object().cloned().unwrap_or_default();
    no_seq.insert("sequence".into(), json!(1.5));
    let ctx = AgentContext::from_members_unchecked(InterceptionPoint::PostToolCall, no_seq);
    assert!(matches!(
        context_to_request(&ctx),
        Err(InvalidContext::Member { .. })
    ));
    let members = base.as_object().cloned().unwrap_or_default();
    let wrong_point = AgentContext::from_members_unchecked(InterceptionPoint::Output, members);
    assert_eq!(context_to_request(&wrong_point), Err(InvalidContext::Point));
}

fn pre_tool_request() -> pb::PreToolCallRequest {
    let c = AgentContext::from_json(samples().swap_remove(4)).unwrap();
    match context_to_request(&c) {
        Ok(PointRequest::PreToolCall(r)) => r,
        other => panic!("{other:?}"),
    }
}

fn decode_with(
    f: impl FnOnce(&mut pb::PreToolCallRequest),
) -> Result<AgentContext, InvalidContext> {
    let mut r = pre_tool_request();
    f(&mut r);
    context_from_request(PointRequest::PreToolCall(r))
}

fn jv(text: &str) -> pb::JsonValue {
    pb::JsonValue { json: text.into() }
}

#[test]
fn decode_refusals() {
    let member_err = |r: Result<AgentContext, InvalidContext>| match r {
        Err(InvalidContext::Member { member, .. }) => member,
        other => panic!("{other:?}"),
    };
    assert_eq!(member_err(decode_with(|r| r.core = None)), "core");
    assert_eq!(
        member_err(decode_with(|r| r.core.as_mut().unwrap().agent = None)),
        "agent"
    );
    assert_eq!(member_err(decode_with(|r| r.tool_call = None)), "tool_call");
    assert_eq!(
        member_err(decode_with(|r| {
            let a = r.core.as_mut().unwrap().agent.as_mut().unwrap();
            a.additional.insert("name".into(), jv("1"));
        })),
        "agent.name"
    );
    for shadow in [
        "target",
        "interception_point",
        "tool_call",
        "extensions",
        "trace",
    ] {
        assert!(
            matches!(
                decode_with(|r| {
                    let o = r.optional.as_mut().unwrap();
                    o.additional.insert(shadow.into(), jv("{}"));
                }),
                Err(InvalidContext::Member { .. })
            ),
            "{shadow}"
        );
    }
    // An empty `extensions` travels in additional, and only as `{}`.
    let ok = decode_with(|r| {
        let o = r.optional.as_mut().unwrap();
        o.extensions.clear();
        o.additional.insert("extensions".into(), jv("{}"));
    })
    .unwrap();
    assert_eq!(ok.get("extensions"), Some(&json!({})));
    assert!(
        decode_with(|r| {
            let o = r.optional.as_mut().unwrap();
            o.extensions.clear();
            o.additional
                .insert("extensions".into(), jv(r#"{"acme":1}"#));
        })
        .is_err()
    );
    assert_eq!(
        decode_with(|r| {
            let o = r.optional.as_mut().unwrap();
            o.extensions.insert("Bad".into(), jv("1"));
        }),
        Err(InvalidContext::Namespace)
    );
    match decode_with(|r| r.tool_call.as_mut().unwrap().args = Some(jv("{\"n\":1e400}"))) {
        Err(InvalidContext::Json { member, .. }) => assert_eq!(member, "tool_call.args"),
        other => panic!("{other:?}"),
    }
    match decode_with(|r| {
        let a = r.core.as_mut().unwrap().agent.as_mut().unwrap();
        a.additional.insert("secret value?".into(), jv(""));
    }) {
        Err(InvalidContext::Json { member, problem }) => {
            assert_eq!(member, "agent.*");
            assert!(!problem.contains("secret"));
        }
        other => panic!("{other:?}"),
    }
    // The envelope check runs on decode.
    assert!(matches!(
        decode_with(|r| r.tool_call.as_mut().unwrap().args = Some(jv("[]"))),
        Err(InvalidContext::Member { .. })
    ));
    assert!(matches!(
        decode_with(|r| r.core.as_mut().unwrap().spec = "x".into()),
        Err(InvalidContext::Member { .. })
    ));
}

#[test]
fn pre_model_call_messages_travel_once() {
    let c = AgentContext::from_json(samples().swap_remove(2)).unwrap();
    let Ok(PointRequest::PreModelCall(mut r)) = context_to_request(&c) else {
        panic!("wrong kind");
    };
    assert!(r.messages.is_some());
    assert!(r.optional.as_ref().is_none_or(|o| o.messages.is_none()));
    r.optional.get_or_insert_default().messages = Some(jv("[]"));
    assert!(matches!(
        context_from_request(PointRequest::PreModelCall(r)),
        Err(InvalidContext::Member { .. })
    ));
}

#[test]
fn members_holding_target_are_refused() {
    let c = AgentContext::from_json(samples().swap_remove(6)).unwrap();
    let mut members = c.members().clone();
    members.insert("target".into(), json!({"content": "bye"}));
    let c = AgentContext::from_members_unchecked(InterceptionPoint::Output, members);
    assert!(matches!(
        context_to_request(&c),
        Err(InvalidContext::Member { .. })
    ));
}
