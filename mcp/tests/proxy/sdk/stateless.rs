//! The stateless revision (2026-07-28) on both sides of the proxy, with
//! the official Python SDK's `Client` in each connect mode (`legacy`,
//! `auto`, `2026-07-28`) over stdio and Streamable HTTP, in front of the
//! Python SDK's server (which speaks both revisions) and the TypeScript
//! SDK's (handshake only, so never spoken to statelessly). Each mode is
//! governed alike; a call waiting for an approver is parked and answered
//! `input_required` until it is decided, and its `requestState` is bound
//! to its caller and its arguments; what no SDK sends (headers that
//! disagree with the body, an unknown version) is refused. The official
//! TypeScript SDK's client (handshake only) is governed alike on both
//! transports.

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use hookwire_testkit::python_venv;

use super::approval::approver;
use super::proxy::{HttpUpstream, token};
use super::{
    MCP_SDK, Proxy, SECRET, Upstream, WAIT, assert_records_match, call, fixtures, point_of,
    records_after_shutdown, ts_upstream, upstream_calls,
};

const MODES: &str = "legacy,auto,2026-07-28";

/// Runs tests/fixtures/mcp/modes.py with `args`; one line per mode.
async fn modes(args: Vec<OsString>) -> Vec<Value> {
    let out = tokio::time::timeout(
        WAIT * 4,
        tokio::process::Command::new(python_venv(MCP_SDK))
            .arg(fixtures().join("modes.py"))
            .args(&args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("modes.py finishes")
    .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn scenario_args(modes: &str, scenario: &Value, max_rounds: u32) -> Vec<OsString> {
    vec![
        "--modes".into(),
        modes.into(),
        "--scenario".into(),
        scenario.to_string().into(),
        "--max-rounds".into(),
        max_rounds.to_string().into(),
    ]
}

/// The governed scenario every mode runs.
fn governed() -> Value {
    json!([
        {"op": "list_tools"},
        call("echo", json!({"text": "write to ann@example.com"})),
        call("delete_file", json!({"path": "/srv/data/precious.db"})),
        call("read_config", json!({})),
        call("leak_error", json!({})),
    ])
}

/// Checks one mode's line of the governed scenario.
fn assert_governed(line: &Value, version: &str) {
    assert_eq!(line["protocol_version"], version, "{line}");
    let steps = line["steps"].as_array().expect("steps");
    let tools = steps[0]["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("echo")), "{line}");
    assert!(!tools.contains(&json!("internal_debug")), "hidden: {line}");
    assert_eq!(steps[1]["text"], "write to [email]", "{line}");
    assert_eq!(steps[2]["is_error"], true, "{line}");
    assert!(
        steps[2]["text"]
            .as_str()
            .unwrap()
            .contains("files are not deleted through this server"),
        "the deny's message reaches the client: {line}"
    );
    assert!(
        steps[3]["text"].as_str().unwrap().contains("[redacted]"),
        "{line}"
    );
    assert!(
        steps[4]["text"].as_str().unwrap().contains("[redacted]"),
        "{line}"
    );
    assert!(!line.to_string().contains(SECRET), "the key leaked: {line}");
}

fn assert_upstream_saw_three_governed_runs(calls: &std::path::Path) {
    let calls = upstream_calls(calls);
    let once = [
        ("echo".to_owned(), json!({"text": "write to [email]"})),
        ("read_config".to_owned(), json!({})),
        ("leak_error".to_owned(), json!({})),
    ];
    assert_eq!(calls, [once.clone(), once.clone(), once].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connect_mode_over_stdio_is_governed_in_the_revision_it_speaks() {
    let proxy = Proxy::new().await;
    let mut args = scenario_args(MODES, &governed(), 10);
    args.push("--".into());
    args.extend(proxy.command(&[], &Upstream::Python));
    let lines = modes(args).await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_governed(&lines[0], "2025-11-25");
    // `auto` probes server/discover: the proxy speaks the new revision
    // when its upstream does.
    assert_governed(&lines[1], "2026-07-28");
    assert_governed(&lines[2], "2026-07-28");
    assert_upstream_saw_three_governed_runs(&proxy.calls);
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &proxy.policy.seen());
    proxy.verify_records();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connect_mode_over_http_is_governed_and_one_credential_is_one_session() {
    let proxy = Proxy::new().await;
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let listening = proxy.listen(&upstream.upstream()).await;
    let mut args = scenario_args(MODES, &governed(), 10);
    args.extend([
        "--url".into(),
        listening.url().into(),
        "--token".into(),
        token("alice").into(),
    ]);
    let lines = modes(args).await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_governed(&lines[0], "2025-11-25");
    assert_governed(&lines[1], "2026-07-28");
    assert_governed(&lines[2], "2026-07-28");
    assert_upstream_saw_three_governed_runs(&proxy.calls);
    // The handshake opened a session; both stateless runs, without any
    // session id, were alice's one stateless session.
    let seen = proxy.policy.seen();
    let sessions: std::collections::BTreeSet<&str> =
        seen.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let records = super::read_records(&proxy.records);
    assert_eq!(
        records
            .iter()
            .filter(|r| point_of(r) == "agent_startup")
            .count(),
        2,
        "{records:#?}"
    );
    assert!(
        !listening.log().contains(token("alice")),
        "no token in the log"
    );
}

/// Runs tests/fixtures/mcp/ts/client.mjs (the TypeScript SDK's client)
/// with `args`: its one line.
async fn ts_client(scenario: &Value, args: Vec<OsString>) -> Value {
    let out = tokio::time::timeout(
        WAIT * 2,
        tokio::process::Command::new("node")
            .arg(ts_upstream().with_file_name("client.mjs"))
            .args(
                ["--scenario".into(), scenario.to_string().into()]
                    .iter()
                    .chain(&args),
            )
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("client.mjs finishes")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// The TypeScript client's line of the governed scenario.
fn assert_ts_governed(line: &Value) {
    assert!(line.get("fatal").is_none(), "{line}");
    assert_governed(line, "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdks_client_is_governed_over_stdio_and_http() {
    let scenario = governed();
    let proxy = Proxy::new().await;
    let mut args: Vec<OsString> = vec!["--".into()];
    args.extend(proxy.command(&[], &Upstream::Python));
    assert_ts_governed(&ts_client(&scenario, args).await);
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let listening = proxy.listen(&upstream.upstream()).await;
    let args: Vec<OsString> = vec![
        "--url".into(),
        listening.url().into(),
        "--token".into(),
        token("alice").into(),
    ];
    assert_ts_governed(&ts_client(&scenario, args).await);
    let once = [
        ("echo".to_owned(), json!({"text": "write to [email]"})),
        ("read_config".to_owned(), json!({})),
        ("leak_error".to_owned(), json!({})),
    ];
    assert_eq!(upstream_calls(&proxy.calls), [once.clone(), once].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_only_upstream_is_never_spoken_to_statelessly() {
    let proxy = Proxy::new().await;
    let scenario = json!([call("echo", json!({"text": "hi"}))]);
    let mut args = scenario_args(MODES, &scenario, 10);
    args.push("--".into());
    args.extend(proxy.command(&[], &Upstream::TypeScript));
    let lines = modes(args).await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    for line in &lines[..2] {
        assert_eq!(line["protocol_version"], "2025-11-25", "{line}");
        assert_eq!(line["steps"][0]["text"], "hi", "{line}");
    }
    // Pinned to the new revision: the revision's own error, naming what
    // the proxy and this upstream both speak, which it is not.
    let pinned = &lines[2];
    let code = pinned["error"]["code"]
        .as_i64()
        .or_else(|| pinned["steps"][0]["error"]["code"].as_i64());
    assert_eq!(code, Some(-32022), "{pinned}");
    assert!(
        !pinned.to_string().contains("\"2026-07-28\",\"2025"),
        "{pinned}"
    );
    assert_eq!(upstream_calls(&proxy.calls).len(), 2);
}

/// Posts one JSON-RPC body to `url` outside any SDK: `(status, body)`.
async fn post(url: &str, bearer: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST /{path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nauthorization: Bearer {bearer}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut response))
        .await
        .expect("the proxy answers")
        .unwrap();
    let text = String::from_utf8_lossy(&response);
    let status = text[9..12].parse().unwrap();
    let (_, payload) = text.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(payload).unwrap_or(Value::Null))
}

/// A stateless `tools/call` body and its routing headers.
fn stateless_call(id: u64, name: &str, arguments: Value, state: Option<&str>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    if let Some(s) = state {
        params["requestState"] = json!(s);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

const ROUTING: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "wire_transfer"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_an_approver_is_parked_and_its_state_is_bound_to_its_caller_and_call() {
    let proxy = Proxy::with_approvals(60_000)
        .await
        .arg(["--input-required-after-ms", "200"]);
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let listening = proxy.listen(&upstream.upstream()).await;
    let url = listening.url().to_owned();
    let alice = token("alice");

    // An escalated call is answered at once: input_required, a state.
    let first = json!({"amount": 777, "to": "acct-7"});
    let (status, parked) = post(
        &url,
        alice,
        &ROUTING,
        &stateless_call(1, "wire_transfer", first.clone(), None),
    )
    .await;
    assert_eq!(status, 200, "{parked}");
    assert_eq!(parked["result"]["resultType"], "input_required", "{parked}");
    let state = parked["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(parked["result"].get("inputRequests").is_none(), "{parked}");

    // Another credential cannot collect it; nor can another call.
    let (_, foreign) = post(
        &url,
        token("bob"),
        &ROUTING,
        &stateless_call(2, "wire_transfer", first.clone(), Some(&state)),
    )
    .await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    let swapped = json!({"amount": 777, "to": "acct-666"});
    let (_, other) = post(
        &url,
        alice,
        &ROUTING,
        &stateless_call(3, "wire_transfer", swapped, Some(&state)),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert!(other.to_string().contains("another call"), "{other}");

    // Headers that disagree with the body, and an unknown version, are
    // refused before anything is governed.
    let lying = [ROUTING[0], ROUTING[1], ("mcp-name", "echo")];
    let (status, mismatch) = post(
        &url,
        alice,
        &lying,
        &stateless_call(4, "wire_transfer", first.clone(), None),
    )
    .await;
    assert_eq!(
        (status, mismatch["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{mismatch}"
    );
    let mut future = stateless_call(5, "wire_transfer", first.clone(), None);
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (_, unsupported) = post(
        &url,
        alice,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ROUTING[1],
            ROUTING[2],
        ],
        &future,
    )
    .await;
    assert_eq!(unsupported["error"]["code"], -32022, "{unsupported}");

    // Only now does the approver come: the parked call is rejected, and
    // the SDK's own call polls with the state it is given until the
    // approver approves it.
    let decided = approver(proxy.approvals().queue().clone(), vec![false, true]);
    let scenario = json!([call(
        "wire_transfer",
        json!({"amount": 250, "to": "acct-9"})
    )]);
    let mut args = scenario_args("2026-07-28", &scenario, 2_000);
    args.extend([
        "--url".into(),
        url.clone().into(),
        "--token".into(),
        alice.into(),
    ]);
    let lines = modes(args).await;
    assert_eq!(
        lines[0]["steps"][0]["text"], "sent 250 to acct-9",
        "{lines:?}"
    );
    let amounts = tokio::time::timeout(Duration::from_secs(30), decided)
        .await
        .expect("the approver is done")
        .expect("the approver's checks");
    assert_eq!(amounts, [777, 250]);

    // The rejected call, collected with its state: the deny.
    let (_, rejected) = post(
        &url,
        alice,
        &ROUTING,
        &stateless_call(6, "wire_transfer", first, Some(&state)),
    )
    .await;
    assert_eq!(rejected["result"]["isError"], true, "{rejected}");
    assert_eq!(rejected["result"]["resultType"], "complete", "{rejected}");
    assert!(rejected.to_string().contains("payments."), "{rejected}");
    // Collected once: the state is gone.
    let (_, again) = post(
        &url,
        alice,
        &ROUTING,
        &stateless_call(
            7,
            "wire_transfer",
            json!({"amount": 777, "to": "acct-7"}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(again["error"]["code"], -32602, "{again}");

    assert_eq!(
        upstream_calls(&proxy.calls),
        [(
            "wire_transfer".to_owned(),
            json!({"amount": 250, "to": "acct-9"})
        )],
        "only the approved call reached the server"
    );
    let pre: Vec<Value> = super::read_records(&proxy.records)
        .into_iter()
        .filter(|r| point_of(r) == "pre_tool_call")
        .collect();
    assert_eq!(
        pre.len(),
        2,
        "one emission per call, however often polled: {pre:#?}"
    );
}

/// Two first requests of one credential at once: one session starts (one
/// `agent_startup`), the other request waits for that start and is
/// governed in it, instead of starting a second session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_of_one_credential_start_one_session() {
    let proxy = Proxy::new().await;
    let upstream = HttpUpstream::start(&proxy.calls).await;
    let listening = proxy.listen(&upstream.upstream()).await;
    let url = listening.url().to_owned();
    let routing = [ROUTING[0], ROUTING[1], ("mcp-name", "echo")];
    let (one, two) = (
        stateless_call(1, "echo", json!({"text": "one"}), None),
        stateless_call(2, "echo", json!({"text": "two"}), None),
    );
    let (a, b) = tokio::join!(
        post(&url, token("alice"), &routing, &one),
        post(&url, token("alice"), &routing, &two),
    );
    for (status, answer) in [&a, &b] {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let seen = proxy.policy.seen();
    let sessions: std::collections::BTreeSet<&str> =
        seen.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let records = super::read_records(&proxy.records);
    let startups = records
        .iter()
        .filter(|r| point_of(r) == "agent_startup")
        .count();
    let shutdowns = records
        .iter()
        .filter(|r| point_of(r) == "agent_shutdown")
        .count();
    assert_eq!((startups, shutdowns), (1, 0), "{records:#?}");
}
