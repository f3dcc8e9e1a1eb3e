//! `messages_stream`: bytes → server-sent events → the gateway's Anthropic
//! Messages stream assembler (`hookwire_gateway::fuzzing::messages_stream`).
//!
//! Input: one byte choosing the read size (1–64 bytes), then the stream.
//! Properties (asserted by the gateway's entry point): assembly never
//! panics; a stream that finishes reads as an answer; the events written
//! for the settled answer, replayed whole or written incrementally,
//! assemble again, the replay to exactly the settled answer.

use serde_json::{Value, json};

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::messages_stream(data);
}

fn stream(events: &[Value]) -> String {
    events
        .iter()
        .map(|v| {
            format!(
                "event: {}\ndata: {v}\n\n",
                v["type"].as_str().unwrap_or("x")
            )
        })
        .collect()
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
        "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}})
}

fn delta(index: usize, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn block(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn end(reason: &str) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ]
}

/// The seed inputs: streams as the API sends them (thinking, text, tool
/// calls with their input in pieces, server tools, citations, an error).
pub fn seeds() -> Vec<Vec<u8>> {
    let mut tools = vec![
        start(),
        block(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Two files."}),
        ),
        delta(0, json!({"type": "signature_delta", "signature": "EqQB"})),
        stop(0),
        json!({"type": "ping"}),
        block(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "text_delta", "text": "Reading "})),
        delta(1, json!({"type": "text_delta", "text": "both. é"})),
        stop(1),
        block(
            2,
            json!({"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {}}),
        ),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"pa"}),
        ),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "th\": \"a\"}"}),
        ),
        stop(2),
    ];
    tools.extend(end("tool_use"));
    let mut server = vec![
        start(),
        block(
            0,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"query\":\"q\"}"}),
        ),
        stop(0),
        block(
            1,
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        ),
        stop(1),
        block(2, json!({"type": "text", "text": ""})),
        delta(
            2,
            json!({"type": "citations_delta", "citation": {"type": "web_search_result_location", "url": "https://x"}}),
        ),
        delta(2, json!({"type": "text_delta", "text": "Found it."})),
        stop(2),
        block(3, json!({"type": "redacted_thinking", "data": "abc"})),
        stop(3),
    ];
    server.extend(end("end_turn"));
    let mut sequence = vec![
        start(),
        block(0, json!({"type": "text", "text": "one "})),
        delta(0, json!({"type": "text_delta", "text": "two"})),
        stop(0),
    ];
    sequence.push(json!({"type": "message_delta",
        "delta": {"stop_reason": "stop_sequence", "stop_sequence": "END"}, "usage": {"output_tokens": 3}}));
    sequence.push(json!({"type": "message_stop"}));
    let error = vec![
        start(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ];
    let mut out = Vec::new();
    for (size, events) in [(0u8, &tools), (6, &server), (63, &sequence), (1, &error)] {
        let mut input = vec![size];
        input.extend_from_slice(stream(events).as_bytes());
        out.push(input);
    }
    out
}
