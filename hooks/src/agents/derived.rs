//! The pairing id the core gives a tool call of an agent that gives its
//! calls none (Gemini CLI, Cursor, GitHub Copilot CLI): derived from the
//! call's name and input, so that its pre and post events meet.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The pairing id of a call of `name` with `input`, for agents that give
/// a tool call no id: `PREFIX:` and the first 16 hex digits of the
/// SHA-256 of both, so that the pre and post events of one call meet.
pub(crate) fn derived_id(prefix: &str, name: &str, input: &Value) -> String {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(input.to_string().as_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{prefix}:{hex}")
}
