//! JSON text, exactly: encoding, and decoding that refuses what
//! `serde_json::Value` cannot hold without rounding. The wire carries every
//! `JsonValue` field through here, and [`InvalidJson`] is how a verdict or
//! context names a text it could not take.
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
//! Floats round-trip bit for bit: `encode` writes the shortest text that
//! reads back as the same double, and the crate enables serde_json's
//! `float_roundtrip` so that the parse is correctly rounded.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

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
    let saw_huge_float = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Exact {
        saw_huge_float: &saw_huge_float,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| InvalidJson::Syntax(e.to_string()))?;
    // An out-of-range integer can only have become a float: texts without
    // any float need no scan.
    if saw_huge_float.get()
        && let Some(offset) = out_of_range_integer(text.as_bytes())
    {
        return Err(InvalidJson::IntegerOutOfRange(offset));
    }
    Ok(value)
}

/// The smallest magnitude of a double an out-of-range integer literal
/// becomes: 2^63 (the first below i64::MIN is -2^63 - 1, which rounds to
/// -2^63; the first above u64::MAX rounds to 2^64).
const OVERFLOWED_INTEGER_MAGNITUDE: f64 = 9_223_372_036_854_775_808.0;

/// Builds a [`Value`] like serde_json's own visitor, but refuses duplicate
/// member names and non-finite numbers, and records whether any number was
/// read as a float of a magnitude an overflowed integer literal has.
#[derive(Clone, Copy)]
struct Exact<'a> {
    saw_huge_float: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Exact<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Exact<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::from(u))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        if f.abs() >= OVERFLOWED_INTEGER_MAGNITUDE {
            self.saw_huge_float.set(true);
        }
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup: the member's slot is found once, whether it is
            // new (filled) or a duplicate (refused).
            match members.entry(key) {
                serde_json::map::Entry::Occupied(_) => {
                    return Err(de::Error::custom("duplicate object member name"));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(self)?);
                }
            }
        }
        Ok(Value::Object(members))
    }
}

/// The byte offset of the first integer literal of `text` (well-formed JSON)
/// that fits neither i64 (negative) nor u64 (non-negative).
fn out_of_range_integer(text: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => i = string_end(text, i + 1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                let negative = b == b'-';
                if negative {
                    i += 1;
                }
                let digits_start = i;
                while text.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                let digits = &text[digits_start..i];
                let integer = !matches!(text.get(i), Some(b'.' | b'e' | b'E'));
                while text
                    .get(i)
                    .is_some_and(|c| matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
                {
                    i += 1;
                }
                if integer && !fits_64_bits(digits, negative) {
                    return Some(start);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The index just past the closing quote of the string whose contents start
/// at `i` (or the end of `text`).
fn string_end(text: &[u8], mut i: usize) -> usize {
    while let Some(rest) = text.get(i..) {
        match rest.iter().position(|&c| c == b'"' || c == b'\\') {
            Some(p) if rest[p] == b'\\' => i += p + 2,
            Some(p) => return i + p + 1,
            None => break,
        }
    }
    text.len()
}

/// Whether the decimal magnitude `digits` fits u64 (or i64 when negative).
fn fits_64_bits(digits: &[u8], negative: bool) -> bool {
    const U64_MAX: &[u8] = b"18446744073709551615";
    const I64_MIN_MAGNITUDE: &[u8] = b"9223372036854775808";
    let first_significant = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let digits = &digits[first_significant..];
    let max = if negative { I64_MIN_MAGNITUDE } else { U64_MAX };
    // Equal-length ASCII digit strings compare like the numbers they spell.
    digits.len() < max.len() || (digits.len() == max.len() && digits <= max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn boundaries_of_the_64_bit_range() {
        assert_eq!(
            decode("18446744073709551615").unwrap(),
            json!(u64::MAX),
            "u64::MAX is exact"
        );
        assert_eq!(decode("-9223372036854775808").unwrap(), json!(i64::MIN));
        assert_eq!(
            decode("18446744073709551616"),
            Err(InvalidJson::IntegerOutOfRange(0))
        );
        assert_eq!(
            decode("-9223372036854775809"),
            Err(InvalidJson::IntegerOutOfRange(0))
        );
        assert_eq!(
            decode(r#"{"a":[1.5, "18446744073709551616", 99999999999999999999999]}"#),
            Err(InvalidJson::IntegerOutOfRange(35))
        );
        // The scan is skipped only when no float reaches 2^63: small floats
        // beside an out-of-range integer still see it refused, and floats
        // at the threshold written as floats are kept.
        assert_eq!(
            decode("[0.25, -9223372036854775809, 0.5]"),
            Err(InvalidJson::IntegerOutOfRange(7))
        );
        assert_eq!(
            decode("[0.25, 9223372036854775807, -9223372036854775808]").unwrap(),
            json!([0.25, i64::MAX, i64::MIN])
        );
        assert_eq!(
            decode("[9223372036854775808.0, -9.3e18]").unwrap(),
            json!([9_223_372_036_854_775_808.0_f64, -9.3e18])
        );
    }

    #[test]
    fn floats_and_integers_stay_distinct() {
        let one = decode("1").unwrap();
        let one_f = decode("1.0").unwrap();
        assert!(one.is_u64());
        assert!(one_f.is_f64());
        assert_ne!(one, one_f);
        assert_eq!(decode("1.5").unwrap(), json!(1.5));
        assert_eq!(encode(&one_f), "1.0");
        assert_eq!(decode("1e2").unwrap().as_f64(), Some(100.0));
        assert_eq!(decode("-0").unwrap().as_f64(), Some(0.0));
        assert_eq!(decode("1e-400").unwrap().as_f64(), Some(0.0));
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        for text in ["1e400", "-1e400", "[1.7976931348623159e308]"] {
            assert!(
                matches!(decode(text), Err(InvalidJson::Syntax(_))),
                "{text} accepted"
            );
        }
    }

    #[test]
    fn syntax_errors_do_not_echo_the_value() {
        let cases = [
            "",
            "   ",
            "{",
            "[1,]",
            "01",
            "NaN",
            "'secret'",
            "\"secret",
            "\"\\ud800 secret\"",
            "\"\\udc00\"",
            "\"a\u{0}b\"",
            "1 2",
            "{\"secret\":1,\"secret\":2}",
        ];
        for text in cases {
            match decode(text) {
                Err(InvalidJson::Syntax(msg)) => assert!(!msg.contains("secret"), "{msg}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn scan_skips_strings_and_escapes() {
        let text = r#"{"k\"18446744073709551616":"\\","n":[0.5,18446744073709551615,-0]}"#;
        assert_eq!(
            decode(text).unwrap(),
            json!({"k\"18446744073709551616": "\\", "n": [0.5, u64::MAX, -0.0]})
        );
        assert_eq!(out_of_range_integer(b"\"unterminated 1"), None);
        assert_eq!(out_of_range_integer(b"[1.0, 1e99999999999999999999]"), None);
        assert_eq!(
            out_of_range_integer(b"[0.1, -00000000000000000000001]"),
            None
        );
    }

    #[test]
    fn nesting_is_bounded_without_overflowing_the_stack() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(decode(&deep), Err(InvalidJson::Syntax(_))));
    }

    #[test]
    fn encode_is_compact_and_round_trips() {
        let v = json!({"b": [1, 1.0, -2, null, true], "a": "é😀\u{1}\"", "c": {}});
        let text = encode(&v);
        assert!(!text.contains(' '));
        assert_eq!(decode(&text).unwrap(), v);
        let Value::Object(m) = &v else { unreachable!() };
        assert_eq!(encode_object(m), text);
    }
}
