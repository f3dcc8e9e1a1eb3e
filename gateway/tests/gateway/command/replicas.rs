//! Two `hookwire gateway` processes behind a real load balancer (Debian's
//! nginx, round robin, started by the test on a loopback port with its
//! own prefix), and one conversation alternating between them through
//! tool loops: every turn governed, nothing raw upstream, no
//! `unpaired_tool_result` refusal, whichever process served the turn
//! before.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Running, UPSTREAM_KEY, demo_chain, line_starting, lines_of, stderr_lines};

/// The address the demo's redactor replaces with `[email]`.
const EMAIL: &str = "bob@example.com";

/// nginx from Debian (`scripts/setup.sh` installs `nginx-light`), or
/// `$NGINX`.
fn nginx() -> String {
    if let Ok(path) = std::env::var("NGINX") {
        return path;
    }
    for path in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(path).exists() {
            return path.to_owned();
        }
    }
    panic!("nginx is missing: run scripts/setup.sh (apt-get install nginx-light)");
}

/// A Chat Completions upstream on 127.0.0.1:0 that answers a user turn
/// with two shell calls (`ls` and `rm -rf /`, ids numbered per request)
/// and a turn of tool results with `done: <results>`; records each body.
fn upstream() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { break };
            let body = read_body(&mut stream);
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().unwrap().push(body.clone());
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let last = messages.last().cloned().unwrap_or(Value::Null);
            let call = |id: String, cmd: &str| {
                json!({"id": id, "type": "function",
                       "function": {"name": "bash", "arguments": json!({"cmd": cmd}).to_string()}})
            };
            let message = if last["role"] == "tool" {
                let results: Vec<&str> = messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                json!({"role": "assistant", "content": format!("done: {}", results.join(" | "))})
            } else {
                json!({"role": "assistant", "content": null, "tool_calls": [
                    call(format!("call_{n}_ls"), "ls"), call(format!("call_{n}_rm"), "rm -rf /")]})
            };
            let finish = if message["tool_calls"].is_array() {
                "tool_calls"
            } else {
                "stop"
            };
            let answer = json!({
                "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_700_000_000,
                "model": "demo-model",
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
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

/// Reads one HTTP/1.x request and returns its body.
fn read_body(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap_or(0) == 0 {
            return Vec::new();
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    body
}

/// A free loopback port (bound, read back, released for nginx).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// POSTs a chat request through the balancer.
fn post(addr: &str, body: &Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect to nginx");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer client\r\n\
         Content-Type: application/json\r\nx-hookwire-session: replicas-1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Starts one gateway process; the process, its record lines and its
/// `host:port`.
fn gateway(
    declaration: &Path,
    upstream: &str,
) -> (Running, std::sync::mpsc::Receiver<String>, String) {
    let mut child = Command::new(hookwire_testkit::hookwire_bin())
        .args(["gateway", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--declaration")
        .arg(declaration)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY", "--print-records"])
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let lines = lines_of(&mut child);
    // The address is on stderr; stdout carries the records alone.
    let said = stderr_lines(&mut child);
    let running = Running(child);
    let banner = line_starting(&said, "hookwire gateway: ");
    // Keep reading stderr, so the process never writes into a closed pipe.
    std::thread::spawn(move || said.into_iter().for_each(drop));
    let addr = banner
        .split_whitespace()
        .nth(2)
        .expect("the banner names the address")
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    (running, lines, addr)
}

#[test]
fn one_conversation_alternates_between_two_gateways_behind_nginx_through_tool_loops() {
    let dir = tempfile::tempdir().unwrap();
    let (_demo, declaration) = demo_chain(dir.path(), "replicas");

    let (upstream, seen) = upstream();
    let (gw_a, records_a, addr_a) = gateway(&declaration, &upstream);
    let (gw_b, records_b, addr_b) = gateway(&declaration, &upstream);

    // nginx in the foreground, one process, round robin over the two.
    let port = free_port();
    let prefix = dir.path().join("nginx");
    std::fs::create_dir_all(prefix.join("logs")).unwrap();
    let p = prefix.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nerror_log {p}/logs/error.log;\npid {p}/nginx.pid;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  access_log {p}/logs/access.log;\n  client_body_temp_path {p}/body;\n  proxy_temp_path {p}/proxy;\n\
           fastcgi_temp_path {p}/fastcgi;\n  uwsgi_temp_path {p}/uwsgi;\n  scgi_temp_path {p}/scgi;\n\
           upstream gateways {{ server {addr_a}; server {addr_b}; }}\n\
           server {{ listen 127.0.0.1:{port};\n    location / {{ proxy_pass http://gateways; proxy_buffering off; }} }}\n}}\n"
    );
    std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
    let nginx = Command::new(nginx())
        .arg("-p")
        .arg(&prefix)
        .arg("-e")
        .arg(prefix.join("logs/error.log"))
        .arg("-c")
        .arg(prefix.join("nginx.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run nginx");
    let _nginx = Running(nginx);
    let lb = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(&lb).is_err() {
        assert!(Instant::now() < deadline, "nginx listens within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Three turns, each a tool loop: the user asks, the model proposes
    // `ls` and `rm -rf /` (the second removed), the client sends the
    // result, the model answers.
    let mut history = vec![json!({"role": "system", "content": "You are a shell agent."})];
    for turn in 0..3 {
        history.push(json!({"role": "user",
            "content": format!("turn {turn}: list the files, then mail {EMAIL}")}));
        let (status, answer) = post(&lb, &json!({"model": "demo-model", "messages": history}));
        assert_eq!(status, 200, "turn {turn}: {answer}");
        let message = answer["choices"][0]["message"].clone();
        let calls = message["tool_calls"]
            .as_array()
            .expect("tool calls")
            .clone();
        assert_eq!(calls.len(), 1, "only the permitted call: {message}");
        assert!(
            calls[0]["function"]["arguments"]
                .as_str()
                .unwrap()
                .contains("\"ls\"")
        );
        history.push(message);
        history.push(json!({"role": "tool", "tool_call_id": calls[0]["id"], "content": "a.txt"}));
        let (status, answer) = post(&lb, &json!({"model": "demo-model", "messages": history}));
        assert_eq!(status, 200, "turn {turn}: {answer}");
        let message = answer["choices"][0]["message"].clone();
        let text = message["content"].as_str().unwrap_or_default().to_owned();
        assert!(text.starts_with("done: a.txt"), "turn {turn}: {message}");
        assert!(!text.contains("unpaired"), "turn {turn}: {text}");
        history.push(message);
    }

    let sent = seen.lock().unwrap().clone();
    assert_eq!(sent.len(), 6);
    for body in &sent {
        let text = body.to_string();
        assert!(!text.contains(EMAIL), "raw upstream: {text}");
        assert!(!text.contains("unpaired_tool_result"), "{text}");
        assert!(
            !text.contains("rm -rf"),
            "the removed call never went back: {text}"
        );
    }
    // Both processes served turns of the one conversation: stopped
    // (Ctrl-C), their printed records read to the end.
    let stop = |mut running: Running, rx: std::sync::mpsc::Receiver<String>| {
        let interrupted = Command::new("kill")
            .args(["-INT", &running.0.id().to_string()])
            .status()
            .unwrap();
        assert!(interrupted.success());
        assert!(running.0.wait().unwrap().success());
        rx.iter()
            .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
            .collect::<Vec<Value>>()
    };
    let (a, b) = (stop(gw_a, records_a), stop(gw_b, records_b));
    for (name, records) in [("a", &a), ("b", &b)] {
        let posts = records
            .iter()
            .filter(|r| r["interception_point"] == "post_model_call")
            .count();
        assert!(posts >= 1, "gateway {name} served a turn: {records:?}");
        // Every tool result was governed where it arrived, never refused.
        for r in records {
            assert_ne!(
                r["verdict"]["reason"], "hookwire:unpaired_tool_result",
                "{name}: {r}"
            );
        }
    }
    let post_tool = a
        .iter()
        .chain(&b)
        .filter(|r| r["interception_point"] == "post_tool_call")
        .count();
    assert!(
        post_tool >= 3,
        "a post_tool_call per tool loop at least: {post_tool}"
    );
}
