//! The gateway command governing for real: one chat through the demo's
//! redactor and policy with a pooled upstream key (the address reaches
//! the upstream redacted, the destructive call never reaches the client,
//! the upstream sees the pooled key and not the client's, every record is
//! printed, Ctrl-C ends the session with `agent_shutdown`, the key never
//! appears in the output); a policy directory evaluated in the gateway's
//! own process; an HTTPS upstream of a private CA, trusted only with
//! `--upstream-ca` and given the client certificate.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire_testkit::model_upstream::plain::upstream;
use serde_json::{Value, json};

use super::{CLIENT_KEY, Running, UPSTREAM_KEY, demo_chain, line_starting, lines_of, stderr_lines};

/// POSTs `body` to the gateway's chat completions; the status and JSON.
fn chat(addr: &str, body: &Value) -> (u16, Value) {
    chat_as(addr, CLIENT_KEY, body)
}

/// [`chat`] with `key` as the client's API key.
fn chat_as(addr: &str, key: &str, body: &Value) -> (u16, Value) {
    hookwire_testkit::gateway_http::chat(addr, key, "cli-gateway", body)
}

#[test]
fn the_gateway_command_governs_a_chat_with_a_pooled_key_and_prints_its_records() {
    let bin = hookwire_testkit::hookwire_bin();
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
    let said = stderr_lines(&mut gateway);
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
    let policies = hookwire_testkit::workspace_root().join("examples/policies");
    let (upstream, seen) = upstream();
    let mut gateway = Command::new(hookwire_testkit::hookwire_bin())
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

/// Starts `hookwire gateway` forwarding to `upstream` with `extra`
/// flags: the running command and the address it listens on.
fn gateway_to(upstream: &str, declaration: &std::path::Path, extra: &[&str]) -> (Running, String) {
    let mut gateway = Command::new(hookwire_testkit::hookwire_bin())
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
    let said = stderr_lines(&mut gateway);
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
    let out = Command::new(hookwire_testkit::hookwire_bin())
        .args(["gateway", "--upstream", &https, "--upstream-client-key"])
        .arg(path("client.key"))
        .arg("--declaration")
        .arg(&declaration)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--upstream-client-cert"));
}
