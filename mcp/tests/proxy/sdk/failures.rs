//! The upstream failing under a call, with the official SDKs on both
//! sides: the server process dying in the middle of a call (Python and
//! TypeScript), a server answering a call with a result that is not a
//! tool result, and one that does not answer within `--call-timeout-ms`.
//! Each is a tool error to the client naming the failure, never a hang,
//! and leaves its trail: the host records the call's `post_tool_call` as a
//! `host_error` deny (no result to ask the chain about), the session's end
//! is recorded, and the records are the emissions.

use hookwire::InterceptionPoint as P;
use serde_json::{Value, json};

use super::{
    Proxy, Upstream, assert_failure_recorded, assert_records_match, call, host_decided, point_of,
    records_after_shutdown, upstream_calls,
};

/// Checks a tool result reporting an upstream failure.
fn check_failed_step(step: &Value, says: &str) {
    assert_eq!(step["is_error"], true, "{step}");
    let text = step["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("hookwire: the upstream"), "{step}");
    assert!(text.contains(says), "{step}");
}

/// The records of the proxy's one session once it has ended, checked
/// against the emissions: the failed call of `tool` has its
/// `post_tool_call` recorded by the host as a `host_error` deny, without
/// the policy being asked about a result there is none of.
async fn ended(proxy: &Proxy, tool: &str) -> Vec<Value> {
    let records = records_after_shutdown(&proxy.records).await;
    let seen = proxy.policy.seen();
    assert_records_match(&records, &seen);
    proxy.verify_records();
    assert_failure_recorded(&records, tool);
    let failed = records
        .iter()
        .find(|r| point_of(r) == "post_tool_call" && host_decided(r))
        .unwrap_or_else(|| panic!("no host-decided post_tool_call: {records:#?}"));
    assert_eq!(failed["verdict"]["decision"], "deny", "{failed:#}");
    assert!(
        !seen
            .iter()
            .any(|s| s.point == P::PostToolCall && s.tool.as_deref() == Some(tool)),
        "the policy was asked about a result there is none of: {seen:#?}"
    );
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
    check_failed_step(&steps[1], "upstream");
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
    let records = ended(&proxy, "crash").await;
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
    check_failed_step(&steps[0], "upstream");
    let calls: Vec<String> = upstream_calls(&proxy.calls)
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(calls, ["garble"]);
    ended(&proxy, "garble").await;
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
    check_failed_step(&steps[0], "8000 ms");
    // A slow call does not end the session.
    assert_eq!(steps[1]["text"], "still here", "{out}");
    ended(&proxy, "slow").await;
}
