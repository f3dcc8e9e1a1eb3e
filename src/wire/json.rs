//! JSON text for `JsonValue` fields: encoding, and exact decoding that
//! refuses what `serde_json::Value` cannot hold without rounding.

use serde_json::Value;

/// Why a JSON text was refused. Messages never quote the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidJson {
    /// Not a single well-formed JSON value (RFC 8259), or a lone surrogate.
    #[error("not well-formed JSON: {0}")]
    Syntax(String),
    /// An integer literal outside the signed/unsigned 64-bit range, which
    /// would otherwise be silently rounded to a double.
    #[error("integer literal beyond the 64-bit range at byte {0}; string-encode large identifiers (§4.4)")]
    IntegerOutOfRange(usize),
}

/// Encodes a value as compact JSON text.
pub fn encode(value: &Value) -> String {
    todo!("wire helper")
}

/// Decodes JSON text exactly: integers stay integers, and an integer literal
/// that does not fit in i64/u64 is refused instead of rounded.
pub fn decode(text: &str) -> Result<Value, InvalidJson> {
    todo!("wire helper")
}
