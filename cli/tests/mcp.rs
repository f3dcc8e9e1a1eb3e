//! `hookwire mcp` run as an MCP client launches it: over stdio and over
//! Streamable HTTP, in front of a small standard-library MCP server
//! (`fixtures/mcp/upstream.py`, over stdio or HTTP), governed by a Rego
//! policy service (`hookwire policy serve`, `fixtures/mcp/policy/`). A
//! deny that never reaches the server, a transform of the arguments and
//! of the result, a hidden tool, the HTTP clients' refusals, a crashing
//! and a garbling server, malformed and oversized messages; the records
//! (printed on stderr) equal the emissions.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::gateway::{Running, line_starting, lines_of};

const WAIT: Duration = Duration::from_secs(60);
const ALICE: &str = "mcp-test-token-alice-3f9d";
const BOB: &str = "mcp-test-token-bob-81ce";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Each line of a child's stderr.
fn err_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The policy service and a declaration binding it.
struct Governance {
    _policy: Running,
    declaration: PathBuf,
    dir: tempfile::TempDir,
}

fn governance() -> Governance {
    let mut policy = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve"])
        .arg(fixtures().join("policy"))
        .args(["--addr", "127.0.0.1:0", "--no-watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut policy);
    let policy = Running(policy);
    let banner = line_starting(&lines, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("mcp.json");
    let document = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "spec": "agent-hooks/0.1",
        "id": "cli-mcp",
        "host": {"name": "hookwire", "version": "0.1.0"},
        "configuration": {"mode": "enforce",
                          "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                          "identity_provider": "jcs-sha256"},
        "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                      "config": {"endpoint": endpoint, "mutation": ["$target", "$target.text"]},
                      "at": ["pre_tool_call", "post_tool_call"],
                      "timeout_ms": 5000},
                     {"id": "passthrough", "kind": "hookwire.allow"}],
    });
    std::fs::write(&declaration, document.to_string()).unwrap();
    Governance {
        _policy: policy,
        declaration,
        dir,
    }
}

/// `hookwire mcp` over stdio.
struct StdioProxy {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    count_file: PathBuf,
    _g: Governance,
}

impl StdioProxy {
    fn start(extra: &[&str], upstream: &[String]) -> Self {
        let g = governance();
        let count_file = g.dir.path().join("calls");
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(["mcp", "--print-records", "--declaration"])
            .arg(&g.declaration)
            .args(extra)
            .arg("--")
            .args(upstream)
            .env("MCP_COUNT_FILE", &count_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hookwire mcp");
        let out = lines_of(&mut child);
        let err = err_lines(&mut child);
        let stdin = child.stdin.take();
        Self {
            child: Some(child),
            stdin,
            out,
            err,
            count_file,
            _g: g,
        }
    }

    fn stdio_upstream() -> Vec<String> {
        vec![
            python().display().to_string(),
            fixtures().join("upstream.py").display().to_string(),
        ]
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let line = self
            .out
            .recv_timeout(WAIT)
            .expect("an answer from hookwire mcp");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// Sends a request and returns its answer (other messages skipped).
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let m = self.recv();
            if m["id"] == id {
                return m;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let a = self.call(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"sampling": {}, "elicitation": {}, "roots": {}},
                "clientInfo": {"name": "cli-test", "version": "1"}
            }),
        );
        self.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        a
    }

    fn tool(&mut self, id: u64, name: &str, args: Value) -> Value {
        self.call(id, "tools/call", json!({"name": name, "arguments": args}))
    }

    /// Closes stdin, waits for the exit, and returns the records printed.
    fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let mut child = self.child.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = rx
            .recv_timeout(WAIT)
            .expect("hookwire mcp exits at EOF")
            .unwrap();
        assert!(status.success(), "{status}");
        self.err
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .filter(|r| r.get("interception_point").is_some())
            .collect()
    }

    fn upstream_calls(&self) -> usize {
        std::fs::read_to_string(&self.count_file).map_or(0, |s| s.lines().count())
    }
}

impl Drop for StdioProxy {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
}

fn points(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["interception_point"].as_str().unwrap())
        .collect()
}

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
    }
}

