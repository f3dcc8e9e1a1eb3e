//! `hookwire gateway` run as an operator runs it — the built command
//! ([`hookwire_testkit::hookwire_bin`]: `cargo build -p hookwire-cli`
//! first, or `HOOKWIRE_BIN`) — for what the gateway does once running:
//!
//! - `governs`: a chat governed by the demo's services with a pooled
//!   upstream key, its records printed; a policy directory in the
//!   gateway's own process; an HTTPS upstream of a private CA;
//! - `example`: `examples/gateway/` as a new user runs it;
//! - `replicas`: two gateway processes behind nginx, one conversation
//!   alternating between them.
//!
//! Shared here: the demo's services and a declaration naming them, the
//! keys, reading the command's lines. The command's own surface (flags,
//! `hookwire gateway token`, refusals at start) is tested with the
//! command in `cli/tests/gateway.rs`.

mod example;
mod governs;
mod replicas;

use std::process::{Command, Stdio};

pub(crate) use hookwire_testkit::child::{
    Running, line_starting, line_with, stderr_lines, stdout_lines as lines_of,
};
use serde_json::json;

/// The pooled upstream key: it must reach the upstream and nothing else.
pub(crate) const UPSTREAM_KEY: &str = "sk-pooled-upstream-key-7f3a9c";
/// What the client itself sends; the gateway must not forward it.
pub(crate) const CLIENT_KEY: &str = "sk-client-key-not-forwarded";

/// The demo's redactor (at `input`) and policy (at `pre_tool_call`)
/// served by `hookwire serve-demo` on free loopback ports, and a
/// declaration binding them (the passthrough at the other points) written
/// into `dir` with document id `id`: the running services and the file.
pub(crate) fn demo_chain(dir: &std::path::Path, id: &str) -> (Running, std::path::PathBuf) {
    let mut demo = Command::new(hookwire_testkit::hookwire_bin())
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
