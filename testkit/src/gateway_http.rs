//! A gateway's Chat Completions route called the plain way (HTTP/1.0 over
//! a `TcpStream`, no async runtime), for the tests that drive the built
//! `hookwire gateway` command.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// POSTs `body` to `/v1/chat/completions` at `addr` with `key` as the
/// client's API key and `session` as its `x-hookwire-session`; the
/// status and the JSON answer (`null` when it is not JSON).
pub fn chat(addr: &str, key: &str, session: &str, body: &Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect to the gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nx-hookwire-session: {session}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}
