//! `messages_request`: bytes → the gateway's Anthropic Messages request
//! decoding (`hookwire_gateway::fuzzing::messages_request`).
//!
//! Input: a request body. Properties (asserted by the gateway's entry
//! point, which sees the adapter's private types): decoding never panics;
//! what decodes goes upstream as a body that decodes to the same view; a
//! rewrite of each entry's kind applies and reads back; the model
//! overrides keep the body decodable.

use serde_json::json;

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::messages_request(data);
}

/// The seed inputs: request bodies shaped like the adapter's tests.
pub fn seeds() -> Vec<Vec<u8>> {
    let mixed = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true,
        "system": [{"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {"name": "ls", "description": "list", "input_schema": {"type": "object"}},
            {"type": "bash_20250124", "name": "bash"},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        ],
        "tool_choice": {"type": "auto"},
        "metadata": {"user_id": "u1"},
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "List the files"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "List them.", "signature": "EqQB"},
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "no such file"}]},
                {"type": "text", "text": "Now explain."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
            ]},
        ],
    });
    let plain = json!({
        "model": "claude-haiku-4-5", "max_tokens": 16, "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}],
    });
    let results_only = json!({
        "model": "m", "max_tokens": 1,
        "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}],
    });
    let refused = json!({"model": "m", "messages": [{"role": "system", "content": "x"}]});
    [mixed, plain, results_only, refused]
        .iter()
        .map(|v| v.to_string().into_bytes())
        .collect()
}
