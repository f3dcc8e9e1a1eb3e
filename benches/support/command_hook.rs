//! A command hook: the process-per-decision baseline of `benches/load`.
//!
//! This is how command hooks work in agent frameworks that govern by
//! spawning a program per decision: the host writes the context (the
//! AGENT-HOOKS-0.1 JSON object) on the program's stdin, closes it, and reads
//! one verdict object from its stdout. This program parses and checks the
//! context like any real hook would, then answers `allow` (or a
//! `context_invalid`-style deny when the input is not a context).

use std::io::{Read, Write};

fn main() {
    let mut input = String::new();
    let verdict = match std::io::stdin().read_to_string(&mut input) {
        Ok(_) => match serde_json::from_str(&input).map(hookwire::AgentContext::from_json) {
            Ok(Ok(_ctx)) => r#"{"decision":"allow"}"#,
            _ => r#"{"decision":"deny","reason":"hook:context_unreadable"}"#,
        },
        Err(_) => r#"{"decision":"deny","reason":"hook:stdin_unreadable"}"#,
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(verdict.as_bytes());
    let _ = out.write_all(b"\n");
}
