//! Every case of the mapping core.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;

fn permit(target: Option<Value>) -> Verdicted {
    Verdicted {
        proceeds: true,
        target,
        reason: None,
        liftable: false,
    }
}

fn deny(reason: &str, liftable: bool) -> Verdicted {
    Verdicted {
        proceeds: false,
        target: None,
        reason: Some(reason.into()),
        liftable,
    }
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

#[test]
fn call_params_read_name_arguments_and_progress_token() {
    let p = call_params(
        &json!({"name": "rm", "arguments": {"path": "/"}, "_meta": {"progressToken": 7}}),
    )
    .unwrap();
    assert_eq!(p.name, "rm");
    assert_eq!(p.arguments, json!({"path": "/"}));
    assert_eq!(p.progress_token, Some(json!(7)));
    let p = call_params(&json!({"name": "ls"})).unwrap();
    assert_eq!(p.arguments, json!({}));
    assert_eq!(p.progress_token, None);
    let p = call_params(&json!({"name": "ls", "arguments": null, "_meta": {"progressToken": [1]}}))
        .unwrap();
    assert_eq!(p.arguments, json!({}));
    assert_eq!(
        p.progress_token, None,
        "a token that is neither string nor integer is ignored"
    );
}

#[test]
fn call_params_without_a_name_or_with_non_object_arguments_are_refused() {
    for bad in [
        json!({}),
        json!({"name": 3}),
        json!({"name": "x", "arguments": [1]}),
        json!({"name": "x", "arguments": "a"}),
        json!([1, 2]),
        Value::Null,
    ] {
        assert!(call_params(&bad).is_err(), "{bad}");
    }
}

#[test]
fn forwarded_call_keeps_meta_and_replaces_arguments() {
    let p = json!({"name": "a", "arguments": {"x": 1}, "_meta": {"progressToken": "t"}});
    let f = forwarded_call(&p, &json!({"x": 2}));
    assert_eq!(
        f,
        json!({"name": "a", "arguments": {"x": 2}, "_meta": {"progressToken": "t"}})
    );
}

#[test]
fn call_results_are_checked_against_the_sdk_type() {
    let r =
        call_result(&json!({"content": [{"type": "text", "text": "hi"}], "isError": true, "x": 1}))
            .unwrap();
    assert!(r.is_error);
    assert_eq!(r.content, json!([{"type": "text", "text": "hi"}]));
    assert_eq!(r.structured, None);
    let r = call_result(&json!({"content": [], "structuredContent": {"a": 1}})).unwrap();
    assert!(!r.is_error);
    assert_eq!(r.structured, Some(json!({"a": 1})));
    for bad in [
        json!("text"),
        json!({"content": "not an array"}),
        json!({"content": [{"type": "no-such-type"}]}),
        json!({}),
    ] {
        assert!(call_result(&bad).is_err(), "{bad}");
    }
}

#[test]
fn a_permit_keeps_or_rewrites_the_arguments() {
    let original = json!({"a": 1});
    assert_eq!(
        settle_pre(&permit(None), &original, None),
        Pre::Call(original.clone())
    );
    assert_eq!(
        settle_pre(&permit(Some(json!({"a": 2}))), &original, None),
        Pre::Call(json!({"a": 2}))
    );
    let Pre::Answer(r) = settle_pre(&permit(Some(json!([1]))), &original, None) else {
        panic!("non-object arguments must not be sent");
    };
    assert_eq!(r["isError"], true);
}

#[test]
fn a_pre_deny_is_a_tool_error_naming_the_reason_never_the_payload() {
    let original = json!({"secret": "s3cr3t"});
    let Pre::Answer(r) = settle_pre(&deny("destructive", false), &original, None) else {
        panic!()
    };
    assert_eq!(r["isError"], true);
    assert_eq!(
        text_of(&r),
        "hookwire: denied at pre_tool_call: destructive"
    );
    assert!(!r.to_string().contains("s3cr3t"));
    let Pre::Answer(r) = settle_pre(&deny("needs a human", true), &original, None) else {
        panic!()
    };
    assert_eq!(
        text_of(&r),
        "hookwire: denied at pre_tool_call pending approval: needs a human"
    );
    let v = Verdicted {
        reason: None,
        ..deny("", false)
    };
    let Pre::Answer(r) = settle_pre(&v, &original, None) else {
        panic!()
    };
    assert_eq!(
        text_of(&r),
        "hookwire: denied at pre_tool_call: no reason given"
    );
}

#[test]
fn a_hidden_tool_is_denied_whatever_the_verdict() {
    let Pre::Answer(r) = settle_pre(&permit(None), &json!({}), Some("drop_db")) else {
        panic!()
    };
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("\"drop_db\" is not available"));
}

