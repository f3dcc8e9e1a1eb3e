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
//! Floats round-trip bit for bit: `encode` writes the shortest text that
//! reads back as the same double, and the crate enables serde_json's
//! `float_roundtrip` so that the parse is correctly rounded.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::canonical::MAX_SAFE_INTEGER;

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
    let notes = Placed {
        max_depth,
        ..Placed::default()
    };
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

/// The smallest magnitude of a double an out-of-range integer literal
/// becomes: 2^63 (the first below i64::MIN is -2^63 - 1, which rounds to
/// -2^63; the first above u64::MAX rounds to 2^64).
const OVERFLOWED_INTEGER_MAGNITUDE: f64 = 9_223_372_036_854_775_808.0;

/// What one parse notes besides the value it builds: [`decode`] only what
/// decides whether to scan, [`read`] where it is.
trait Notes {
    /// An array or object opens; `Err` (why) when it nests too deep.
    fn open(&self) -> Result<(), String>;
    /// The array or object that opened last has closed.
    fn close(&self);
    /// The value of member `key` is read next.
    fn member(&self, key: &str);
    /// Item `index` of an array is read next.
    fn item(&self, index: usize);
    /// The member or item announced last has been read.
    fn left(&self);
    /// A number was read (`Some` when it came as a float).
    fn number(&self, float: Option<f64>);
}

/// What [`decode`] notes: whether any float had the magnitude of an
/// overflowed integer literal.
#[derive(Default)]
struct Plain {
    saw_huge_float: Cell<bool>,
}

impl Notes for Plain {
    fn open(&self) -> Result<(), String> {
        Ok(())
    }
    fn close(&self) {}
    fn member(&self, _key: &str) {}
    fn item(&self, _index: usize) {}
    fn left(&self) {}
    fn number(&self, float: Option<f64>) {
        if float.is_some_and(|f| f.abs() >= OVERFLOWED_INTEGER_MAGNITUDE) {
            self.saw_huge_float.set(true);
        }
    }
}

/// What [`read`] notes: the pointer of the value being read, the depth,
/// and the pointer of every number.
#[derive(Default)]
struct Placed {
    max_depth: usize,
    depth: Cell<usize>,
    /// The pointer of the value being read; after a failure, of where the
    /// parse stopped.
    path: RefCell<String>,
    /// Where each announced segment of `path` starts.
    segments: RefCell<Vec<usize>>,
    /// The pointer of every number read, in document order.
    numbers: RefCell<Vec<String>>,
}

impl Placed {
    /// Appends one reference token to the path.
    fn enter(&self, token: &str) {
        let mut path = self.path.borrow_mut();
        self.segments.borrow_mut().push(path.len());
        path.push('/');
        path.push_str(token);
    }
}

impl Notes for Placed {
    fn open(&self) -> Result<(), String> {
        let depth = self.depth.get() + 1;
        self.depth.set(depth);
        if depth > self.max_depth {
            return Err(format!(
                "the document nests deeper than {} levels",
                self.max_depth
            ));
        }
        Ok(())
    }
    fn close(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }
    fn member(&self, key: &str) {
        self.enter(&key.replace('~', "~0").replace('/', "~1"));
    }
    fn item(&self, index: usize) {
        self.enter(&index.to_string());
    }
    fn left(&self) {
        if let Some(start) = self.segments.borrow_mut().pop() {
            self.path.borrow_mut().truncate(start);
        }
    }
    fn number(&self, _float: Option<f64>) {
        let at = self.path.borrow().clone();
        self.numbers.borrow_mut().push(at);
    }
}

/// Builds a [`Value`] like serde_json's own visitor, but refuses duplicate
/// member names and non-finite numbers, and tells its [`Notes`] where it
/// goes and which numbers it reads.
struct Exact<'a, N> {
    notes: &'a N,
}

impl<N> Clone for Exact<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for Exact<'_, N> {}

impl<'de, N: Notes> DeserializeSeed<'de> for Exact<'_, N> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, N: Notes> Visitor<'de> for Exact<'_, N> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        self.notes.number(None);
        Ok(Value::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        self.notes.number(None);
        Ok(Value::from(u))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        self.notes.number(Some(f));
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
        self.notes.open().map_err(de::Error::custom)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Item {
            exact: self,
            index: items.len(),
        })? {
            items.push(item);
        }
        self.notes.close();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.notes.open().map_err(de::Error::custom)?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup: the member's slot is found once, whether it is
            // new (filled) or a duplicate (refused).
            match members.entry(key) {
                serde_json::map::Entry::Occupied(slot) => {
                    self.notes.member(slot.key());
                    return Err(de::Error::custom("duplicate object member name"));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    self.notes.member(slot.key());
                    let value = map.next_value_seed(self)?;
                    self.notes.left();
                    slot.insert(value);
                }
            }
        }
        self.notes.close();
        Ok(Value::Object(members))
    }
}

/// One array item, announced to the notes while it is read (and only once
/// it is known to exist, so that a missing separator is placed on the
/// array).
struct Item<'a, N> {
    exact: Exact<'a, N>,
    index: usize,
}

