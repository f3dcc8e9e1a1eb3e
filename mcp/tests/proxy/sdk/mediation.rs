//! Complete mediation: what used to pass around the chain. An upstream
//! JSON-RPC error to a call is a result `post_tool_call` governs (message
//! and data), and its rewrite is what the client receives; a deny's
//! message reaches the client; a task-augmented call runs as a governed
//! plain call while `tasks/*` and the tasks capability never reach the
//! client; only protocol versions the proxy mediates are negotiated
//! (each connect mode of the official SDK: `stateless`).

use hookwire::InterceptionPoint as P;
use serde_json::{Value, json};

use super::malformed::Raw;
use super::{
    Proxy, SECRET, Upstream, WAIT, assert_records_match, call, point_of, records_after_shutdown,
    upstream_calls,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_error_passes_post_tool_call_and_the_client_gets_its_rewrite() {
    let proxy = Proxy::new().await;
    let scenario = json!([
        call("leak_error", json!({})),
        call("delete_file", json!({"path": "/srv/data/precious.db"})),
    ]);
    let out = proxy.stdio_client(&Upstream::Python, scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    let steps = out["steps"].as_array().unwrap();
    // The error's message and data held the key; the client gets the
    // redacted blocks as a tool error, never the raw error.
    assert!(
        !out.to_string().contains(SECRET),
        "the key reached the client: {out}"
    );
    assert_eq!(steps[0]["is_error"], true, "{out}");
    let text = steps[0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("hookwire: the upstream answered tools/call with a JSON-RPC error"),
        "{out}"
    );
    assert!(
        text.contains("api_key=[redacted]"),
        "the message, rewritten: {out}"
    );
    assert!(
        text.contains(r#"{"api_key":"[redacted]"}"#),
        "the data, rewritten: {out}"
    );
    // A deny's message reaches the client beside its reason.
    assert_eq!(steps[1]["is_error"], true, "{out}");
    let denied = steps[1]["text"].as_str().unwrap_or_default();
    assert!(denied.contains("policy:destructive_tool"), "{out}");
    assert!(
        denied.contains("files are not deleted through this server"),
        "the deny's message: {out}"
    );

    let seen = proxy.policy.seen();
    let post = seen
        .iter()
        .find(|s| s.point == P::PostToolCall && s.tool.as_deref() == Some("leak_error"))
        .unwrap_or_else(|| panic!("no post_tool_call for the error: {seen:#?}"));
    let value = post.context["tool_result"]["value"].to_string();
    assert!(
        value.contains("config backend refused"),
        "message seen: {value}"
    );
    assert!(value.contains("api_key"), "data seen: {value}");
    assert_eq!(post.context["tool_result"]["is_error"], true);
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &seen);
    let post_record = records
        .iter()
        .find(|r| point_of(r) == "post_tool_call")
        .unwrap();
    assert_eq!(post_record["verdict"]["decision"], "transform");
    assert!(!records.iter().any(|r| r.to_string().contains(SECRET)));
}

/// Sends a request on `raw` and returns its answer.
async fn ask(raw: &mut Raw, id: u64, method: &str, params: Value) -> Value {
    raw.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
        .await;
    let answer = raw.response().await;
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_augmented_call_runs_governed_and_tasks_never_reach_the_client() {
    // The TypeScript SDK's server offers tasks; a client asking for a task
    // would get the result through tasks/result, which no point sees.
    let proxy = Proxy::new().await;
    let mut raw = Raw::spawn_before(&proxy, &Upstream::TypeScriptTasks);
    let init = ask(
        &mut raw,
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
               "capabilities": {"tasks": {"list": {}, "requests": {"sampling": {"createMessage": {}}}}},
               "clientInfo": {"name": "raw", "version": "0"}}),
    )
    .await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "the tasks capability is offered: {init}"
    );
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    let mut answers = Vec::new();
    let called = ask(
        &mut raw,
        2,
        "tools/call",
        json!({"name": "read_config", "arguments": {}, "task": {"ttl": 60000}}),
    )
    .await;
    answers.push(called.clone());
    // Whatever task ids the client can learn, it gets no result by them.
    let listed = ask(&mut raw, 3, "tasks/list", json!({})).await;
    answers.push(listed.clone());
    let mut ids: Vec<String> = listed["result"]["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["taskId"].as_str().map(str::to_owned))
        .collect();
    ids.push("no-such-task".into());
    for (n, task) in ids.iter().enumerate() {
        let got = ask(
            &mut raw,
            10 + n as u64,
            "tasks/result",
            json!({"taskId": task}),
        )
        .await;
        answers.push(got);
    }
    let all = Value::Array(answers).to_string();
    assert!(!all.contains(SECRET), "the key reached the client: {all}");
    // The call ran as a plain one, governed: its result is the rewritten one.
    assert_eq!(
        called["result"]["content"][0]["text"],
        "endpoint=https://api.example.test api_key=[redacted]",
        "{called}"
    );
    assert!(called["result"].get("task").is_none(), "{called}");
    assert_eq!(listed["error"]["code"], -32601, "{listed}");

    drop(raw.stdin);
    let _ = tokio::time::timeout(WAIT, raw.child.wait()).await;
    assert_eq!(
        upstream_calls(&proxy.calls),
        [("read_config".to_owned(), json!({}))]
    );
    let records = records_after_shutdown(&proxy.records).await;
    let seen = proxy.policy.seen();
    assert_records_match(&records, &seen);
    let points: Vec<&str> = records.iter().map(point_of).collect();
    assert_eq!(
        points,
        [
            "agent_startup",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );
    assert_eq!(records[2]["verdict"]["decision"], "transform");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_versions_the_proxy_mediates_are_negotiated() {
    let proxy = Proxy::new().await;
    let mut raw = Raw::spawn(&proxy);
    // A stateless request naming a version nobody speaks: the
    // 2026-07-28 error, listing what the proxy speaks.
    let discover = ask(
        &mut raw,
        1,
        "server/discover",
        json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}),
    )
    .await;
    assert_eq!(discover["error"]["code"], -32022, "{discover}");
    assert_eq!(
        discover["error"]["data"]["requested"], "2099-01-01",
        "{discover}"
    );
    let supported = discover["error"]["data"]["supported"].clone();
    assert!(
        supported.as_array().unwrap().contains(&json!("2025-11-25")),
        "{discover}"
    );
    // An unknown version is answered with the lifecycle's error and the
    // same list, not forwarded with the upstream's answer claimed.
    let init = |id: u64, version: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string()
    };
    raw.send(&init(2, "2099-01-01")).await;
    let refused = raw.response().await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["message"], "Unsupported protocol version");
    assert_eq!(refused["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(refused["error"]["data"]["supported"], supported);
    // The client may then pick one from the list.
    raw.send(&init(3, "2025-06-18")).await;
    let ok = raw.response().await;
    assert_eq!(ok["result"]["protocolVersion"], "2025-06-18", "{ok}");
    drop(raw.stdin);
    let _ = tokio::time::timeout(WAIT, raw.child.wait()).await;
    // One session start, for the version that was negotiated.
    let records = records_after_shutdown(&proxy.records).await;
    assert_eq!(
        records
            .iter()
            .filter(|r| point_of(r) == "agent_startup")
            .count(),
        1
    );
}
