//! `examples/gateway/` as a new user runs it, without a provider key: the
//! mock model (`mock_model.py`, standard library only) behind the built
//! `hookwire gateway` and the demo's services, and the example agent on
//! the official SDKs (`openai` for Chat Completions and Responses,
//! `anthropic` for Messages, from `.cache/venv`) through it, whole and
//! streamed: the `rm -rf` call the mock asks for is removed and said to
//! be blocked, the e-mail address reaches the model redacted. Straight
//! against the mock the same agent runs that call (the SDKs' stream
//! helpers accept the mock's own events); the mock's stream event order
//! and error shapes are the providers'; and `run.sh` itself runs with
//! `HOOKWIRE` set to the built binary, in a network namespace of its own
//! so that its fixed ports cannot meet anything else on the machine.

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire_testkit::{python_venv, workspace_root};
use serde_json::{Value, json};

use super::{Running, demo_chain, line_starting, line_with, stderr_lines};

/// The APIs the agent speaks, each whole and streamed.
const APIS: [&str; 3] = ["chat", "responses", "messages"];
/// What the policy says when it removes the call.
const BLOCKED: &str = "was blocked: policy:destructive_command";
/// The destructive call as the agent would run it.
const RM: &str = r#"running bash {"cmd": "rm -rf /tmp/build"}"#;
/// The permitted call as the agent runs it.
const LS: &str = r#"running bash {"cmd": "ls -la"}"#;
/// What the mock model and the example agent import from the venv.
const SDKS: &[&str] = &["openai", "anthropic"];
/// The model's answer once it has the tool results.
const FOUND: &str = "Here is what I found: (simulated) $ ls -la";

/// `mock_model.py --listen 127.0.0.1:0`: the running server, its
/// `ADDR`, and its stderr (one line per request).
fn mock_model() -> (Running, String, mpsc::Receiver<String>) {
    let mut child = Command::new(python_venv(SDKS))
        .arg(workspace_root().join("examples/gateway/mock_model.py"))
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mock_model.py");
    let log = stderr_lines(&mut child);
    let child = Running(child);
    let mut read = Vec::new();
    let banner = line_with(&log, &["mock model: listening on http://"], &mut read);
    let addr = banner
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_start_matches("http://")
        .to_owned();
    (child, addr, log)
}

