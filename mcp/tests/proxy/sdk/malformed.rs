//! Malformed messages from the client's side, which no SDK sends: written
//! raw to the proxy's stdin, and posted raw over Streamable HTTP inside a
//! session the SDK opened. Each is a JSON-RPC error naming the fault, no
//! call reaches the server, and the session goes on. (The server's side
//! sending garbage is in `failures`.)

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::proxy::token;
use super::{
    Proxy, Upstream, WAIT, assert_records_match, call, records_after_shutdown, upstream_calls,
};

/// The proxy over stdio, driven line by line.
pub(crate) struct Raw {
    pub(crate) child: tokio::process::Child,
    pub(crate) stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    pub(crate) fn spawn(proxy: &Proxy) -> Self {
        Self::spawn_before(proxy, &Upstream::Python)
    }

    /// The proxy in front of `upstream`.
    pub(crate) fn spawn_before(proxy: &Proxy, upstream: &Upstream) -> Self {
        let argv = proxy.command(&[], upstream);
        let mut child = tokio::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn hookwire mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    pub(crate) async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next response (notifications the proxy relays are skipped).
    pub(crate) async fn response(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.stdout.next_line())
                .await
                .expect("the proxy answers")
                .unwrap()
                .expect("the proxy's stdout is open");
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("the proxy wrote a line that is not JSON: {line}"));
            if v.get("method").is_none() {
                return v;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_on_stdin_are_json_rpc_errors_and_the_session_goes_on() {
    let proxy = Proxy::new().await.arg(["--max-message-bytes", "65536"]);
    let mut raw = Raw::spawn(&proxy);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
    )
    .await;
    let init = raw.response().await;
    assert_eq!(init["id"], 1, "{init}");
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    // Not JSON: a cut-off tools/call.
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_file""#)
        .await;
    let e = raw.response().await;
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null, "{e}");

    // Not exactly representable: a duplicate member.
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"delete_file","arguments":{"path":"/x"}}}"#)
        .await;
    let e = raw.response().await;
    assert_eq!(e["error"]["code"], -32700, "{e}");

    // Not JSON-RPC 2.0.
    raw.send(r#"{"jsonrpc":"1.0","id":4,"method":"tools/call","params":{"name":"echo"}}"#)
        .await;
    let e = raw.response().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");

    // `arguments` not an object.
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":"text"}}"#)
        .await;
    let e = raw.response().await;
    assert_eq!(e["id"], 5, "{e}");
    assert_eq!(e["error"]["code"], -32602, "{e}");

    // Over --max-message-bytes.
    let big = "x".repeat(100 * 1024);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": big}}})
        .to_string(),
    )
    .await;
    let e = raw.response().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");

    // The session goes on.
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "ok"}}})
        .to_string(),
    )
    .await;
    let ok = raw.response().await;
    assert_eq!(ok["id"], 7, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "ok", "{ok}");

    // EOF on stdin ends the session and the proxy.
    drop(raw.stdin);
    let status = tokio::time::timeout(WAIT, raw.child.wait())
        .await
        .expect("the proxy exits after EOF")
        .unwrap();
    assert!(status.success(), "{status}");
    let calls = upstream_calls(&proxy.calls);
    assert_eq!(calls, [("echo".to_owned(), json!({"text": "ok"}))]);
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &proxy.policy.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_post_inside_an_http_session_is_a_json_rpc_error() {
    let proxy = Proxy::new().await;
    let listening = proxy.listen(&Upstream::Python).await;
    let scenario = json!([
        {"op": "raw", "body": "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\",\"params\":{"},
        {"op": "raw", "body": "[{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"ping\"}]"},
        call("echo", json!({"text": "ok"})),
    ]);
    let out = listening.client(Some(token("alice")), scenario).await;
    assert!(out.get("fatal").is_none(), "{out}\n{}", listening.log());
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], 400, "{out}");
    assert!(
        steps[0]["body"].as_str().unwrap().contains("-32700"),
        "{out}"
    );
    assert_eq!(steps[1]["status"], 400, "a batch: {out}");
    assert!(
        steps[1]["body"].as_str().unwrap().contains("-32600"),
        "{out}"
    );
    assert_eq!(steps[2]["text"], "ok", "{out}");
    assert_eq!(
        upstream_calls(&proxy.calls),
        [("echo".to_owned(), json!({"text": "ok"}))]
    );
}
