//! `hookwire gateway`, run as an operator runs it: the demo's interceptor
//! services (`hookwire serve-demo`), a declaration naming them, a model
//! upstream on loopback, and the gateway command with a pooled upstream
//! key. One chat request goes through: the e-mail address reaches the
//! upstream redacted, the destructive tool call the model proposed never
//! reaches the client, the upstream sees the pooled key and not the
//! client's, every record is printed, Ctrl-C ends the session with
//! `agent_shutdown`, and the key never appears in the command's output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) use hookwire_testkit::child::{Running, line_starting, stdout_lines as lines_of};
use serde_json::{Value, json};

/// The pooled upstream key: it must reach the upstream and nothing else.
pub(crate) const UPSTREAM_KEY: &str = "sk-pooled-upstream-key-7f3a9c";
/// What the client itself sends; the gateway must not forward it.
pub(crate) const CLIENT_KEY: &str = "sk-client-key-not-forwarded";

/// One request the upstream received: its `Authorization` and its body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) authorization: Option<String>,
    pub(crate) body: Value,
}

/// Reads one HTTP/1.1 request (head and a `Content-Length` body).
fn read_request(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .expect("the gateway sends a Content-Length");
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (head, body)
}

/// An OpenAI-compatible upstream on 127.0.0.1:0 that proposes two tool
/// calls (`ls` and `rm -rf /`) to every chat request, recording each.
pub(crate) fn upstream() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let (head, body) = read_request(&mut stream);
            let authorization = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("authorization")
                    .then(|| value.trim().to_owned())
            });
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let model = body["model"].as_str().unwrap_or("?").to_owned();
            log.lock().unwrap().push(Seen {
                authorization,
                body,
            });
            let call = |id: &str, cmd: &str| {
                json!({"id": id, "type": "function",
                       "function": {"name": "bash", "arguments": json!({"cmd": cmd}).to_string()}})
            };
            let answer = json!({
                "id": "chatcmpl-up", "object": "chat.completion", "created": 1_700_000_000,
                "model": model,
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null,
                    "tool_calls": [call("call_1", "ls"), call("call_2", "rm -rf /")]}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (base, seen)
}

/// Starts `hookwire policy serve` (this crate's binary) over the Rego
/// files of `policies` on a free loopback port; the running service and
/// its endpoint URL.
pub(crate) fn policy_serve(policies: &std::path::Path) -> (Running, String) {
    hookwire_testkit::child::policy_serve(
        std::path::Path::new(env!("CARGO_BIN_EXE_hookwire")),
        policies,
    )
}

/// POSTs `body` to the gateway's chat completions; the status and JSON.
pub(crate) fn chat(addr: &str, body: &Value) -> (u16, Value) {
    chat_as(addr, CLIENT_KEY, body)
}

