//! The properties hookwire's fuzz targets check, one module per target.
//!
//! Each `fuzz_targets/<name>.rs` is a one-line libFuzzer entry point that
//! calls `<module>::run`; the logic lives here so that it is ordinary,
//! linted Rust, and so that the seed generator (`examples/seed_corpora.rs`)
//! writes inputs in exactly the framing `run` reads.
//!
//! A target fails (panics) only when a documented property breaks: a
//! decoder that panics or loops, a decoded value that does not survive its
//! own encoding, or a host that lets an emission through without the
//! fail-closed guarantees. A refusal of a malformed input is the expected
//! outcome, not a finding.

pub mod chat_request;
pub mod chat_stream;
pub mod declaration;
pub mod hook_payload;
pub mod json_text;
pub mod mcp_message;
pub mod messages_request;
pub mod messages_stream;
pub mod responses_request;
pub mod responses_stream;
pub mod transform;
pub mod wire_approval;
pub mod wire_context;
pub mod wire_verdict;

/// Splits the one-byte selector that several targets put in front of the
/// message bytes: which message kind the rest of the input encodes.
pub fn split_selector(data: &[u8]) -> Option<(u8, &[u8])> {
    data.split_first().map(|(s, rest)| (*s, rest))
}

/// A fresh single-threaded runtime for one input: host code spawns tasks,
/// and a runtime per input drops them with the input instead of letting
/// them pile up across millions of runs.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}
