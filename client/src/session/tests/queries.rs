//! The state queries, the `*_with` variants of the typed emissions and
//! sessions without turns:
//! what a caller mapping another protocol onto the points asks the
//! session instead of keeping its own copy.

use hookwire::{InterceptionPoint, Verdict};
use serde_json::{Map, json};

use super::{deny_tools, out_of_order};
use crate::{
    BoxError, Host, InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult, interceptor_fn,
};

#[tokio::test]
async fn state_queries_follow_the_lifecycle_and_the_turn() {
    let session = deny_tools().session("q").unwrap();
    assert!(!session.is_started());
    assert!(!session.is_closed());
    assert!(!session.is_turn_open());
    session.start(["ls", "rm"]).await.unwrap();
    assert!(session.is_started());
    assert_eq!(session.startup_denial(), None);
    session.input(json!("go"), InputRole::User).await.unwrap();
    assert!(session.is_turn_open());
    session.end_turn();
    assert!(!session.is_turn_open());
    session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert!(session.is_closed());
}

#[tokio::test]
async fn a_denied_startup_is_queryable_with_its_reason() {
    let deny = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("test:no_start")) });
    let host = Host::builder("agent", "hookwire")
        .interceptor("deny", deny)
        .build()
        .unwrap();
    let session = host.session("d").unwrap();
    let e = session.start(Vec::<String>::new()).await.unwrap();
    assert!(!e.proceeds());
    assert!(session.is_started());
    assert_eq!(session.startup_denial().as_deref(), Some("test:no_start"));
    assert!(!session.is_closed());
}

#[tokio::test]
async fn an_open_tool_call_is_the_permitted_one_with_its_governed_arguments() {
    // Rewrites `ls`'s arguments, denies `rm`.
    let policy = interceptor_fn(|ctx: hookwire::AgentContext| {
        let name = ctx
            .get("tool_call")
            .and_then(|c| c.get("name"))
            .cloned()
            .unwrap_or_default();
        let point = ctx.point();
        async move {
            Ok::<_, BoxError>(match (point, name.as_str()) {
                (InterceptionPoint::PreToolCall, Some("rm")) => Verdict::deny("test:rm"),
                (InterceptionPoint::PreToolCall, Some("ls")) => {
                    Verdict::transform("$target.path", json!("/safe"))
                }
                _ => Verdict::allow(),
            })
        }
    });
    let host = Host::builder("agent", "hookwire")
        .interceptor("policy", policy)
        .build()
        .unwrap();
    let forgetful = host.session("f").unwrap();
    forgetful.start(["ls"]).await.unwrap();
    forgetful.input(json!("go"), InputRole::User).await.unwrap();
    let call = ToolCall::new("c1", "ls", json!({"path": "/"}));
    assert!(forgetful.pre_tool_call(&call).await.unwrap().proceeds());
    assert_eq!(
        forgetful.open_tool_call("c1"),
        None,
        "a session that does not remember calls keeps ids only"
    );
    let session = host.session_builder("t").remember_calls().open().unwrap();
    session.start(["ls", "rm"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let ls = ToolCall::new("c1", "ls", json!({"path": "/"}));
    let rm = ToolCall::new("c2", "rm", json!({}));
    assert_eq!(session.open_tool_call("c1"), None, "nothing before its pre");
    session.pre_tool_call(&ls).await.unwrap();
    session.pre_tool_call(&rm).await.unwrap();
    assert_eq!(
        session.open_tool_call("c1"),
        Some(ToolCall::new("c1", "ls", json!({"path": "/safe"})))
    );
    assert_eq!(
        session.open_tool_call("c2"),
        None,
        "a blocked call is not open"
    );
    let result = ToolResult {
        value: json!("out"),
        is_error: false,
    };
    let call = session.open_tool_call("c1").unwrap();
    session.post_tool_call(&call, &result).await.unwrap();
    assert_eq!(session.open_tool_call("c1"), None, "its post closed it");
}

#[tokio::test]
async fn extra_members_reach_the_context_and_never_replace_the_points_own() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let spy = interceptor_fn(move |ctx: hookwire::AgentContext| {
        log.lock().unwrap().push((
            ctx.point(),
            ctx.get("request_id").cloned(),
            ctx.get("input").cloned(),
        ));
        async { Ok::<_, BoxError>(Verdict::allow()) }
    });
    let host = Host::builder("agent", "hookwire")
        .interceptor("spy", spy)
        .build()
        .unwrap();
    let session = host.session("x").unwrap();
    session.start(Vec::<String>::new()).await.unwrap();
    let mut extra = Map::new();
    extra.insert("input".into(), json!({"content": "forged", "role": "user"}));
    session
        .input_with(json!("real"), InputRole::User, extra)
        .await
        .unwrap();
    let mut rid = Map::new();
    rid.insert("request_id".into(), json!("r1"));
    session
        .pre_model_call_with("m", json!([]), rid.clone())
        .await
        .unwrap();
    let response = ModelResponse {
        content: json!("hi"),
        tool_calls: Vec::new(),
        finish_reason: "stop".into(),
    };
    session
        .post_model_call_with("m", &response, rid)
        .await
        .unwrap();
    // Still enforced: a second post for r1 has no open pre.
    let mut rid = Map::new();
    rid.insert("request_id".into(), json!("r1"));
    let err = session
        .post_model_call_with("m", &response, rid)
        .await
        .unwrap_err();
    out_of_order(&err, InterceptionPoint::PostModelCall);
    let decision = session.output_with(json!("hi"), Map::new()).await.unwrap();
    assert_eq!(decision.release().unwrap(), json!("hi"));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[1].2, Some(json!({"content": "real", "role": "user"})));
    assert_eq!(seen[2].1, Some(json!("r1")));
    assert_eq!(seen[3].1, Some(json!("r1")));
}