impl<'de, N: Notes> DeserializeSeed<'de> for Item<'_, N> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.exact.notes.item(self.index);
        let item = d.deserialize_any(self.exact)?;
        self.exact.notes.left();
        Ok(item)
    }
}

/// The byte offset of the first integer literal of `text` (well-formed JSON)
/// that fits neither i64 (negative) nor u64 (non-negative).
fn out_of_range_integer(text: &[u8]) -> Option<usize> {
    number_tokens(text)
        .find(|(_, token)| {
            let (negative, digits) = sign_and_digits(token);
            is_integer(token) && !fits_64_bits(digits, negative)
        })
        .map(|(offset, _)| offset)
}

/// The number tokens of `text` (well-formed JSON) with their byte offsets,
/// in order: a lexical scan that skips strings, whose digits are no
/// numbers.
fn number_tokens(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while let Some(&b) = text.get(i) {
            match b {
                b'"' => i = string_end(text, i + 1),
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    i += 1;
                    while text.get(i).is_some_and(|c| {
                        matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                    }) {
                        i += 1;
                    }
                    return Some((start, &text[start..i]));
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// Whether a number token is an integer literal: no fraction, no exponent.
fn is_integer(token: &[u8]) -> bool {
    !token.iter().any(|c| matches!(c, b'.' | b'e' | b'E'))
}

/// A number token's sign and its digits up to any fraction or exponent
/// (for an integer literal, its magnitude).
fn sign_and_digits(token: &[u8]) -> (bool, &[u8]) {
    let (negative, unsigned) = match token.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, token),
    };
    let digits = unsigned.iter().take_while(|c| c.is_ascii_digit()).count();
    (negative, &unsigned[..digits])
}

/// Whether a number token is an integer literal beyond ±(2^53 − 1).
fn is_wide_integer(token: &[u8]) -> bool {
    let (_, digits) = sign_and_digits(token);
    is_integer(token)
        && std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
            .is_none_or(|m| m > MAX_SAFE_INTEGER)
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

    /// The pointer, line and column of a refused document, and its problem.
    fn refused(text: &str) -> (String, usize, usize, String) {
        match read(text, 4) {
            Err(InvalidJson::Document {
                pointer,
                line,
                column,
                problem,
            }) => (pointer, line, column, problem),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn read_reads_what_decode_reads_and_names_wide_integers_by_pointer() {
        let text = r#"{"a": [9007199254740991, -9007199254740992], "b": {"c~/": 1e300, "d": 18446744073709551616, "e": "1e999 99999999999999999999"}, "f": [-0, -0.0]}"#;
        let document = read(text, 4).unwrap();
        assert_eq!(document.wide_integers, ["/a/1", "/b/d"]);
        assert!(document.value["f"][0].is_u64() && document.value["f"][1].is_f64());
        assert_eq!(document.value["a"][0], json!(9_007_199_254_740_991_u64));
        assert_eq!(
            document.value["b"]["d"],
            json!(18_446_744_073_709_551_616.0_f64)
        );
        // Where decode takes a text, read takes it as the same value.
        let exact =
            r#"{"a": [1, -2, 3.5, 1e3, true, false, null, "x\u00e9\ud83d\ude00\n"], "b": {}}"#;
        let document = read(exact, 4).unwrap();
        assert_eq!(document.value, decode(exact).unwrap());
        assert!(document.wide_integers.is_empty());
    }

    #[test]
    fn read_refuses_with_the_place_and_without_the_value() {
        let (pointer, line, column, problem) = refused(r#"{"a": {"secret": 1, "secret": 2}}"#);
        assert_eq!(pointer, "/a/secret");
        assert_eq!((line, column), (1, 28));
        assert!(problem.contains("duplicate"), "{problem}");
        // Columns count characters; lines start at 1.
        let (pointer, line, column, _) = refused("{\n  \"é\": [1,\n   ]}");
        // A trailing comma or a missing separator is the array's, not an
        // item's.
        assert_eq!((pointer.as_str(), line, column), ("/é", 3, 4));
        let (pointer, ..) = refused(r#"{"a": {"b~": [1 2]}}"#);
        assert_eq!(pointer, "/a/b~0");
        let (pointer, ..) = refused(r#"{"a": [1, {"b": x}]}"#);
        assert_eq!(pointer, "/a/1/b");
        let (pointer, _, _, problem) = refused(r#"{"a": [{"b": {"c": {}}}]}"#);
        assert_eq!(pointer, "/a/0/b/c");
        assert!(problem.contains("deeper than 4 levels"), "{problem}");
        assert!(read(r#"{"a": [{"b": {"c": 1}}]}"#, 4).is_ok());
        for text in [
            "",
            "{",
            "{} x",
            r#"{"a": 1e400}"#,
            r#"{"secret": "\ud800"}"#,
        ] {
            let (_, _, _, problem) = refused(text);
            assert!(!problem.contains("secret"), "{problem}");
            assert!(!problem.contains("at line"), "{problem}");
        }
        // An error on a byte inside a multi-byte character is placed on
        // that character.
        let (_, line, column, _) = refused("{\"\\\u{e9}\": 1}");
        assert_eq!((line, column), (1, 4));
    }
}
