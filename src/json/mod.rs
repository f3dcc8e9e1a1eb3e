//! JSON text, exactly: encoding, and decoding that refuses what
//! `serde_json::Value` cannot hold without rounding. The wire carries every
//! `JsonValue` field through here, and [`InvalidJson`] is how a verdict or
//! context names a text it could not take. [`read`] is the same reader for
//! a document that a loader reports on by place (the host declaration).
//!
//! Decoding is one strict parse plus, only when the parse produced a
//! floating-point number of integer-overflowing magnitude, one linear
//! lexical scan of the text:
//!
//! - the parse refuses malformed text, lone surrogates, non-finite numbers
//!   (`1e400`), nesting beyond serde_json's recursion limit, and duplicate
//!   member names (I-JSON, RFC 7493 §2.3: a duplicate is read differently by
//!   different parsers, so it cannot be carried exactly);
//! - serde_json (without `arbitrary_precision`) silently turns an integer
//!   literal beyond the i64/u64 range into a double. Such a literal always
//!   surfaces as a float of magnitude at least 2^63 (below i64::MIN or
//!   above u64::MAX), so when the parse saw one the scan looks for integer
//!   tokens (no `.`, `e` or `E`) that do not fit and refuses them. A text
//!   whose floats are all smaller (`0.25`) is not scanned.
//!
//! [`read`] runs the same parse, noting the RFC 6901 pointer of the value
//! being read (so that a refusal names its place) and bounding the nesting
//! depth as it goes; the same scan, over every number token, then names
//! the integer tokens beyond ±(2^53 − 1) by pointer instead of refusing
//! them, for the loader to judge.
//!
//! The parse's visitor is `exact`, what it notes on the way `notes`, the
//! lexical scan `numbers`.
//!
//! Floats round-trip bit for bit: `encode` writes the shortest text that
//! reads back as the same double, and the crate enables serde_json's
//! `float_roundtrip` so that the parse is correctly rounded.

mod exact;
mod notes;
mod numbers;
#[cfg(test)]
mod tests;

use serde::de::DeserializeSeed;
use serde_json::{Map, Value};

use exact::Exact;
use notes::{Placed, Plain};
use numbers::{is_wide_integer, number_tokens, out_of_range_integer};

/// Why a JSON text was refused. Messages never quote the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidJson {
    /// Not a single well-formed JSON value (RFC 8259), or a lone surrogate.
    #[error("not well-formed JSON: {0}")]
    Syntax(String),
    /// An integer literal outside the signed/unsigned 64-bit range, which
    /// would otherwise be silently rounded to a double.
    #[error(
        "integer literal beyond the 64-bit range at byte {0}; string-encode large identifiers (§4.4)"
    )]
    IntegerOutOfRange(usize),
    /// A document [`read`] refused, and where: malformed, a duplicate
    /// member name, a non-finite number, or nested too deep.
    #[error("{problem} (line {line}, column {column})")]
    Document {
        /// RFC 6901 pointer of the value being read (`""`: the root).
        pointer: String,
        /// The line of the refused text, from 1.
        line: usize,
        /// The column of the refused text in characters, from 1.
        column: usize,
        /// What was wrong, without the value.
        problem: String,
    },
}

/// Encodes a value as compact JSON text.
pub fn encode(value: &Value) -> String {
    // Serializing a `Value` cannot fail: keys are strings and numbers are
    // finite. Should it ever, the empty text is refused by every receiver.
    serde_json::to_string(value).unwrap_or_default()
}

/// Encodes an object as compact JSON text, without wrapping it in a
/// [`Value`] first.
pub(crate) fn encode_object(map: &Map<String, Value>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

/// Decodes JSON text exactly: integers stay integers, and an integer literal
/// that does not fit in i64/u64 is refused instead of rounded.
pub fn decode(text: &str) -> Result<Value, InvalidJson> {
    let notes = Plain::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Exact { notes: &notes }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| InvalidJson::Syntax(e.to_string()))?;
    // An out-of-range integer can only have become a float: texts without
    // any float need no scan.
    if notes.saw_huge_float.get()
        && let Some(offset) = out_of_range_integer(text.as_bytes())
    {
        return Err(InvalidJson::IntegerOutOfRange(offset));
    }
    Ok(value)
}

/// A document read by [`read`]: its value, and where it carries integers
/// that not every reader keeps exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The document's value; an integer token beyond 64 bits is a double.
    pub value: Value,
    /// RFC 6901 pointers of the integer tokens (no fraction, no exponent)
    /// beyond ±(2^53 − 1), the range a double holds exactly (I-JSON,
    /// RFC 7493 §2.2), in document order.
    pub wide_integers: Vec<String>,
}

/// Reads a JSON document under the rules of [`decode`] (well-formed, no
/// duplicate member names, finite numbers), nested at most `max_depth`
/// levels (the root's array or object is level 1), for a loader that
/// reports by place: a refusal is an [`InvalidJson::Document`] naming the
/// pointer, line and column where it was found, and an integer token
/// beyond ±(2^53 − 1) is not refused but named in
/// [`Document::wide_integers`]. Every integer token reads as an integer:
/// `-0` is 0, where [`decode`] keeps serde_json's double -0.0.
pub fn read(text: &str, max_depth: usize) -> Result<Document, InvalidJson> {
    let notes = Placed::new(max_depth);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Exact { notes: &notes }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| refused_at(text, &notes, &e))?;
    // serde_json visits every number token once, in text order: the k-th
    // number noted is the k-th token the scan finds.
    let numbers = notes.numbers.into_inner();
    debug_assert_eq!(numbers.len(), number_tokens(text.as_bytes()).count());
    let mut value = value;
    let mut wide_integers = Vec::new();
    for (pointer, (_, token)) in numbers.into_iter().zip(number_tokens(text.as_bytes())) {
        if token == b"-0" {
            // An integer token reads as an integer, as a schema validator
            // reads it (serde_json would make it the double -0.0).
            if let Some(zero) = value.pointer_mut(&pointer) {
                *zero = Value::from(0);
            }
        } else if is_wide_integer(token) {
            wide_integers.push(pointer);
        }
    }
    Ok(Document {
        value,
        wide_integers,
    })
}

/// The refusal of a document, at the place the parse had reached.
fn refused_at(text: &str, notes: &Placed, e: &serde_json::Error) -> InvalidJson {
    let shown = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let problem = shown.strip_suffix(&position).unwrap_or(&shown).to_owned();
    InvalidJson::Document {
        pointer: notes.path.borrow().clone(),
        line: e.line().max(1),
        column: char_column(text, e.line(), e.column()),
        problem,
    }
}

/// The column, in characters from 1, of the byte serde_json names by its
/// `line` and `column` (both from 1, the column in bytes). A byte inside a
/// multi-byte character counts as that character.
fn char_column(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let rest = text.get(start..).unwrap_or_default();
    let mut before = column.saturating_sub(1).min(rest.len());
    while !rest.is_char_boundary(before) {
        before -= 1;
    }
    rest[..before].chars().count() + 1
}
