//! The stdio downstream: governed calls, relays, refusals, a crashing,
//! a garbling and a silent server, a cancelled call.

use super::*;

#[test]
fn stdio_governs_every_tool_call_and_relays_the_rest() {
    let mut p = StdioProxy::start(
        &["--hide-tool", "big", "--max-message-bytes", "4096"],
        &StdioProxy::stdio_upstream(),
    );
    let init = p.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture", "{init}");
    let seen = init["result"]["instructions"].as_str().unwrap();
    assert!(
        !seen.contains("sampling") && !seen.contains("elicitation") && seen.contains("roots"),
        "{seen}"
    );

    let tools = p.call(1, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && !names.contains(&"big"),
        "{names:?}"
    );

    let echo = p.tool(2, "echo", json!({"text": "to ann@example.com"}));
    assert_eq!(
        text_of(&echo),
        r#"{"text": "to [email]"}"#,
        "the arguments were rewritten"
    );

    let delete = p.tool(3, "delete_all", json!({}));
    assert_eq!(delete["result"]["isError"], true);
    assert!(
        text_of(&delete).starts_with("hookwire: denied at pre_tool_call: "),
        "{delete}"
    );
    assert_eq!(
        p.upstream_calls(),
        0,
        "a denied call never reaches the server"
    );

    let secret = p.tool(4, "secret", json!({}));
    assert_eq!(text_of(&secret), "api_key=[redacted] ok");

    let hidden = p.tool(5, "big", json!({"size": 10}));
    assert_eq!(hidden["result"]["isError"], true);
    assert!(
        text_of(&hidden).contains("\"big\" is not available"),
        "{hidden}"
    );

    let resources = p.call(6, "resources/list", json!({}));
    assert_eq!(
        resources["result"]["resources"][0]["uri"],
        "file:///fixture.txt"
    );

    p.send_raw("this is not json");
    let m = p.recv();
    assert_eq!(
        (m["id"].clone(), m["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    p.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5000)
    ));
    let m = p.recv();
    assert_eq!(m["error"]["code"], -32600, "{m}");
    let bad = p.call(8, "tools/call", json!({"name": "echo", "arguments": [1]}));
    assert_eq!(bad["error"]["code"], -32602);
    let pong = p.call(9, "ping", json!({}));
    assert_eq!(pong["result"], json!({}));

    let records = p.finish();
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "post_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "pre_tool_call",
            "agent_shutdown"
        ],
        "one record per emission"
    );
    assert_eq!(records[3]["verdict"]["decision"], "deny", "{}", records[3]);
    assert_eq!(
        records[6]["verdict"]["reason"], "mcp:tool_hidden",
        "the hidden call is a recorded deny"
    );
    let session = &records[0]["session_id"];
    assert!(records.iter().all(|r| r["session_id"] == *session));
}

#[test]
fn a_crashing_or_garbling_server_fails_closed_with_records() {
    for (tool, says) in [("crash", "exited"), ("garbage", "malformed")] {
        let mut p = StdioProxy::start(&[], &StdioProxy::stdio_upstream());
        p.initialize();
        let a = p.tool(1, tool, json!({}));
        assert_eq!(a["result"]["isError"], true, "{a}");
        assert!(text_of(&a).contains(says), "{tool}: {a}");
        let later = p.tool(2, "echo", json!({"text": "hi"}));
        assert_eq!(later["error"]["code"], -32000, "{later}");
        let records = p.finish();
        assert_eq!(
            points(&records),
            [
                "agent_startup",
                "pre_tool_call",
                "post_tool_call",
                "agent_shutdown"
            ],
            "{tool}"
        );
        assert_eq!(
            records[2]["verdict"]["reason"], "host_error:context_invalid",
            "{tool}: {}",
            records[2]
        );
        assert!(
            records[2]["verdict"]["message"]
                .as_str()
                .unwrap()
                .contains(says),
            "{}",
            records[2]
        );
    }
}

