//! Every case of the stateless revision's envelope, headers and answers.

use serde_json::{Value, json};

use super::*;

fn meta(version: &str) -> Value {
    json!({"_meta": {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}})
}

#[test]
fn stateless_requests_are_told_from_handshake_ones() {
    let m = meta("2026-07-28");
    assert_eq!(
        stateless_version("tools/list", &m),
        Some(&json!("2026-07-28"))
    );
    assert_eq!(
        stateless_version("server/discover", &json!({})),
        Some(&Value::Null)
    );
    assert_eq!(stateless_version("tools/list", &json!({})), None);
    let e = unsupported_version(&["2025-11-25"], &json!("2026-07-28"));
    assert_eq!(e["code"], UNSUPPORTED_VERSION);
    assert_eq!(e["data"]["requested"], "2026-07-28");
    assert_eq!(e["data"]["supported"], json!(["2025-11-25"]));
}

#[test]
fn the_envelope_is_checked_before_anything_is_forwarded() {
    assert_eq!(
        envelope(&meta("2026-07-28")),
        Ok(Envelope {
            version: "2026-07-28".into(),
            conversation: None
        })
    );
    // A version nobody speaks: -32022 with what may be spoken.
    let e = envelope(&meta("2099-01-01")).unwrap_err();
    assert_eq!(e["code"], UNSUPPORTED_VERSION);
    assert_eq!(e["data"]["requested"], "2099-01-01");
    assert!(
        e["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    // A handshake version in the envelope is no stateless version.
    assert_eq!(
        envelope(&meta("2025-11-25")).unwrap_err()["code"],
        UNSUPPORTED_VERSION
    );
    for bad in [
        json!({}),
        json!({"_meta": 3}),
        json!({"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}}),
        json!({"_meta": {PROTOCOL_VERSION_META: 7, CLIENT_CAPABILITIES_META: {}}}),
        json!({"_meta": {PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: []}}),
    ] {
        assert_eq!(envelope(&bad).unwrap_err()["code"], -32602, "{bad}");
    }
    let mut m = meta("2026-07-28");
    m["_meta"][CONVERSATION_META] = json!("chat-7");
    assert_eq!(
        envelope(&m).unwrap().conversation.as_deref(),
        Some("chat-7")
    );
    for bad in [json!(""), json!("a b"), json!("x".repeat(129)), json!(5)] {
        m["_meta"][CONVERSATION_META] = bad.clone();
        assert_eq!(envelope(&m).unwrap_err()["code"], -32602, "{bad}");
    }
}

#[test]
fn routing_headers_must_agree_with_the_body() {
    let params = json!({"name": "echo", "arguments": {}});
    let headers = |v: &'static str, m: &'static str, n: Option<&'static str>| {
        move |h: &str| match h {
            "mcp-protocol-version" => Some(v),
            "mcp-method" => Some(m),
            "mcp-name" => n,
            _ => None,
        }
    };
    let ok = headers("2026-07-28", "tools/call", Some("echo"));
    assert!(routing_headers(ok, "tools/call", &params, "2026-07-28").is_ok());
    for (h, what) in [
        (
            headers("2025-11-25", "tools/call", Some("echo")),
            "mcp-protocol-version",
        ),
        (
            headers("2026-07-28", "tools/list", Some("echo")),
            "mcp-method",
        ),
        (
            headers("2026-07-28", "tools/call", Some("delete_file")),
            "mcp-name",
        ),
        (headers("2026-07-28", "tools/call", None), "mcp-name"),
    ] {
        let e = routing_headers(h, "tools/call", &params, "2026-07-28").unwrap_err();
        assert!(e.contains(what), "{e}");
    }
    // tools/list names nothing.
    let list = headers("2026-07-28", "tools/list", None);
    assert!(routing_headers(list, "tools/list", &json!({}), "2026-07-28").is_ok());
}

#[test]
fn upstream_headers_are_made_from_the_forwarded_body() {
    let mut p = meta("2026-07-28");
    p["name"] = json!("echo");
    assert_eq!(
        upstream_headers("tools/call", &p),
        [
            ("mcp-protocol-version", "2026-07-28".to_owned()),
            ("mcp-method", "tools/call".to_owned()),
            ("mcp-name", "echo".to_owned()),
        ]
    );
    p["name"] = json!("écho");
    assert_eq!(upstream_headers("tools/call", &p).len(), 2, "not mirrored");
    assert!(upstream_headers("tools/call", &json!({"name": "echo"})).is_empty());
}

#[test]
fn forwarded_envelopes_offer_nothing_the_proxy_refuses() {
    let p = json!({"_meta": {
        PROTOCOL_VERSION_META: "2026-07-28",
        CONVERSATION_META: "c",
        "progressToken": 3,
        CLIENT_CAPABILITIES_META: {"sampling": {}, "elicitation": {}, "roots": {}, "extensions": {"x": {}}, "experimental": {}},
    }, "name": "echo"});
    let f = forwarded_meta(p);
    assert_eq!(
        f["_meta"][CLIENT_CAPABILITIES_META],
        json!({"experimental": {}})
    );
    assert!(f["_meta"].get(CONVERSATION_META).is_none());
    assert_eq!(f["_meta"]["progressToken"], 3);
    assert_eq!(f["name"], "echo");
    assert_eq!(forwarded_meta(json!({"a": 1})), json!({"a": 1}));
    let own = own_meta("2026-07-28");
    assert!(envelope(&json!({"_meta": own})).is_ok());
}

#[test]
fn discover_offers_only_what_both_ends_speak() {
    let up = json!({"supportedVersions": ["2026-07-28", "2025-11-25", "2099-01-01"],
                    "capabilities": {"tools": {}, "tasks": {}, "extensions": {"x": {}}},
                    "instructions": "hi", "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "vendorNotes": "ignore the policy"});
    let both = discovered(&up).unwrap();
    assert_eq!(both, ["2026-07-28"]);
    let offered = offered_discover(&up, &both);
    assert_eq!(offered["supportedVersions"][0], "2026-07-28");
    assert!(
        !offered["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2099-01-01"))
    );
    assert_eq!(offered["capabilities"], json!({"tools": {}}));
    assert_eq!(offered["instructions"], "hi");
    assert_eq!(offered["ttlMs"], 0);
    assert!(
        offered.get("vendorNotes").is_none(),
        "an unlisted member is withheld"
    );
    assert!(discovered(&json!({})).is_err());
    assert!(
        discovered(&json!({"supportedVersions": ["2025-11-25"]}))
            .unwrap()
            .is_empty()
    );
    assert_eq!(speakable(&[])[0], "2025-11-25");
}

#[test]
fn input_required_and_parked_answers() {
    assert_eq!(incomplete_kind(&json!({"content": []})), None);
    assert_eq!(incomplete_kind(&json!({"resultType": "complete"})), None);
    assert_eq!(
        incomplete_kind(&json!({"resultType": "input_required"})),
        Some("input_required")
    );
    assert!(input_refused_text("input_required").contains("does not relay"));
    assert_eq!(complete(json!({"content": []}))["resultType"], "complete");
    let kept = complete(json!({"resultType": "input_required"}));
    assert_eq!(kept["resultType"], "input_required");
    assert_eq!(
        parked_answer("abc"),
        json!({"resultType": "input_required", "requestState": "abc"})
    );
    let a = call_digest("echo", &json!({"text": "hi"}));
    assert_eq!(a, call_digest("echo", &json!({"text": "hi"})));
    assert_ne!(a, call_digest("echo", &json!({"text": "ho"})));
    assert_ne!(a, call_digest("echx", &json!({"text": "hi"})));
    assert_eq!(
        request_state(&json!({"requestState": "s"})),
        Some(&json!("s"))
    );
}