/// One HTTP/1.1 exchange: the status, the headers (lowercase names) and
/// the body.
fn http(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, headers, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn http_clients_are_authenticated_and_bound_to_their_sessions() {
    let g = governance();
    let clients = g.dir.path().join("clients");
    std::fs::write(
        &clients,
        format!(
            "# test clients\nalice {}\nbob {}\n",
            hookwire_mcp_sha(ALICE),
            hookwire_mcp_sha(BOB)
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args([
            "mcp",
            "--print-records",
            "--listen",
            "127.0.0.1:0",
            "--max-message-bytes",
            "4096",
            "--clients-file",
        ])
        .arg(&clients)
        .arg("--declaration")
        .arg(&g.declaration)
        .arg("--")
        .args(StdioProxy::stdio_upstream())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire mcp --listen");
    let err = err_lines(&mut child);
    let _proxy = Running(child);
    let banner = line_starting(&err, "hookwire mcp: listening on http://");
    let addr = banner
        .trim_start_matches("hookwire mcp: listening on http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");

    let (status, headers, _) = http(&addr, "POST", &[], &init);
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", "Bearer not-a-client")],
        &init,
    );
    assert_eq!(status, 401);

    let (status, headers, body) = http(&addr, "POST", &[("authorization", &alice)], &init);
    assert_eq!(status, 200, "{body}");
    let session = header(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &bob), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 403, "another client's session");
    let (status, _, _) = http(&addr, "POST", &[("authorization", &alice)], &list);
    assert_eq!(status, 400, "no session id");
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", "feedface")],
        &list,
    );
    assert_eq!(status, 404, "an unknown session");
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["result"]["tools"].is_array());

    let delete = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "delete_all", "arguments": {}}}).to_string();
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &delete,
    );
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let echo = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "a@example.com"}, "_meta": {"progressToken": "p1"}}}).to_string();
    let (status, headers, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &echo,
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/event-stream"),
        "progress asked for: an event stream"
    );
    let last = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .last()
        .unwrap();
    let answer: Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], r#"{"text": "[email]"}"#,
        "{answer}"
    );

    let big = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5000)
    );
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &big,
    );
    assert_eq!(status, 413);
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        "{not json",
    );
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32700
    );
    let (status, _, _) = http(&addr, "GET", &[("authorization", &alice)], "");
    assert_eq!(status, 405);

    let (status, _, _) = http(
        &addr,
        "DELETE",
        &[("authorization", &bob), ("mcp-session-id", &session)],
        "",
    );
    assert_eq!(status, 403, "another client cannot end it either");
    let (status, _, _) = http(
        &addr,
        "DELETE",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        "",
    );
    assert_eq!(status, 204);
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 404, "an ended session");

    let mut records = Vec::new();
    while records
        .last()
        .is_none_or(|r: &Value| r["interception_point"] != "agent_shutdown")
    {
        let line = err.recv_timeout(WAIT).expect("the records of the session");
        if let Ok(r) = serde_json::from_str::<Value>(&line)
            && r.get("interception_point").is_some()
        {
            records.push(r);
        }
    }
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );
}

fn hookwire_mcp_sha(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

#[test]
fn a_streamable_http_upstream_is_governed_alike() {
    let mut server = Command::new(python())
        .arg(fixtures().join("upstream.py"))
        .arg("--http")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the HTTP fixture server");
    let lines = lines_of(&mut server);
    let _server = Running(server);
    let port = lines.recv_timeout(WAIT).expect("the fixture's port");
    let url = format!("http://127.0.0.1:{}/mcp", port.trim());
    let g = governance();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args([
            "mcp",
            "--print-records",
            "--upstream",
            &url,
            "--declaration",
        ])
        .arg(&g.declaration)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire mcp --upstream");
    let out = lines_of(&mut child);
    let err = err_lines(&mut child);
    let stdin = child.stdin.take();
    let mut p = StdioProxy {
        child: Some(child),
        stdin,
        out,
        err,
        count_file: g.dir.path().join("none"),
        _g: g,
    };
    let init = p.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture", "{init}");
    let echo = p.tool(1, "echo", json!({"text": "bo@example.com"}));
    assert_eq!(text_of(&echo), r#"{"text": "[email]"}"#);
    let delete = p.tool(2, "delete_all", json!({}));
    assert_eq!(delete["result"]["isError"], true);
    let records = p.finish();
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "post_tool_call",
            "pre_tool_call",
            "agent_shutdown"
        ]
    );
}
