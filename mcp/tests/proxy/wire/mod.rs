//! `hookwire mcp` run as an MCP client launches it (the built command,
//! [`hookwire_bin`]), driven with hand-written JSON-RPC: over stdio and
//! over Streamable HTTP, in front of a small standard-library MCP server
//! (`tests/fixtures/mcp/wire/upstream.py`, over stdio or HTTP), governed
//! by a Rego policy service (`hookwire policy serve`,
//! `tests/fixtures/mcp/wire/policy/`). A deny that never reaches the
//! server, a transform of the arguments and of the result, a hidden tool,
//! the HTTP clients' refusals, a crashing and a garbling server, malformed
//! and oversized messages; the records (printed on stderr) equal the
//! emissions.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire_testkit::child::{
    Running, line_starting, stderr_lines as err_lines, stdout_lines as lines_of,
};
use hookwire_testkit::{hookwire_bin, python_venv, workspace_root};
use serde_json::{Value, json};

mod http;
mod stdio;
mod upstream_http;

const WAIT: Duration = Duration::from_secs(60);
const ALICE: &str = "mcp-test-token-alice-3f9d";
const BOB: &str = "mcp-test-token-bob-81ce";

fn fixtures() -> PathBuf {
    workspace_root().join("tests/fixtures/mcp/wire")
}

/// The policy service and a declaration binding it.
struct Governance {
    _policy: Running,
    declaration: PathBuf,
    dir: tempfile::TempDir,
}

/// The fixture MCP server over Streamable HTTP on 127.0.0.1:0 (killed
/// when the handle drops) and its port.
fn http_fixture() -> (Running, String) {
    let mut server = Command::new(python_venv(&[]))
        .arg(fixtures().join("upstream.py"))
        .arg("--http")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the HTTP fixture server");
    let lines = lines_of(&mut server);
    let server = Running(server);
    let port = lines.recv_timeout(WAIT).expect("the fixture's port");
    (server, port.trim().to_owned())
}

fn governance() -> Governance {
    let (policy, endpoint) =
        hookwire_testkit::child::policy_serve(&hookwire_bin(), &fixtures().join("policy"));
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
        let mut child = Command::new(hookwire_bin())
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
            python_venv(&[]).display().to_string(),
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
