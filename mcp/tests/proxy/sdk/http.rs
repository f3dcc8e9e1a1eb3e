//! The proxy on Streamable HTTP (`--listen`), its clients authenticated
//! by bearer tokens kept as hashes: the Python SDK's client over
//! `streamable_http_client` governed as over stdio, in front of the Python
//! server over stdio and over Streamable HTTP (`--upstream URL`); a client
//! without a token or with an unknown one is refused before any session
//! exists; another client presenting a session's id is refused that
//! session, which goes on untouched; a server opening its SSE answers
//! with priming events (as rmcp's does by default) is understood.

use serde_json::json;

use super::governed::{check_governed, check_records, scenario};
use super::proxy::{HttpUpstream, token};
use super::{Proxy, Upstream, call, records_after_shutdown, upstream_calls};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_over_http_is_governed_in_front_of_the_stdio_server() {
    let proxy = Proxy::new().await;
    let listening = proxy.listen(&Upstream::Python).await;
    let out = listening.client(Some(token("alice")), scenario()).await;
    assert!(out.get("fatal").is_none(), "{out}\n{}", listening.log());
    assert!(out["session_id"].is_string(), "Mcp-Session-Id: {out}");
    check_governed(&out, &proxy, true);
    // The SDK's DELETE on close ends the session.
    check_records(&proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_over_http_is_governed_in_front_of_the_http_server() {
    let proxy = Proxy::new().await;
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let listening = proxy.listen(&upstream.upstream()).await;
    let out = listening.client(Some(token("alice")), scenario()).await;
    assert!(out.get("fatal").is_none(), "{out}\n{}", listening.log());
    check_governed(&out, &proxy, true);
    check_records(&proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_over_stdio_is_governed_in_front_of_the_http_server() {
    let proxy = Proxy::new().await;
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let out = proxy.stdio_client(&upstream.upstream(), scenario()).await;
    check_governed(&out, &proxy, true);
    check_records(&proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_priming_its_sse_answers_is_understood() {
    // Streamable HTTP servers SHOULD open an SSE answer with a priming
    // event (an id, empty data) so that clients can resume; the official
    // SDKs' clients skip it, and so must the proxy.
    let proxy = Proxy::new().await;
    let upstream = HttpUpstream::priming(&proxy.calls).await;
    let scenario = json!([
        call("echo", json!({"text": "primed"})),
        call("delete_file", json!({"path": "/srv/data/precious.db"})),
    ]);
    let out = proxy.stdio_client(&upstream.upstream(), scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    assert_eq!(out["steps"][0]["text"], "primed", "{out}");
    assert_eq!(out["steps"][1]["is_error"], true, "{out}");
    assert_eq!(
        upstream_calls(&proxy.calls),
        [("echo".to_owned(), json!({"text": "primed"}))]
    );
    let records = records_after_shutdown(&proxy.records).await;
    super::assert_records_match(&records, &proxy.policy.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_a_known_token_are_refused_before_any_session() {
    let proxy = Proxy::new().await;
    let listening = proxy.listen(&Upstream::Python).await;
    let steps = json!([call("echo", json!({"text": "hi"}))]);
    for presented in [None, Some("hwm_test_mallory_0123456789abcdef0123456789ab")] {
        let out = listening.client(presented, steps.clone()).await;
        let fatal = out["fatal"]
            .as_str()
            .unwrap_or_else(|| panic!("initialized without a valid token: {out}"));
        // The SDK reports the 401's JSON-RPC error body.
        assert!(fatal.contains("unauthorized"), "{out}");
        assert!(out["steps"].as_array().unwrap().is_empty(), "{out}");
    }
    // Refused before the policy or the server saw anything; no session,
    // no record, and no token in the log.
    assert!(proxy.policy.seen().is_empty());
    assert!(upstream_calls(&proxy.calls).is_empty());
    assert!(super::read_records(&proxy.records).is_empty());
    let log = listening.log();
    assert!(!log.contains("hwm_test_"), "a token was logged: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_is_refused_a_session_it_does_not_own() {
    let proxy = Proxy::new().await;
    let listening = proxy.listen(&Upstream::Python).await;
    let hijack = json!({"jsonrpc": "2.0", "id": 9001, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "bob was here"}}})
    .to_string();
    let scenario = json!([
        call("echo", json!({"text": "alice's"})),
        // Bob, authenticated, with Alice's Mcp-Session-Id.
        {"op": "raw", "body": hijack, "token": token("bob")},
        // Bob without a session id at all: not an initialize.
        {"op": "raw", "body": hijack, "token": token("bob"), "session": false},
        call("echo", json!({"text": "still alice's"})),
    ]);
    let out = listening.client(Some(token("alice")), scenario).await;
    assert!(out.get("fatal").is_none(), "{out}\n{}", listening.log());
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["text"], "alice's", "{out}");
    assert_eq!(steps[1]["status"], 403, "{out}");
    assert!(
        !steps[1]["body"].as_str().unwrap().contains("bob was here"),
        "{out}"
    );
    assert_eq!(steps[2]["status"], 400, "{out}");
    assert_eq!(
        steps[3]["text"], "still alice's",
        "the session is untouched: {out}"
    );
    let texts: Vec<String> = upstream_calls(&proxy.calls)
        .into_iter()
        .map(|(_, a)| a["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts,
        ["alice's", "still alice's"],
        "bob's call never reached the server"
    );
    // One session, Alice's; Bob's attempts emitted nothing.
    let records = records_after_shutdown(&proxy.records).await;
    let seen = proxy.policy.seen();
    super::assert_records_match(&records, &seen);
    assert_eq!(
        seen.iter()
            .filter(|s| s.tool.as_deref() == Some("echo"))
            .count(),
        4,
        "two calls, pre and post each: {seen:#?}"
    );
}
