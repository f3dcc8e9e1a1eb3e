//! `mcp_message`: bytes → the MCP proxy's JSON-RPC decoding, which both
//! sides' messages pass (a client's stdio line or HTTP body, a server's
//! line, body or event), the shapes it governs (`tools/call` parameters
//! and results, `tools/list` pages), and the Server-Sent Events splitter
//! of a streamed upstream answer.
//!
//! Input: one message (or a stream). Properties: nothing panics; an
//! accepted message re-encodes to one that decodes the same; every event
//! the splitter yields stays within its bound.

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_mcp::fuzzing::decode_message(data);
}

/// The committed seeds: one message of each kind, from each side.
pub fn seeds() -> Vec<Vec<u8>> {
    [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":3}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"r":1},"isError":false}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"nextCursor":"c"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no"}}"#,
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}
