//! `hookwire mcp`: a Model Context Protocol proxy that is a hookwire host.
//! To an MCP client it is the server; to the real server it is a client;
//! every `tools/call` between them passes `pre_tool_call` and
//! `post_tool_call` of one hookwire session per MCP session, and whatever
//! cannot be governed fails closed as a tool error or a JSON-RPC error,
//! never as a forwarded, ungoverned call. docs/mcp.md is the contract.
//!
//! | module | role |
//! |---|---|
//! | `jsonrpc` | JSON-RPC 2.0 messages: exact, bounded decoding and classification, error codes |
//! | `mediation` | the mediation table: every method and member, governed, inert or refused |
//! | `core` | the pure mapping: MCP message → point, verdict → MCP answer (no I/O) |
//! | `session` | one MCP session: initialize → `agent_startup`, relays, `tools/call`, cancellation, the end |
//! | `upstream` | the real server: a child over stdio, or Streamable HTTP |
//! | `stdio` | the stdio downstream (one session on stdin/stdout) |
//! | `http` | the Streamable HTTP downstream: authentication, session binding, the session table |
//! | `origin` | the browser origins the HTTP downstream accepts |
//! | `hidden` | hidden tools as a binding kind of the chain |
//! | `ids` | the random session ids every downstream and the parked session use |
//! | `lines` | bounded newline-delimited reading (stdio) |
//! | `metrics` | the `hookwire_mcp_*` series |
//! | `settings` | [`Settings`]: the proxy's host, upstream, bounds, downstream and metrics endpoint, validated from [`settings::RawSettings`] |
//! | `run` | [`run`]: the proxy run from its settings until shut down (what `hookwire mcp` runs) |
//!
//! The official Rust SDK (`rmcp`) supplies the model types the governed
//! shapes are checked against (`core`); the transports are this crate's
//! own, because a proxy relays every message it does not govern as the
//! JSON it is, ids mapped, which rmcp's service layer (typed, closed
//! request and notification enums, answering for itself) does not do.

mod config;
mod core;
mod error;
mod hidden;
mod http;
mod ids;
pub mod jsonrpc;
mod lines;
pub mod mediation;
mod metrics;
mod origin;
mod run;
mod session;
pub mod settings;
mod stdio;
mod upstream;

pub use config::{DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_SESSIONS_PER_CLIENT, McpConfig};
pub use error::Error;
pub use hidden::{HIDDEN_BINDING_ID, HIDDEN_KIND, HIDDEN_REASON, HiddenTools, with_hidden_binding};
/// The clients file (`NAME SHA256-HEX` a line) the Streamable HTTP
/// downstream admits, read again when it changes: the edges' one kind.
pub use hookwire_edge::clients::{Clients, WatchedClients};
/// TLS toward a Streamable HTTP upstream ([`McpConfig::upstream_tls`]):
/// the edges' shared client options.
pub use hookwire_edge::https::UpstreamTls;
pub use hookwire_edge::token::{MAX_TOKEN_BYTES, sha256_hex as token_sha256};
pub use http::{HttpProxy, serve_http};
pub use mediation::Mediation;
pub use metrics::{CallOutcome, McpMetrics};
pub use origin::Origins;
pub use run::run;
pub use session::McpSession;
pub use settings::Settings;
pub use stdio::serve_stdio;
pub use upstream::{Failure, HttpClient, UpstreamSpec};

/// Entry points for the fuzz targets of `fuzz/` (not an API).
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    /// Decodes one message as either side's would be, and checks that
    /// what is accepted re-encodes to a message that decodes the same;
    /// splits the bytes as a Server-Sent Events stream, bounded.
    pub fn decode_message(bytes: &[u8]) {
        let max = 1 << 16;
        if let Ok(m) = crate::jsonrpc::decode(bytes, max) {
            let again = crate::jsonrpc::decode(m.encode().as_bytes(), usize::MAX)
                .expect("an accepted message re-encodes to an accepted one");
            assert_eq!(again, m);
            if let crate::jsonrpc::Message::Request { params, .. } = &m {
                let _ = crate::core::call_params(params);
                let _ = crate::core::tool_page(params);
            }
            if let crate::jsonrpc::Message::Response { outcome: Ok(r), .. } = &m {
                let _ = crate::core::call_result(r);
            }
        }
        // The same bytes as a streamed answer, cut in two, parse as
        // they do whole.
        let mut events = hookwire_edge::sse::Parser::new(1024);
        let (a, b) = bytes.split_at(bytes.len() / 2);
        let cut = events.feed(a).and_then(|mut e| {
            e.extend(events.feed(b)?);
            Ok(e)
        });
        let whole = hookwire_edge::sse::Parser::new(1024).feed(bytes);
        assert_eq!(cut.is_ok(), whole.is_ok());
        if let (Ok(cut), Ok(whole)) = (cut, whole) {
            assert_eq!(cut, whole);
            assert!(
                cut.iter().all(|e| e.data.len() <= 1024),
                "an event over its bound"
            );
        }
    }
}