/// [`chat`] with `key` as the client's API key.
fn chat_as(addr: &str, key: &str, body: &Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect to the gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nx-hookwire-session: cli-gateway\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The demo's redactor (at `input`) and policy (at `pre_tool_call`)
/// served by `hookwire serve-demo` on free loopback ports, and a
/// declaration binding them (the passthrough at the other points) written
/// into `dir` with document id `id`: the running services and the file.
pub(crate) fn demo_chain(dir: &std::path::Path, id: &str) -> (Running, std::path::PathBuf) {
    let mut demo = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["serve-demo", "--policy", "127.0.0.1:0"])
        .args(["--redactor", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run hookwire serve-demo");
    let demo_lines = lines_of(&mut demo);
    let demo = Running(demo);
    let endpoint = |line: String| line.split_whitespace().last().unwrap().to_owned();
    let policy = endpoint(line_starting(&demo_lines, "policy "));
    let redactor = endpoint(line_starting(&demo_lines, "redactor "));
    let declaration = dir.join("gateway.json");
    let grpc = |id: &str, endpoint: &str, point: &str| {
        json!({"id": id, "kind": "hookwire.grpc", "config": {"endpoint": endpoint},
               "at": [point], "timeout_ms": 2000})
    };
    let document = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "spec": "agent-hooks/0.1",
        "id": id,
        "host": {"name": "hookwire", "version": "0.1.0"},
        "configuration": {"mode": "enforce",
                          "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                          "identity_provider": "jcs-sha256"},
        "bindings": [grpc("redactor", &redactor, "input"),
                     grpc("policy", &policy, "pre_tool_call"),
                     {"id": "passthrough", "kind": "hookwire.allow"}],
    });
    std::fs::write(&declaration, document.to_string()).unwrap();
    (demo, declaration)
}

#[test]
fn the_gateway_command_governs_a_chat_with_a_pooled_key_and_prints_its_records() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    let dir = tempfile::tempdir().unwrap();
    let (_demo, declaration) = demo_chain(dir.path(), "cli-gateway");

    let (upstream, seen) = upstream();
    let mut gateway = Command::new(bin)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .arg("--declaration")
        .arg(&declaration)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY", "--print-records"])
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let pid = gateway.id();
    let said = crate::operable::stderr_lines(&mut gateway);
    let lines = lines_of(&mut gateway);
    let mut gateway = Running(gateway);
    // The address is said on stderr: stdout carries only records.
    let banner = line_starting(&said, "hookwire gateway: ");
    let base = banner
        .split_whitespace()
        .nth(2)
        .expect("the banner names the address");
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    let (status, answer) = chat(
        &addr,
        &json!({"model": "demo-model",
                "messages": [{"role": "user", "content": "tidy up, then mail bob@example.com"}],
                "tools": [{"type": "function", "function": {"name": "bash",
                           "parameters": {"type": "object"}}}]}),
    );
    assert_eq!(status, 200, "{answer}");
    let message = &answer["choices"][0]["message"];
    let calls = message["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 1, "only the permitted call: {answer}");
    assert_eq!(calls[0]["id"], "call_1");
    assert!(
        message["content"]
            .as_str()
            .is_some_and(|c| c.contains("policy:destructive_command")),
        "the client is told what was blocked: {answer}"
    );

    let chats = seen.lock().unwrap().clone();
    assert_eq!(chats.len(), 1);
    assert_eq!(
        chats[0].authorization.as_deref(),
        Some(format!("Bearer {UPSTREAM_KEY}").as_str()),
        "the pooled key, never the client's"
    );
    let sent = chats[0].body.to_string();
    assert!(!sent.contains("bob@example.com"), "{sent}");
    assert!(sent.contains("[email]"), "{sent}");

    // Ctrl-C ends the open session before the command exits.
    let interrupted = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let exit = gateway.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut records = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) {
        records.push(line);
    }
    let err: Vec<String> = said.iter().collect();
    for text in records.iter().chain([&banner]).chain(&err) {
        assert!(!text.contains(UPSTREAM_KEY), "the key leaked: {text}");
        assert!(!text.contains(CLIENT_KEY), "the client key leaked: {text}");
    }
    // Stdout is JSON lines, every one a record (`| jq` reads it whole).
    let records: Vec<Value> = records
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect();
    let points: Vec<&str> = records
        .iter()
        .map(|r| r["interception_point"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        points,
        [
            "agent_startup",
            "input",
            "pre_model_call",
            "post_model_call",
            "pre_tool_call",
            "pre_tool_call",
            "agent_shutdown"
        ],
        "{records:?}"
    );
    let denied: Vec<&Value> = records
        .iter()
        .filter(|r| r["verdict"]["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1, "{records:?}");
    assert_eq!(denied[0]["verdict"]["reason"], "policy:destructive_command");
    assert!(
        records
            .iter()
            .all(|r| r["session"]["id"] == records[0]["session"]["id"]),
        "one session"
    );
}

/// Sends lines of both of `child`'s output streams to one channel, so a
/// line is found wherever the command prints it.
fn lines_of_both(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let forward = |stream: Box<dyn Read + Send>, tx: mpsc::Sender<String>| {
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    };
    forward(Box::new(out), tx.clone());
    forward(Box::new(err), tx);
    rx
}

#[test]
fn the_gateway_governs_with_a_policy_directory_in_its_own_process() {
    let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/policies");
    let (upstream, seen) = upstream();
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .arg("--policy")
        .arg(&policies)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY"])
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway --policy");
    let lines = lines_of_both(&mut gateway);
    let _gateway = Running(gateway);
    let banner = line_starting(&lines, "hookwire gateway: ");
    assert!(
        banner.contains("(in process)"),
        "the banner says what governs: {banner}"
    );
    let addr = banner
        .split_whitespace()
        .nth(2)
        .expect("the banner names the address")
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    let (status, answer) = chat(
        &addr,
        &json!({"model": "demo-model",
                "messages": [{"role": "user", "content": "tidy up, then mail bob@example.com"}],
                "tools": [{"type": "function", "function": {"name": "bash",
                           "parameters": {"type": "object"}}}]}),
    );
    assert_eq!(status, 200, "{answer}");
    let calls = answer["choices"][0]["message"]["tool_calls"]
        .as_array()
        .expect("tool calls");
    let ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["call_1"],
        "rm -rf / removed by the Rego policy: {answer}"
    );
    let chats = seen.lock().unwrap().clone();
    assert_eq!(chats.len(), 1);
    let sent = chats[0].body.to_string();
    assert!(!sent.contains("bob@example.com"), "{sent}");
    assert!(sent.contains("[email]"), "redacted by pii.rego: {sent}");
}

#[test]
fn the_proxy_commands_take_a_declaration_or_a_policy_directory_not_both() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    for command in [
        &["gateway", "--upstream", "http://127.0.0.1:9/v1"][..],
        &["hooks", "serve"],
    ] {
        let both = Command::new(bin)
            .args(command)
            .args(["--declaration", "d.json", "--policy", "examples/policies"])
            .output()
            .unwrap();
        assert_eq!(both.status.code(), Some(2), "{command:?}");
        let err = String::from_utf8_lossy(&both.stderr);
        assert!(err.contains("cannot be used with"), "{command:?}: {err}");
        let neither = Command::new(bin).args(command).output().unwrap();
        assert_eq!(neither.status.code(), Some(2), "{command:?}");
    }
}

/// Starts `hookwire gateway` forwarding to `upstream` with `extra`
/// flags: the running command and the address it listens on.
fn gateway_to(upstream: &str, declaration: &std::path::Path, extra: &[&str]) -> (Running, String) {
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["gateway", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--declaration")
        .arg(declaration)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY"])
        .args(extra)
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let said = crate::operable::stderr_lines(&mut gateway);
    let gateway = Running(gateway);
    let banner = line_starting(&said, "hookwire gateway: ");
    let addr = banner
        .split_whitespace()
        .nth(2)
        .expect("the banner names the address")
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    (gateway, addr)
}

#[test]
fn an_https_upstream_of_a_private_ca_needs_upstream_ca_and_gets_the_client_certificate() {
    use hookwire_testkit::tls::Authority;
    use hookwire_testkit::tls_front::TlsFront;

    let dir = tempfile::tempdir().unwrap();
    let (_demo, declaration) = demo_chain(dir.path(), "cli-gateway");
    let (plain, seen) = upstream();
    let backend = plain
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    let (server_ca, client_ca) = (Authority::new("upstream CA"), Authority::new("client CA"));
    let front = TlsFront::start(&server_ca, Some(&client_ca), backend);
    let https = format!("https://127.0.0.1:{}/v1", front.addr().port());
    let (cert, key) = client_ca.leaf("gateway", Vec::new());
    let files = [
        ("ca.pem", &server_ca.pem),
        ("client.pem", &cert),
        ("client.key", &key),
    ];
    for (name, pem) in files {
        std::fs::write(dir.path().join(name), pem).unwrap();
    }
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let question = json!({"model": "demo-model",
        "messages": [{"role": "user", "content": "hello"}]});

    // The web PKI alone does not trust the private CA: the request fails
    // closed in the API's own terms, and nothing reached the upstream.
    let (gateway, addr) = gateway_to(&https, &declaration, &[]);
    let (status, answer) = chat(&addr, &question);
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["code"], "upstream_unavailable", "{answer}");
    assert_eq!(front.handshakes(), 0);
    assert!(seen.lock().unwrap().is_empty());
    drop(gateway);

    // With the CA (and a client certificate) the same request passes, and
    // the upstream saw the certificate.
    let (_gateway, addr) = gateway_to(
        &https,
        &declaration,
        &[
            "--upstream-ca",
            &path("ca.pem"),
            "--upstream-client-cert",
            &path("client.pem"),
            "--upstream-client-key",
            &path("client.key"),
        ],
    );
    let (status, answer) = chat(&addr, &question);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(
        front.client_certificates() >= 1,
        "the client certificate was presented"
    );

    // A key without its certificate is refused at start.
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["gateway", "--upstream", &https, "--upstream-client-key"])
        .arg(path("client.key"))
        .arg("--declaration")
        .arg(&declaration)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--upstream-client-cert"));
}