#[tokio::test]
async fn a_tool_calls_only_session_checks_its_pairs_without_turns() {
    let session = deny_tools()
        .session_builder("mcp")
        .tool_calls_only()
        .open()
        .unwrap();
    session.start(["ls", "rm"]).await.unwrap();
    let ls = ToolCall::new("1", "ls", json!({}));
    let rm = ToolCall::new("2", "rm", json!({}));
    let ok = ToolResult {
        value: json!("out"),
        is_error: false,
    };
    // No input opens a turn, yet the pre is admitted.
    assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
    let err = session.pre_tool_call(&ls).await.unwrap_err();
    assert!(out_of_order(&err, InterceptionPoint::PreToolCall).contains("already has"));
    session.post_tool_call(&ls, &ok).await.unwrap();
    let err = session.post_tool_call(&ls, &ok).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostToolCall);
    assert!(!session.pre_tool_call(&rm).await.unwrap().proceeds());
    let err = session.post_tool_call(&rm, &ok).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostToolCall);
    // The turn points are not this session's.
    let err = session
        .input(json!("go"), InputRole::User)
        .await
        .unwrap_err();
    assert!(out_of_order(&err, InterceptionPoint::Input).contains("tool_calls_only"));
    let err = session.output(json!("done")).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::Output);
    let err = session.pre_model_call("m", json!([])).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PreModelCall);
    session.shutdown(ShutdownReason::Completed).await.unwrap();
}

#[tokio::test]
async fn segments_keep_their_model_call_open_until_the_last() {
    let session = deny_tools().session("seg").unwrap();
    session.start(["ls"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    session.pre_model_call("m", json!([])).await.unwrap();
    let chunk = |text: &str| ModelResponse {
        content: json!(text),
        tool_calls: Vec::new(),
        finish_reason: String::new(),
    };
    for (text, last) in [("a", false), ("b", false), ("c", true)] {
        let e = session
            .post_model_call_segment_with("m", &chunk(text), Map::new(), last)
            .await
            .unwrap();
        assert!(e.proceeds());
    }
    let err = session
        .post_model_call_segment_with("m", &chunk("late"), Map::new(), false)
        .await
        .unwrap_err();
    out_of_order(&err, InterceptionPoint::PostModelCall);
}