#[test]
fn a_post_permit_relays_or_rewrites_the_content() {
    let raw = json!({"content": [{"type": "text", "text": "key=abc"}], "structuredContent": {"key": "abc"}, "_meta": {"m": 1}});
    let result = call_result(&raw).unwrap();
    assert_eq!(settle_post(&permit(None), &result), raw);
    assert_eq!(
        settle_post(&permit(Some(result.content.clone())), &result),
        raw
    );
    let redacted = json!([{"type": "text", "text": "key=[redacted]"}]);
    let out = settle_post(&permit(Some(redacted.clone())), &result);
    assert_eq!(out["content"][0]["text"], STRUCTURED_WITHHELD);
    assert_eq!(out["content"][1], redacted[0]);
    assert_eq!(
        out["isError"], true,
        "an error result: no outputSchema binds it"
    );
    assert_eq!(out["_meta"], json!({"m": 1}));
    assert!(
        out.get("structuredContent").is_none(),
        "the unredacted copy is withheld"
    );
    assert!(!out.to_string().contains("abc"));
    let plain = call_result(&json!({"content": [{"type": "text", "text": "key=abc"}]})).unwrap();
    let out = settle_post(&permit(Some(redacted.clone())), &plain);
    assert_eq!(
        out,
        json!({"content": redacted}),
        "without a structured copy: the rewrite as is"
    );
    let bad = settle_post(&permit(Some(json!("flat"))), &result);
    assert_eq!(bad["isError"], true);
    assert!(!bad.to_string().contains("abc"));
}

#[test]
fn a_post_deny_discards_the_result() {
    let result = call_result(&json!({"content": [{"type": "text", "text": "secret"}]})).unwrap();
    let out = settle_post(&deny("leak", false), &result);
    assert_eq!(text_of(&out), "hookwire: denied at post_tool_call: leak");
    assert!(!out.to_string().contains("secret"));
}

#[test]
fn tool_pages_are_read_and_hidden_tools_filtered() {
    let page = json!({"tools": [
        {"name": "a", "inputSchema": {"type": "object"}},
        {"name": "b", "inputSchema": {"type": "object"}}
    ], "nextCursor": "c2"});
    assert_eq!(
        tool_page(&page).unwrap(),
        (vec!["a".to_owned(), "b".to_owned()], Some("c2".into()))
    );
    assert!(tool_page(&json!({"tools": [{"inputSchema": {}}]})).is_err());
    assert!(tool_page(&json!({"tools": 1})).is_err());
    let hidden: BTreeSet<String> = ["b".to_owned()].into();
    let f = filtered_tools(&page, &hidden);
    assert_eq!(f["tools"].as_array().unwrap().len(), 1);
    assert_eq!(f["tools"][0]["name"], "a");
    assert_eq!(f["nextCursor"], "c2");
}

#[test]
fn initialize_loses_sampling_and_elicitation_only() {
    let p = json!({"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}, "clientInfo": {"name": "c", "version": "1"}});
    let f = forwarded_initialize(&p);
    assert_eq!(f["capabilities"], json!({"roots": {"listChanged": true}}));
    assert_eq!(f["clientInfo"], p["clientInfo"]);
}

#[test]
fn server_requests_are_answered_refused_or_relayed() {
    assert_eq!(
        server_request("ping", false),
        ServerRequest::Answer(json!({}))
    );
    assert!(matches!(
        server_request("sampling/createMessage", true),
        ServerRequest::Refuse(_)
    ));
    assert!(matches!(
        server_request("elicitation/create", true),
        ServerRequest::Refuse(_)
    ));
    assert_eq!(server_request("roots/list", true), ServerRequest::Relay);
    assert!(matches!(
        server_request("roots/list", false),
        ServerRequest::Refuse(_)
    ));
}

#[test]
fn cancellations_and_progress() {
    use crate::jsonrpc::Id;
    assert_eq!(cancelled_id(&json!({"requestId": 4})), Some(Id::Num(4)));
    assert_eq!(
        cancelled_id(&json!({"requestId": "x"})),
        Some(Id::Str("x".into()))
    );
    assert_eq!(cancelled_id(&json!({})), None);
    let p = progress(&json!("tok"), 3, "pre_tool_call");
    assert_eq!(p["method"], "notifications/progress");
    assert_eq!(p["params"]["progressToken"], "tok");
    assert_eq!(p["params"]["progress"], 3);
}
