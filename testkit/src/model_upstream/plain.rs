//! An OpenAI-compatible Chat Completions upstream on a standard-library
//! thread, for the tests that run the built `hookwire` command and need
//! no async runtime: every request is answered with the same two tool
//! calls (`ls` and `rm -rf /`), and its `Authorization` and body are
//! recorded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One request the upstream received: its `Authorization` and its body.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The `Authorization` header, when one came.
    pub authorization: Option<String>,
    /// The body as JSON (`null` when it is not).
    pub body: Value,
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
pub fn upstream() -> (String, Arc<Mutex<Vec<Seen>>>) {
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
