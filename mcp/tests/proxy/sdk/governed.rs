//! The governed session over stdio, as an MCP client that launches its
//! servers runs it with `hookwire mcp` in their place: the Python SDK's
//! client in front of the Python SDK's server and of the TypeScript SDK's.
//! A destructive call is denied and never reaches the server, an echoed
//! email address is masked in the arguments the server receives, an API
//! key in a result is replaced before the client sees it, the hidden tool
//! is neither listed nor callable, and the signed records are exactly the
//! emissions.

use hookwire::InterceptionPoint as P;
use serde_json::{Value, json};

use super::{
    HIDDEN, Proxy, SECRET, Upstream, assert_denied, assert_records_match, call, point_of,
    reason_of, records_after_shutdown, upstream_calls,
};

/// The scenario both upstreams run, and what it must show.
pub(crate) fn scenario() -> Value {
    json!([
        {"op": "list_tools"},
        call("delete_file", json!({"path": "/srv/data/precious.db"})),
        call("echo", json!({"text": "mail ann@example.com today"})),
        call("read_config", json!({})),
        call(HIDDEN, json!({})),
        call("echo", json!({"text": "plain"})),
        {"op": "ping"},
    ])
}

/// Checks what the client got for [`scenario`] and what the server
/// received; `structured`: the server sends `structuredContent` (the
/// Python SDK's does, for its tools' output schemas).
pub(crate) fn check_governed(out: &Value, proxy: &Proxy, structured: bool) {
    assert!(out.get("fatal").is_none(), "{out}");
    let steps = out["steps"].as_array().unwrap();
    let tools: Vec<&str> = steps[0]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list failed: {out}"))
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"delete_file") && tools.contains(&"echo"),
        "{out}"
    );
    assert!(!tools.contains(&HIDDEN), "the hidden tool is listed: {out}");

    assert_denied(&steps[1], "policy:destructive_tool", "precious.db");
    // The deny's message reaches the model, so that it can correct itself.
    assert!(
        steps[1]["text"]
            .as_str()
            .unwrap()
            .contains("files are not deleted through this server"),
        "{out}"
    );
    assert_eq!(steps[2]["is_error"], false, "{out}");
    assert_eq!(steps[2]["text"], "mail [email] today", "{out}");
    // A rewritten result whose structuredContent the rewrite cannot reach
    // is an error result (exempt from the output schema) carrying the
    // rewritten text after the proxy's note; otherwise a plain result.
    let config = steps[3]["text"].as_str().unwrap();
    assert_eq!(steps[3]["is_error"], structured, "{out}");
    if structured {
        assert!(
            config.starts_with("hookwire: this result was rewritten at post_tool_call"),
            "{out}"
        );
    }
    assert!(config.contains("api_key=[redacted]"), "{out}");
    assert!(
        !steps[3].to_string().contains(SECRET),
        "the key reached the client (text or structuredContent): {out}"
    );
    assert_eq!(steps[4]["is_error"], true, "{out}");
    assert!(
        steps[4]["text"].as_str().unwrap().contains("not available"),
        "{out}"
    );
    assert_eq!(steps[5]["text"], "plain", "{out}");
    assert_eq!(steps[6]["ok"], true, "ping is relayed: {out}");

    // The server received exactly the permitted calls, the rewritten
    // arguments among them.
    let received = upstream_calls(&proxy.calls);
    assert_eq!(
        received,
        [
            ("echo".to_owned(), json!({"text": "mail [email] today"})),
            ("read_config".to_owned(), json!({})),
            ("echo".to_owned(), json!({"text": "plain"})),
        ],
        "what reached the server"
    );
}

/// Checks the emissions and records of [`scenario`]'s one session.
pub(crate) async fn check_records(proxy: &Proxy) {
    let records = records_after_shutdown(&proxy.records).await;
    let seen = proxy.policy.seen();
    assert_records_match(&records, &seen);
    // The hidden tool's call never reaches the policy: the proxy's own
    // binding, first in the chain, refuses it.
    let points: Vec<P> = seen.iter().map(|s| s.point).collect();
    assert_eq!(
        points,
        [
            P::AgentStartup,
            P::PreToolCall, // delete_file: denied
            P::PreToolCall, // echo: transformed
            P::PostToolCall,
            P::PreToolCall,  // read_config
            P::PostToolCall, // the key replaced
            P::PreToolCall,  // echo
            P::PostToolCall,
            P::AgentShutdown,
        ],
        "{seen:#?}"
    );
    // agent_startup registered the server's tools, the hidden one included.
    let registered = &seen[0].context["agent_init"]["tools_registered"];
    let names: Vec<&str> = registered
        .as_array()
        .unwrap_or_else(|| panic!("no tools_registered: {}", seen[0].context))
        .iter()
        .filter_map(|t| t.as_str().or_else(|| t["name"].as_str()))
        .collect();
    assert!(
        names.contains(&"delete_file") && names.contains(&"echo"),
        "{registered}"
    );
    assert_eq!(seen[1].tool.as_deref(), Some("delete_file"));
    assert_eq!(
        seen[1].target,
        Some(json!({"path": "/srv/data/precious.db"}))
    );
    assert_eq!(reason_of(&records[1]), Some("policy:destructive_tool"));
    assert_eq!(records[1]["verdict"]["decision"], "deny");
    assert_eq!(records[2]["verdict"]["decision"], "transform");
    assert_eq!(records[5]["verdict"]["decision"], "transform");
    // The post_tool_call of read_config saw the key (and replaced it).
    assert!(seen[5].context.to_string().contains(SECRET));
    assert!(seen.iter().all(|s| s.tool.as_deref() != Some(HIDDEN)));
    assert_eq!(point_of(&records[6]), "pre_tool_call");
    assert_eq!(reason_of(&records[6]), Some("mcp:tool_hidden"));
    // The hidden call's record says what the client got: a deny.
    assert_eq!(
        records[6]["verdict"]["decision"], "deny",
        "the record of the refused hidden call: {:#}",
        records[6]
    );
    // Payload-free records: the key is in none.
    assert!(!records.iter().any(|r| r.to_string().contains(SECRET)));
    proxy.verify_records();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_over_stdio_is_governed_in_front_of_the_python_server() {
    let proxy = Proxy::new().await;
    let out = proxy.stdio_client(&Upstream::Python, scenario()).await;
    assert_eq!(out["server_name"], "hookwire-test-upstream", "{out}");
    check_governed(&out, &proxy, true);
    check_records(&proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_over_stdio_is_governed_in_front_of_the_typescript_server() {
    let proxy = Proxy::new().await;
    let out = proxy.stdio_client(&Upstream::TypeScript, scenario()).await;
    assert_eq!(out["server_name"], "hookwire-test-upstream-ts", "{out}");
    check_governed(&out, &proxy, false);
    check_records(&proxy).await;
}
