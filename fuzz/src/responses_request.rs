//! `responses_request`: bytes → the gateway's OpenAI Responses request
//! decoding (`hookwire_gateway::fuzzing::responses_request`).
//!
//! Input: a request body. Properties: decoding never panics; a decoded
//! request is bounded, takes a rewrite of its kind at every entry, and
//! its body decodes again to the rewritten view.

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::responses_request(data);
}