/// `hookwire gateway token` makes a token and its clients-file line; a
/// gateway given that file admits that token alone; a pool on a shared
/// address without a clients file, or a clients file without a pool, is
/// refused at start with what to do.
#[test]
fn the_gateway_token_command_and_a_clients_file_admit_one_client() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(bin)
        .args(["gateway", "token", "--name", "ci-bot"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let token = String::from_utf8(made.stdout).unwrap();
    let token = token.trim_end();
    assert!(token.starts_with("hwc_") && token.len() == 68, "{token}");
    let line = String::from_utf8(made.stderr).unwrap();
    assert_eq!(
        line.trim_end(),
        format!("ci-bot {}", hookwire_edge::token::sha256_hex(token))
    );
    let clients = dir.path().join("gateway-clients");
    std::fs::write(&clients, &line).unwrap();

    let policies = hookwire_testkit::workspace_root().join("examples/policies");
    let refused = |args: &[&str]| {
        let out = Command::new(bin)
            .arg("gateway")
            .args(args)
            .args(["--upstream", "http://127.0.0.1:9/v1", "--policy"])
            .arg(&policies)
            .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = refused(&[
        "--listen",
        "0.0.0.0:0",
        "--key-env",
        "HOOKWIRE_TEST_UPSTREAM_KEY",
    ]);
    assert!(
        said.contains("--clients-file") && said.contains("--allow-anonymous"),
        "{said}"
    );
    let said = refused(&[
        "--listen",
        "127.0.0.1:0",
        "--clients-file",
        clients.to_str().unwrap(),
    ]);
    assert!(said.contains("pool"), "{said}");

    let (upstream, seen) = upstream();
    let gateway = Command::new(bin)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .arg("--policy")
        .arg(&policies)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY", "--clients-file"])
        .arg(&clients)
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let mut gateway = Running(gateway);
    let said = crate::operable::stderr_lines(&mut gateway.0);
    let banner = line_starting(&said, "hookwire gateway: ");
    let addr = banner.split_whitespace().nth(2).unwrap();
    let addr = addr.trim_start_matches("http://").trim_end_matches("/v1");
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let (status, answer) = chat_as(addr, CLIENT_KEY, &body);
    assert_eq!(status, 401, "an unlisted key: {answer}");
    assert_eq!(answer["error"]["code"], "invalid_api_key");
    assert!(seen.lock().unwrap().is_empty(), "nothing went upstream");
    let (status, answer) = chat_as(addr, token, &body);
    assert_eq!(status, 200, "the listed token: {answer}");
    let chats = seen.lock().unwrap().clone();
    assert_eq!(chats.len(), 1);
    assert_eq!(
        chats[0].authorization.as_deref(),
        Some(format!("Bearer {UPSTREAM_KEY}").as_str()),
        "the pool's key went upstream, not the token"
    );
}
