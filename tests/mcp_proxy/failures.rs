//! The upstream failing under a call, with the official SDKs on both
//! sides: the server process dying in the middle of a call (Python and
//! TypeScript), a server answering a call with a result that is not a
//! tool result, and one that does not answer within `--call-timeout-ms`.
//! Each is a tool error to the client naming the failure, never a hang,
//! and leaves its trail: the call's `post_tool_call` emission says the
//! call failed, the session's end is recorded, and the records are the
//! emissions.

use hookwire::InterceptionPoint as P;
use serde_json::{Value, json};

use super::{
    Proxy, Upstream, assert_failure_recorded, assert_records_match, call, point_of,
    records_after_shutdown, upstream_calls,
};

/// Checks a tool result reporting an upstream failure and the failed
/// call's `post_tool_call` emission, and returns that emission's context.
fn check_failed_call(step: &Value, proxy: &Proxy, tool: &str, says: &str) -> Value {
    assert_eq!(step["is_error"], true, "{step}");
    let text = step["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("hookwire: the upstream"), "{step}");
    assert!(text.contains(says), "{step}");
    let seen = proxy.policy.seen();
    let post = seen
        .iter()
        .rev()
        .find(|s| s.point == P::PostToolCall && s.tool.as_deref() == Some(tool))
        .unwrap_or_else(|| panic!("no post_tool_call for the failed {tool}: {seen:#?}"));
    assert_eq!(
        post.context["tool_result"]["is_error"], true,
        "{}",
        post.context
    );
    post.context.clone()
}

/// The records of the proxy's one session once it has ended, checked
/// against the emissions, the failure (`what`) among them.
async fn ended(proxy: &Proxy, what: &str) -> Vec<Value> {
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &proxy.policy.seen());
    proxy.verify_records();
    assert_failure_recorded(&records, what);
    records
}

async fn upstream_dies_mid_call(upstream: Upstream) {
    let proxy = Proxy::new().await;
    let scenario = json!([
        call("echo", json!({"text": "before"})),
        call("crash", json!({})),
        call("echo", json!({"text": "after"})),
    ]);
    let out = proxy.stdio_client(&upstream, scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["text"], "before", "{out}");
    check_failed_call(&steps[1], &proxy, "crash", "upstream");
    // The session is gone with its server: a later call is a protocol
    // error (or a tool error), never a forwarded call.
    assert!(
        steps[2].get("error").is_some() || steps[2]["is_error"] == true,
        "{out}"
    );
    let calls: Vec<String> = upstream_calls(&proxy.calls)
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(calls, ["echo", "crash"]);
    let records = ended(&proxy, "the server dying mid-call").await;
    let shutdown = records.last().unwrap();
    assert_eq!(point_of(shutdown), "agent_shutdown");
    let last = proxy.policy.seen().last().cloned().unwrap();
    assert_eq!(
        last.context["summary"]["reason"], "error",
        "the session ended in error: {}",
        last.context
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_server_dying_mid_call_is_a_tool_error_and_ends_the_session() {
    upstream_dies_mid_call(Upstream::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_server_dying_mid_call_is_a_tool_error_and_ends_the_session() {
    upstream_dies_mid_call(Upstream::TypeScript).await;
}

async fn upstream_answers_garbage(upstream: Upstream) {
    let proxy = Proxy::new().await.arg(["--call-timeout-ms", "20000"]);
    let scenario = json!([call("garble", json!({})), {"op": "ping"}]);
    let out = proxy.stdio_client(&upstream, scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    let steps = out["steps"].as_array().unwrap();
    // The malformed result never reaches the client as a result.
    assert_ne!(steps[0]["text"], "not a list", "{out}");
    check_failed_call(&steps[0], &proxy, "garble", "upstream");
    let calls: Vec<String> = upstream_calls(&proxy.calls)
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(calls, ["garble"]);
    ended(&proxy, "a malformed result").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_result_from_the_python_server_is_a_tool_error() {
    upstream_answers_garbage(Upstream::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_result_from_the_typescript_server_is_a_tool_error() {
    upstream_answers_garbage(Upstream::TypeScript).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_past_the_call_timeout_is_a_tool_error_not_a_hang() {
    // Long enough for the server's start (the bound covers `initialize`
    // and the startup `tools/list` too), short beside the call.
    let proxy = Proxy::new().await.arg(["--call-timeout-ms", "8000"]);
    let scenario = json!([
        call("slow", json!({"seconds": 120})),
        call("echo", json!({"text": "still here"})),
    ]);
    let started = std::time::Instant::now();
    let out = proxy.stdio_client(&Upstream::Python, scenario).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the proxy waited for the silent server"
    );
    assert!(out.get("fatal").is_none(), "{out}");
    let steps = out["steps"].as_array().unwrap();
    check_failed_call(&steps[0], &proxy, "slow", "8000 ms");
    // A slow call does not end the session.
    assert_eq!(steps[1]["text"], "still here", "{out}");
    ended(&proxy, "the call timing out").await;
}
