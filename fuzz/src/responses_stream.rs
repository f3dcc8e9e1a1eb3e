//! `responses_stream`: bytes → the server-sent event splitter and the
//! gateway's OpenAI Responses stream assembly
//! (`hookwire_gateway::fuzzing::responses_stream`).
//!
//! Input: one byte setting the size of the reads (1-64 bytes), then the
//! stream. Properties: splitting and assembly never panic; an unfinished
//! stream has no answer; a finished one, settled as released and written
//! again by the gateway's writer, assembles into exactly the settled
//! response, its events numbered from 0.

/// One fuzz input.
pub fn run(data: &[u8]) {
    hookwire_gateway::fuzzing::responses_stream(data);
}
