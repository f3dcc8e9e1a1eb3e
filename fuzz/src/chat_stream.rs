//! `chat_stream`: bytes → server-sent events → the gateway's OpenAI Chat
//! Completions stream assembler (`hookwire_gateway::fuzzing::chat_stream`).
//!
//! Input: one byte choosing the read size (1–64 bytes), then the stream.
//! Properties (asserted by the gateway's entry point): assembly never
//! panics; a stream that finishes reads as an answer; the chunks written
//! for the settled answer, as it came and withheld, replayed whole or
//! written incrementally, assemble again to exactly the settled answer.

use serde_json::{Value, json};

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::chat_stream(data);
}

fn stream(chunks: &[Value], separator: &str) -> String {
    let mut out: String = chunks
        .iter()
        .map(|v| format!("data: {v}{separator}"))
        .collect();
    out.push_str("data: [DONE]\n\n");
    out
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The seed inputs: streams like the adapter's tests (text, tool calls
/// with their arguments in pieces, usage, a tool-calls-only answer, one
/// cut before its finish reason).
pub fn seeds() -> Vec<Vec<u8>> {
    let text_and_tools = vec![
        json!({"id": "c1", "created": 5, "model": "m", "system_fingerprint": "fp",
            "choices": [{"delta": {"role": "assistant", "content": "Hel"}}]}),
        chunk(json!({"content": "lo é"}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "t", "function": {"name": "ls", "arguments": "{\"a\""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}),
            json!("tool_calls"),
        ),
        json!({"choices": [], "usage": {"total_tokens": 9}}),
    ];
    let tools_only = vec![
        json!({"id": "c2", "choices": [{"delta": {"role": "assistant", "content": null,
            "tool_calls": [{"index": 0, "id": "a", "function": {"name": "ls", "arguments": "{}"}},
                           {"index": 1, "id": "b", "function": {"name": "cat", "arguments": "not json"}}]}}]}),
        chunk(json!({}), json!("tool_calls")),
    ];
    let length = vec![
        chunk(json!({"role": "assistant", "content": "one "}), Value::Null),
        chunk(json!({"content": "two"}), json!("length")),
    ];
    let mut out = Vec::new();
    for (size, chunks, separator) in [
        (0u8, &text_and_tools, "\n\n"),
        (9, &text_and_tools, "\r\n\r\n"),
        (6, &tools_only, "\n\n"),
        (63, &length, "\n\n"),
    ] {
        let mut input = vec![size];
        input.extend_from_slice(stream(chunks, separator).as_bytes());
        out.push(input);
    }
    let mut cut = vec![16u8];
    cut.extend_from_slice(&stream(&text_and_tools, "\n\n").as_bytes()[..120]);
    out.push(cut);
    out
}
