//! The wire, exactly: every context the service rebuilt is the one the
//! host sent, values round trip bit for bit, and integers the service
//! computes are exact across the 64-bit range.

use hookwire::{AgentContext, Decision, InterceptionPoint};
use hookwire_client::{
    IdentityProvider, InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult,
};
use hookwire_testkit as testkit;
use serde_json::{Map, Value, json};

use InterceptionPoint::*;

use crate::fixtures::{
    REMOTE, assert_exact, connect_with_passthrough, exact_host_with_passthrough,
};
use crate::service::{Lang, Service};

/// Values no JSON round trip may change: the 64-bit extremes, the limits of
/// a double's exact integers, floats that must stay floats, nesting, unicode
/// (controls, surrogate pairs, U+2028), null, and a `__proto__` member.
fn fidelity_values() -> Value {
    json!({
        "ints": [0, -1, 9_007_199_254_740_991_i64, -9_007_199_254_740_991_i64,
                 9_007_199_254_740_993_u64, i64::MAX, i64::MIN, u64::MAX],
        "floats": [1.0, -0.0, -2.5, 0.1, 1e300, 5e-324, 1.7976931348623157e308],
        "nested": {"a": {"b": [[], {}, [null, true, false, [[[{"deep": 1}]]]]]}, "empty": ""},
        "unicode": "é ü 中文 😀 \u{0} \u{1f} \" \\ / \u{2028} \u{feff}",
        "null": null,
        "__proto__": {"polluted": true},
        "counter": 41,
    })
}

/// The service bound at every point (`--points all`): each context it
/// rebuilt is, member for member, the one the host sent (`target`
/// included); a transform echoing the arguments returns them bit for bit;
/// a transform computed from the context carries them inside a new value.
pub async fn contexts_and_values_round_trip_exactly(lang: Lang) {
    let service = Service::spawn(lang, &["--probes", "--points", "all"]);
    let (b, records) = testkit::host();
    let b = b
        .agent_name("Polyglot Agent ✓", "1.2.3")
        .identity_provider(IdentityProvider::Null);
    let (host, records, seen) = connect_with_passthrough(b, &service, records).await;
    for point in InterceptionPoint::ALL {
        assert_eq!(host.chain(point), ["passthrough", REMOTE]);
    }
    let v = fidelity_values();
    let mut members = Map::new();
    members.insert(
        "session".into(),
        json!({"started_at": "2026-06-19T14:03:11Z", "turn": 3, "x-note": v["floats"]}),
    );
    members.insert("trace".into(), json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "flags": 1}));
    members.insert("tenant".into(), json!({"id": "t-1", "name": "Zürich AG"}));
    members.insert(
        "actor".into(),
        json!({"id": "u-7", "kind": "human", "groups": ["ops"]}),
    );
    members.insert(
        "budgets".into(),
        json!({"tool_call_count": 3, "cost_usd": 3.0, "elapsed_seconds": 0.25}),
    );
    members.insert(
        "extensions".into(),
        json!({"acme": v.clone(), "zeta": null}),
    );
    let session = host.session_with("fidelity", members).unwrap();

    assert!(session.start(["echo"]).await.unwrap().proceeds());
    let e = session
        .input(
            json!({"text": "plain words", "values": v}),
            InputRole::External,
        )
        .await
        .unwrap();
    assert_eq!(e.verdict().decision, Decision::Allow);
    let mut model_members = Map::new();
    model_members.insert("model".into(), json!({"id": "m", "vendor": "acme", "params": {"temperature": 0.0, "top_k": 40}, "revision": 7}));
    model_members.insert("messages".into(), json!([{"role": "user", "content": v}]));
    model_members.insert("request_id".into(), json!("r-1"));
    model_members.insert(
        "tools".into(),
        json!([{"name": "echo", "schema": {"type": "object"}}]),
    );
    assert!(
        session
            .emit(PreModelCall, model_members)
            .await
            .unwrap()
            .proceeds()
    );
    let call = ToolCall::new("call-ü", "echo", v.clone());
    let response = ModelResponse {
        content: v["unicode"].clone(),
        tool_calls: vec![call.clone()],
        finish_reason: "tool_calls".into(),
    };
    assert!(
        session
            .post_model_call("m", &response)
            .await
            .unwrap()
            .proceeds()
    );

    // transform: the arguments echoed back unchanged are exactly the arguments.
    let pre = session.pre_tool_call(&call).await.unwrap();
    assert_eq!(pre.verdict().decision, Decision::Transform);
    assert_exact(pre.target().unwrap(), &v, "echoed arguments");

    // transform: a value computed from the context carries its parts exactly.
    let result = ToolResult {
        value: json!({"rows": v["ints"], "ratio": 0.5, "note": null}),
        is_error: false,
    };
    let post = session.post_tool_call(&call, &result).await.unwrap();
    assert_eq!(
        post.verdict().decision,
        Decision::Transform,
        "{:?}",
        post.verdict()
    );
    assert_exact(
        post.target().unwrap(),
        &json!({"args": v, "result": result.value, "next": 42}),
        "computed post_tool_call target",
    );
    assert!(
        session
            .output(json!({"text": v["unicode"], "n": u64::MAX}))
            .await
            .unwrap()
            .proceeds()
    );
    assert!(
        session
            .shutdown(ShutdownReason::Completed)
            .await
            .unwrap()
            .proceeds()
    );

    // Each context the service rebuilt is the one the host sent.
    let sent = seen.lock().unwrap().clone();
    let got = service.calls();
    assert_eq!(got.len(), 8);
    assert_eq!(sent.len(), 8);
    for (i, ((point, ctx), sent)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(point, sent.point().as_str());
        assert_eq!(ctx["sequence"], json!(i));
        let rebuilt = AgentContext::from_json(ctx.clone())
            .unwrap_or_else(|e| panic!("{point}: the rebuilt context is not a valid context: {e}"));
        assert_exact(&rebuilt.to_json(), &sent.to_json(), point);
        assert_exact(
            &ctx["target"],
            sent.target().unwrap(),
            &format!("{point} target"),
        );
    }
    assert!(records.session("fidelity").iter().all(|r| r.proceeds()));
}

