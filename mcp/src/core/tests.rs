//! Every case of the mapping core.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::mediation::Mediation;

fn permit(target: Option<Value>) -> Verdicted {
    Verdicted {
        proceeds: true,
        target,
        reason: None,
        message: None,
        liftable: false,
    }
}

fn deny(reason: &str, liftable: bool) -> Verdicted {
    Verdicted {
        proceeds: false,
        target: None,
        reason: Some(reason.into()),
        message: None,
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
    let m = Mediation::default();
    assert_eq!(
        server_request(&m, "ping", false),
        ServerRequest::Answer(json!({}))
    );
    for refused in [
        "sampling/createMessage",
        "elicitation/create",
        "tasks/result",
        "vendor/unknown",
    ] {
        assert!(
            matches!(server_request(&m, refused, true), ServerRequest::Refuse(_)),
            "{refused}"
        );
    }
    assert_eq!(server_request(&m, "roots/list", true), ServerRequest::Relay);
    assert!(matches!(
        server_request(&m, "roots/list", false),
        ServerRequest::Refuse(_)
    ));
    let declared = Mediation::new(["vendor/unknown".to_owned()].into()).unwrap();
    assert_eq!(
        server_request(&declared, "vendor/unknown", true),
        ServerRequest::Relay
    );
}

#[test]
fn task_augmentation_and_unlisted_members_do_not_pass() {
    let p = json!({"name": "a", "arguments": {"x": 1}, "task": {"ttl": 1000}, "smuggled": "x"});
    assert_eq!(
        forwarded_call(&p, &json!({"x": 2})),
        json!({"name": "a", "arguments": {"x": 2}})
    );
    let r = call_result(&json!({"content": [], "isError": false, "later": "s3cr3t"})).unwrap();
    assert_eq!(r.raw, json!({"content": [], "isError": false}));
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "tasks": {"list": {}}}});
    assert_eq!(
        offered_initialize(&init)["capabilities"],
        json!({"tools": {}})
    );
    let f = forwarded_initialize(&json!({"capabilities": {"tasks": {}, "roots": {}}}));
    assert_eq!(f["capabilities"], json!({"roots": {}}));
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

#[test]
fn a_deny_carries_its_message_bounded() {
    let v = Verdicted {
        message: Some("files are not deleted through this server".into()),
        ..deny("policy:destructive_tool", false)
    };
    let Pre::Answer(r) = settle_pre(&v, &json!({}), None) else {
        panic!()
    };
    assert_eq!(
        text_of(&r),
        "hookwire: denied at pre_tool_call: policy:destructive_tool (files are not deleted through this server)"
    );
    let long = Verdicted {
        message: Some("é".repeat(10_000)),
        ..deny("r", true)
    };
    let r = settle_post(&long, &call_result(&json!({"content": []})).unwrap());
    let text = text_of(&r);
    assert!(text.starts_with("hookwire: denied at post_tool_call pending approval: r ("));
    assert!(
        text.len() <= 80 + hookwire::NOTICE_MESSAGE_MAX_BYTES,
        "bounded: {} bytes",
        text.len()
    );
    let blank = Verdicted {
        message: Some("  ".into()),
        ..deny("r", false)
    };
    assert_eq!(
        denied_text("pre_tool_call", &blank),
        "hookwire: denied at pre_tool_call: r"
    );
}

#[test]
fn an_upstream_error_is_governed_as_content_and_its_verdict_applies() {
    let error = json!({"code": -32603, "message": "db password: s3cr3t", "data": {"dsn": "pg://u:s3cr3t@h"}});
    let content = error_content(&error);
    assert_eq!(
        content,
        json!([
            {"type": "text", "text": "db password: s3cr3t"},
            {"type": "text", "text": r#"{"dsn":"pg://u:s3cr3t@h"}"#},
        ])
    );
    assert_eq!(
        error_content(&json!({"code": 1, "message": "m"}))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Permitted unchanged: the error is relayed as it came.
    assert_eq!(settle_post_error(&permit(None), &error), Err(error.clone()));
    assert_eq!(
        settle_post_error(&permit(Some(content)), &error),
        Err(error.clone())
    );
    // Rewritten: a tool error with the rewritten blocks only.
    let redacted = json!([{"type": "text", "text": "db password: [redacted]"}]);
    let r = settle_post_error(&permit(Some(redacted)), &error).unwrap();
    assert_eq!(r["isError"], true);
    assert_eq!(r["content"][0]["text"], ERROR_REWRITTEN);
    assert_eq!(r["content"][1]["text"], "db password: [redacted]");
    assert!(!r.to_string().contains("s3cr3t"));
    // Denied: the notice only.
    let r = settle_post_error(&deny("policy:leak", false), &error).unwrap();
    assert_eq!(
        text_of(&r),
        "hookwire: denied at post_tool_call: policy:leak"
    );
    assert!(!r.to_string().contains("s3cr3t"));
    // A rewrite into something that is not content is refused.
    let r = settle_post_error(&permit(Some(json!("x"))), &error).unwrap();
    assert!(text_of(&r).starts_with("hookwire: denied"));
}

#[test]
fn only_mediated_versions_are_negotiated() {
    assert_eq!(
        negotiate(&json!({"protocolVersion": "2025-11-25"})),
        Ok("2025-11-25")
    );
    for bad in [
        json!({"protocolVersion": "2099-01-01"}),
        json!({"protocolVersion": "2026-07-28"}),
        json!({"protocolVersion": 7}),
        json!({}),
    ] {
        let e = negotiate(&bad).unwrap_err();
        assert_eq!(e["code"], -32602, "{bad}");
        assert_eq!(e["message"], "Unsupported protocol version");
        assert_eq!(e["data"]["supported"], json!(HANDSHAKE_VERSIONS));
    }
    let long = "9".repeat(1000);
    let e = negotiate(&json!({"protocolVersion": long})).unwrap_err();
    assert!(
        e["data"]["requested"].as_str().unwrap().len() <= 64,
        "bounded"
    );
    assert!(negotiated(&json!({"protocolVersion": "2025-06-18"})).is_ok());
    assert!(negotiated(&json!({"protocolVersion": "2099-01-01"})).is_err());
    assert!(negotiated(&json!({})).is_err());
}
