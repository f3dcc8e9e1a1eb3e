//! `chat_request`: bytes → the gateway's OpenAI Chat Completions request
//! decoding (`hookwire_gateway::fuzzing::chat_request`).
//!
//! Input: a request body. Properties (asserted by the gateway's entry
//! point, which sees the adapter's private types): decoding never panics;
//! what decodes goes upstream as a body that decodes to the same view; a
//! rewrite of each entry's kind applies and reads back, other entries
//! refuse one; the model overrides (system prompt prepended or replaced)
//! keep the body decodable.

use serde_json::json;

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::chat_request(data);
}

/// The seed inputs: request bodies shaped like the adapter's tests.
pub fn seeds() -> Vec<Vec<u8>> {
    let mapped = json!({
    "model": "gpt", "stream": true,
    "tools": [{"type": "function", "function": {"name": "ls"}},
              {"type": "function", "function": {"name": "cat"}},
              {"type": "function", "function": {"name": "ls"}}],
    "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [
            {"type": "text", "text": "look at "},
            {"type": "image_url", "image_url": {"url": "data:x"}},
            {"type": "text", "text": "this"}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "function", "name": "old", "content": "x"}
    ]});
    let parts = json!({"model": "m", "n": 1, "max_completion_tokens": 9, "messages": [
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "u"}},
            {"type": "text", "text": "alice@x"},
            {"type": "input_audio", "input_audio": {}},
            {"type": "text", "text": " hi"}]},
        {"role": "system", "content": [{"type": "text", "text": "policy"}]},
        {"role": "user", "content": "bob@x"},
        {"role": "tool", "tool_call_id": "c", "content": "secret"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "v"}}]}
    ]});
    let plain = json!({"model": "m", "temperature": 0.2,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]});
    let refused = json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]});
    let two = json!({"model": "m", "n": 2, "messages": [{"role": "user", "content": "hi"}]});
    [mapped, parts, plain, refused, two]
        .iter()
        .map(|v| v.to_string().into_bytes())
        .collect()
}