#[test]
fn a_silent_server_times_out_and_a_cancelled_call_gets_no_answer() {
    // Long enough for the server to start and list its tools under load.
    let mut p = StdioProxy::start(
        &["--call-timeout-ms", "4000"],
        &StdioProxy::stdio_upstream(),
    );
    let init = p.initialize();
    assert!(init["result"].is_object(), "{init}");
    let silent = p.tool(1, "hang", json!({}));
    assert_eq!(silent["result"]["isError"], true, "{silent}");
    assert!(
        text_of(&silent).contains("did not answer within 4000 ms"),
        "{silent}"
    );
    p.send_raw(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}).to_string());
    p.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}}).to_string());
    let pong = p.call(3, "ping", json!({}));
    assert_eq!(pong["result"], json!({}));
    let (out, records) = {
        let out_rx = std::mem::replace(&mut p.out, mpsc::channel().1);
        let records = p.finish();
        (out_rx.iter().collect::<Vec<_>>(), records)
    };
    assert!(
        out.iter()
            .all(|l| serde_json::from_str::<Value>(l).unwrap()["id"] != 2),
        "a cancelled request is not answered: {out:?}"
    );
    let all = points(&records);
    assert_eq!(
        all[..3],
        ["agent_startup", "pre_tool_call", "post_tool_call"],
        "{all:?}"
    );
    assert_eq!(
        records[2]["verdict"]["reason"], "host_error:context_invalid",
        "the silent server: {}",
        records[2]
    );
    // Cancelled while its pre_tool_call was pending: the host's
    // cancellation record; at the upstream: the pair closed by an error
    // post_tool_call.
    match &all[3..] {
        ["pre_tool_call", "agent_shutdown"] => {
            assert_eq!(
                records[3]["verdict"]["reason"],
                "host_error:interceptor_failed"
            );
            assert!(
                records[3]["verdict"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("cancelled"),
                "{}",
                records[3]
            );
        }
        ["pre_tool_call", "post_tool_call", "agent_shutdown"] => {
            assert_eq!(
                records[4]["verdict"]["reason"], "host_error:context_invalid",
                "{}",
                records[4]
            );
        }
        other => panic!("the cancelled call's records: {other:?}"),
    }
}

#[test]
fn server_requests_are_relayed_to_the_client_or_refused() {
    let mut p = StdioProxy::start(&[], &StdioProxy::stdio_upstream());
    p.initialize();
    p.send_raw(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_client", "arguments": {}}})
            .to_string(),
    );
    let asked = p.recv();
    assert_eq!(asked["method"], "roots/list", "{asked}");
    assert!(asked["id"].is_i64(), "the proxy's own id: {asked}");
    p.send_raw(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///work"}]}})
            .to_string(),
    );
    let answer = p.recv();
    assert_eq!(
        answer["id"], 1,
        "sampling never reaches the client: {answer}"
    );
    let seen: Value = serde_json::from_str(text_of(&answer)).unwrap();
    assert_eq!(seen["roots"], json!({"roots": [{"uri": "file:///work"}]}));
    assert_eq!(seen["sampling"]["code"], -32601);
    assert!(
        seen["sampling"]["message"]
            .as_str()
            .unwrap()
            .starts_with("refused by hookwire mcp: sampling"),
        "{seen}"
    );
    let records = p.finish();
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );
}

#[test]
fn a_tools_call_sent_as_a_notification_never_reaches_the_server() {
    // A call without an id would act at the server with no pre_tool_call
    // and no answer to carry a verdict: it is not relayed, whatever the
    // tool (the fixture acts on it, as a lenient server would).
    let mut p = StdioProxy::start(&[], &StdioProxy::stdio_upstream());
    p.initialize();
    p.send_raw(
        &json!({"jsonrpc": "2.0", "method": "tools/call",
                "params": {"name": "delete_all", "arguments": {}}})
        .to_string(),
    );
    // An unknown notification is not relayed either; a known inert one is.
    p.send_raw(r#"{"jsonrpc":"2.0","method":"vendor/act_now","params":{}}"#);
    p.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    // The server reads in order: once it answered this ping, it would have
    // acted on the call before.
    let pong = p.call(1, "ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert_eq!(
        p.upstream_calls(),
        0,
        "the notification tools/call reached the server"
    );
    // A notification gets no answer, not even a refusal.
    let records = p.finish();
    assert_eq!(
        points(&records),
        ["agent_startup", "agent_shutdown"],
        "nothing was emitted for it"
    );
}