/// Integers a service computes itself are exact at any size in the 64-bit
/// range: Python's ints, and the Node policy's bigints (the package reads
/// integers beyond 2^53 − 1 as bigints and writes them exactly).
pub async fn computed_integers(lang: Lang) {
    let service = Service::spawn(lang, &["--probes"]);
    let (host, _, _) = exact_host_with_passthrough(&service).await;
    let session = host.session("computed").unwrap();
    session.start(["echo"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let cases: [(Value, Value); 4] = [
        (
            json!(9_007_199_254_740_990_u64),
            json!(9_007_199_254_740_991_u64),
        ),
        (
            json!(9_007_199_254_740_991_u64),
            json!(9_007_199_254_740_992_u64),
        ),
        (json!(i64::MAX - 1), json!(i64::MAX)),
        (json!(u64::MAX - 1), json!(u64::MAX)),
    ];
    for (i, (counter, next)) in cases.into_iter().enumerate() {
        let call = ToolCall::new(format!("n{i}"), "echo", json!({"counter": counter}));
        let pre = session.pre_tool_call(&call).await.unwrap();
        assert_exact(pre.target().unwrap(), &call.args, "echoed counter");
        let result = ToolResult {
            value: json!("ok"),
            is_error: false,
        };
        let post = session.post_tool_call(&call, &result).await.unwrap();
        assert!(post.proceeds(), "{counter}: {:?}", post.verdict());
        assert_exact(
            &post.target().unwrap()["next"],
            &next,
            "computed counter + 1",
        );
    }
}
