//! The daemons a command hook must not trust, shared by every agent's
//! test: one that is down, one that accepts and never answers, and ones
//! that answer garbage; `each_failure` runs an agent's hook against all
//! of them and checks that each is its agent's own block.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::thread::JoinHandle;

use crate::hooks::hook_as;

/// A fake daemon on loopback, and the thread serving its one connection.
struct Fake {
    url: String,
    serving: JoinHandle<()>,
}

/// A URL nothing listens on.
fn down() -> String {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    url
}

/// Accepts one connection and never answers, until the client closes it.
fn slow() -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let serving = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        while stream.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    Fake { url, serving }
}

/// Answers one request with `status` and `body`.
fn answering(status: &'static str, body: &'static str) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let serving = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = stream.read(&mut buf);
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    Fake { url, serving }
}

/// Runs `agent`'s hook with `payload` against a daemon that is down, one
/// that is slow and three that answer garbage; `blocked` checks that an
/// outcome is the agent's own block and returns its reason.
pub(crate) fn each_failure(
    agent: &str,
    token_file: &Path,
    payload: &[u8],
    blocked: impl Fn(&Output) -> String,
) {
    let reason = blocked(&hook_as(agent, &down(), Some(token_file), payload, &[]));
    assert!(reason.contains("unreachable"), "{agent} down: {reason}");
    let fake = slow();
    let out = hook_as(
        agent,
        &fake.url,
        Some(token_file),
        payload,
        &["--timeout-ms", "300"],
    );
    let reason = blocked(&out);
    assert!(
        reason.contains("no answer within"),
        "{agent} slow: {reason}"
    );
    fake.serving.join().unwrap();
    for (status, body) in [("200 OK", "allow"), ("200 OK", "[]"), ("500 Oops", "{}")] {
        let fake = answering(status, body);
        let reason = blocked(&hook_as(agent, &fake.url, Some(token_file), payload, &[]));
        assert!(
            reason.contains("not a JSON object") || reason.contains("500"),
            "{agent} {status} {body}: {reason}"
        );
        fake.serving.join().unwrap();
    }
}