/// Runs the example agent for `api` (streamed when `stream`) with both
/// SDKs' base URLs at `addr` (`/v1` for OpenAI's); its output.
fn agent(addr: &str, api: &str, stream: bool) -> Output {
    let mut cmd = Command::new(python_venv(SDKS));
    cmd.arg(workspace_root().join("examples/gateway/agent.py"))
        .args(["--api", api])
        .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
        .env("OPENAI_API_KEY", "sk-example-key")
        .env("ANTHROPIC_BASE_URL", format!("http://{addr}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-example-key")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .stdin(Stdio::null());
    if stream {
        cmd.arg("--stream");
    }
    let out = cmd.output().expect("run agent.py");
    assert!(
        out.status.success(),
        "agent.py --api {api} (stream {stream}) failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// The requests the mock logged, waiting (bounded) until `n` arrived.
fn logged(log: &mpsc::Receiver<String>, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    while lines.len() < n {
        let line = log
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{n} requests logged by the mock, got {lines:#?}"));
        if line.contains("\"POST ") {
            lines.push(line);
        }
    }
    lines
}

#[test]
fn the_example_agent_is_governed_through_the_gateway_for_every_api_whole_and_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let (_demo, declaration) = demo_chain(dir.path(), "gateway-example");
    let (_mock, model, log) = mock_model();
    let mut gateway = Command::new(hookwire_testkit::hookwire_bin())
        .args(["gateway", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("http://{model}/v1"))
        .arg("--declaration")
        .arg(&declaration)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let said = stderr_lines(&mut gateway);
    let _gateway = Running(gateway);
    let banner = line_starting(&said, "hookwire gateway: ");
    let addr = banner
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    for api in APIS {
        for stream in [false, true] {
            let out = agent(&addr, api, stream);
            let text = String::from_utf8_lossy(&out.stdout);
            let answers: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("agent: < "))
                .collect();
            assert_eq!(answers.len(), 2, "{api} {stream}: two turns: {text}");
            assert!(
                answers[0].contains(BLOCKED),
                "{api} {stream}: the agent is told the call was blocked: {text}"
            );
            assert!(
                text.contains(LS),
                "{api} {stream}: the permitted call runs: {text}"
            );
            assert!(
                !text.contains(RM),
                "{api} {stream}: the denied call never reaches the agent: {text}"
            );
            assert!(
                answers[1].contains(FOUND) && !answers[1].contains("rm -rf"),
                "{api} {stream}: the model answers the one result: {text}"
            );
        }
    }
    // Two model requests per run, each with the user's words redacted.
    let requests = logged(&log, 2 * 2 * APIS.len());
    for (api, path) in [
        ("chat", "/v1/chat/completions"),
        ("responses", "/v1/responses"),
        ("messages", "/v1/messages"),
    ] {
        let n = requests
            .iter()
            .filter(|l| l.contains(&format!("POST {path} ")))
            .count();
        assert_eq!(n, 4, "{api}: {requests:#?}");
    }
    for line in &requests {
        assert!(line.contains(" 200 "), "{line}");
        assert!(line.contains("mail a summary to [email]"), "{line}");
        assert!(!line.contains("ann@example.com"), "{line}");
    }
}

#[test]
fn the_example_agent_straight_at_the_mock_runs_the_call_the_gateway_removes() {
    let (_mock, addr, log) = mock_model();
    for api in APIS {
        for stream in [false, true] {
            let out = agent(&addr, api, stream);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(LS) && text.contains(RM),
                "{api} {stream}: {text}"
            );
            assert!(!text.contains(BLOCKED), "{api} {stream}: {text}");
            assert!(text.contains(FOUND), "{api} {stream}: {text}");
        }
    }
    for line in logged(&log, 2 * 2 * APIS.len()) {
        assert!(line.contains("ann@example.com"), "unredacted: {line}");
    }
}

/// POSTs `body` to the mock at `addr` over HTTP/1.0; the status, the
/// `content-type` and the body.
fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.to_string();
    let mut head = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    write!(stream, "{head}\r\n{body}").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let kind = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    (status, kind, body.to_owned())
}

/// The `event:` names of an SSE body, and the `type` each data carries.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let name = frame
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("a named event")
                .to_owned();
            let data: Value = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .and_then(|d| serde_json::from_str(d).ok())
                .expect("JSON data");
            assert_eq!(data["type"], name.as_str(), "{frame}");
            name
        })
        .collect()
}

#[test]
fn the_mock_model_streams_in_the_providers_order_and_answers_in_their_error_shapes() {
    let (_mock, addr, _log) = mock_model();
    let bash = json!({"type": "function", "name": "bash", "parameters": {"type": "object"}});
    let openai = [("Authorization", "Bearer sk-any")];
    let (status, kind, body) = post(
        &addr,
        "/v1/responses",
        &openai,
        &json!({"model": "m", "input": "go", "tools": [bash], "stream": true}),
    );
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/event-stream"),
        "{body}"
    );
    let call = [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ];
    let mut expected = vec!["response.created", "response.in_progress"];
    expected.extend(call);
    expected.extend(call);
    expected.push("response.completed");
    assert_eq!(events(&body), expected);
    let numbers: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["sequence_number"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(numbers, (0..expected.len() as u64).collect::<Vec<_>>());

    let anthropic = [
        ("x-api-key", "sk-ant-any"),
        ("anthropic-version", "2023-06-01"),
    ];
    let tool = json!({"name": "bash", "input_schema": {"type": "object"}});
    let (status, _, body) = post(
        &addr,
        "/v1/messages?beta=true",
        &anthropic,
        &json!({"model": "m", "max_tokens": 64, "stream": true, "tools": [tool],
                "messages": [{"role": "user", "content": "go"}]}),
    );
    assert_eq!(status, 200, "{body}");
    let block = [
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
    ];
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(block);
    expected.push("content_block_start");
    expected.extend(block);
    expected.extend(["message_delta", "message_stop"]);
    assert_eq!(events(&body), expected);

    // Chat Completions: unnamed data chunks, the finish, then [DONE].
    let (status, _, body) = post(
        &addr,
        "/v1/chat/completions",
        &openai,
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(status, 200);
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    let finish: Value = serde_json::from_str(data[data.len() - 2]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop", "{body}");

    // Errors in each provider's shape.
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, body) = post(&addr, "/v1/chat/completions", &[], &chat);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 401);
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    let (status, _, body) = post(&addr, "/v1/messages", &[("x-api-key", "k")], &chat);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 400);
    assert_eq!(body["type"], "error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic-version"),
        "{body}"
    );
    let (status, _, body) = post(
        &addr,
        "/v1/messages",
        &anthropic,
        &json!({"model": "m", "max_tokens": 8,
                "messages": [{"role": "user", "content": "rate limit me"}]}),
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 429);
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    let (status, _, body) = post(
        &addr,
        "/v1/responses",
        &openai,
        &json!({"model": "m", "input": "hi", "previous_response_id": "resp_nope"}),
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "previous_response_not_found");
    let (status, _, body) = post(&addr, "/v1/embeddings", &openai, &chat);
    assert_eq!(status, 404, "{body}");
}

/// Whether this process may make a network namespace of its own (root,
/// `unshare` and `ip`).
fn own_network_namespace() -> bool {
    Command::new("unshare")
        .args(["-n", "ip", "link", "set", "lo", "up"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn run_sh_runs_every_api_through_an_installed_hookwire() {
    let script = workspace_root().join("examples/gateway/run.sh");
    // Without hookwire it says how to install it, before starting anything.
    let missing = Command::new(&script)
        .env("HOOKWIRE", "/nonexistent/hookwire")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("cargo install --path cli"), "{err}");
    let help = Command::new(&script).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("HOOKWIRE"));

    if !hookwire_testkit::require(
        own_network_namespace(),
        "a network namespace of the test's own (root, unshare, ip)",
        "run.sh listens on fixed loopback ports; the test runs it where nothing else can hold them",
    ) {
        return;
    }
    let (tx, rx) = mpsc::channel();
    let mut child = Command::new("unshare")
        .args(["-n", "sh", "-c", "ip link set lo up && exec \"$0\""])
        .arg(&script)
        .env("HOOKWIRE", hookwire_testkit::hookwire_bin())
        .env("PYTHON", python_venv(SDKS))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run run.sh in a network namespace");
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::Read;
        let (mut out, mut err) = (String::new(), String::new());
        let reader = std::thread::spawn(move || {
            let mut stderr = stderr;
            let _ = stderr.read_to_string(&mut err);
            err
        });
        let mut stdout = stdout;
        let _ = stdout.read_to_string(&mut out);
        let err = reader.join().unwrap_or_default();
        let _ = tx.send((child.wait(), out, err));
    });
    let Ok((status, out, err)) = rx.recv_timeout(Duration::from_secs(300)) else {
        // run.sh's trap stops what it started.
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("run.sh did not finish within 300 s");
    };
    assert!(status.unwrap().success(), "run.sh failed: {err}\n{out}");
    for api in APIS {
        for mode in ["", ", streamed"] {
            assert!(
                out.contains(&format!("({api}{mode})")),
                "{api}{mode} ran: {out}"
            );
        }
    }
    assert_eq!(out.matches(BLOCKED).count(), 6, "{out}");
    assert_eq!(out.matches(FOUND).count(), 6, "{out}");
    assert!(!out.contains(RM), "{out}");
    assert_eq!(
        err.matches("mail a summary to [email]").count(),
        12,
        "the mock's log: {err}"
    );
    assert!(!err.contains("ann@example.com"), "{err}");
}
