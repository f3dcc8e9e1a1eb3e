//! Steps 1 and 2 of the load pipeline: reading a document from a file and
//! parsing its text under the §7.7 bounds.
//!
//! The parser is a small strict RFC 8259 reader of our own rather than
//! `serde_json::from_str`, because the loader needs three things a generic
//! parser throws away: duplicate keys (refused, so a settings validator and
//! the loader never disagree on which value loaded), the nesting depth
//! (bounded at 32 while parsing, not after), and which numbers were written
//! as integer tokens beyond ±(2^53 − 1) (a generic parser turns them into
//! doubles, after which nobody can tell). Those tokens are reported back
//! by pointer for step 6.

use std::io::Read as _;
use std::path::Path;

use hookwire::canonical::MAX_SAFE_INTEGER;
use serde_json::{Map, Number, Value};

use super::limits::{MAX_DEPTH, MAX_DOCUMENT_BYTES};
use crate::refusal::{Refusal, RefusalClass, pointer};

/// A parsed document and the integer tokens it carries outside the
/// I-JSON range, by pointer, in document order.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) value: Value,
    pub(crate) unsafe_integers: Vec<String>,
}

/// Step 1: the file at `path`, as text.
pub(crate) fn read(path: &Path) -> Result<String, Refusal> {
    let unreadable = |detail: String| Refusal::one(RefusalClass::Unreadable, "", detail);
    let meta = std::fs::metadata(path)
        .map_err(|e| unreadable(format!("cannot inspect the file ({:?})", e.kind())))?;
    if !meta.is_file() {
        return Err(unreadable("not a regular file".into()));
    }
    let too_large = |len: u64| {
        unreadable(format!(
            "the file is {len} bytes; a declaration is at most {MAX_DOCUMENT_BYTES} bytes"
        ))
    };
    if meta.len() > MAX_DOCUMENT_BYTES as u64 {
        return Err(too_large(meta.len()));
    }
    // Bounded even if the file grows between the check and the read.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| unreadable(format!("cannot read the file ({:?})", e.kind())))?;
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(unreadable("the file starts with a byte-order mark".into()));
    }
    String::from_utf8(bytes).map_err(|e| {
        unreadable(format!(
            "the file is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Step 2: one JSON object under the bounds.
pub(crate) fn parse(text: &str) -> Result<Parsed, Refusal> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(Refusal::one(
            RefusalClass::Malformed,
            "",
            format!(
                "the document is {} bytes; a declaration is at most {MAX_DOCUMENT_BYTES} bytes",
                text.len()
            ),
        ));
    }
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        unsafe_integers: Vec::new(),
    };
    let value = p.document().map_err(|e| {
        let (line, column) = p.line_column(e.at);
        Refusal::one(
            RefusalClass::Malformed,
            e.pointer,
            format!("{} (line {line}, column {column})", e.what),
        )
    })?;
    if !value.is_object() {
        return Err(Refusal::one(
            RefusalClass::Malformed,
            "",
            "the document root must be a JSON object",
        ));
    }
    Ok(Parsed {
        value,
        unsafe_integers: p.unsafe_integers,
    })
}

struct Syntax {
    at: usize,
    pointer: String,
    what: String,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    unsafe_integers: Vec<String>,
}

impl Parser<'_> {
    fn fail<T>(&self, pointer: &str, what: impl Into<String>) -> Result<T, Syntax> {
        Err(Syntax {
            at: self.pos,
            pointer: pointer.to_owned(),
            what: what.into(),
        })
    }

    fn line_column(&self, at: usize) -> (usize, usize) {
        // An error can sit inside a multi-byte character (an invalid
        // escape's next byte): count from the character's start.
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &self.text[..at];
        let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn document(&mut self) -> Result<Value, Syntax> {
        self.skip_ws();
        let value = self.value("", 0)?;
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return self.fail("", "unexpected content after the document");
        }
        Ok(value)
    }

    fn value(&mut self, at: &str, depth: usize) -> Result<Value, Syntax> {
        match self.bytes.get(self.pos) {
            None => self.fail(at, "unexpected end of the document"),
            Some(b'{') => self.object(at, depth + 1),
            Some(b'[') => self.array(at, depth + 1),
            Some(b'"') => self.string(at).map(Value::String),
            Some(b't') => self.literal(at, "true", Value::Bool(true)),
            Some(b'f') => self.literal(at, "false", Value::Bool(false)),
            Some(b'n') => self.literal(at, "null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(at),
            Some(_) => self.fail(at, "expected a JSON value"),
        }
    }

    fn literal(&mut self, at: &str, word: &str, value: Value) -> Result<Value, Syntax> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            self.fail(at, "expected a JSON value")
        }
    }

    fn enter(&self, at: &str, depth: usize) -> Result<(), Syntax> {
        if depth > MAX_DEPTH {
            return self.fail(
                at,
                format!("the document nests deeper than {MAX_DEPTH} levels"),
            );
        }
        Ok(())
    }

    fn object(&mut self, at: &str, depth: usize) -> Result<Value, Syntax> {
        self.enter(at, depth)?;
        self.pos += 1;
        let mut members = Map::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return self.fail(at, "expected a member name");
            }
            let key = self.string(at)?;
            let here = pointer(at, &key);
            if members.contains_key(&key) {
                return self.fail(&here, "duplicate member name");
            }
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return self.fail(&here, "expected ':' after a member name");
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(&here, depth)?;
            members.insert(key, value);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return self.fail(at, "expected ',' or '}' in an object"),
            }
        }
    }

    fn array(&mut self, at: &str, depth: usize) -> Result<Value, Syntax> {
        self.enter(at, depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            let here = format!("{at}/{}", items.len());
            items.push(self.value(&here, depth)?);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return self.fail(at, "expected ',' or ']' in an array"),
            }
        }
    }

    /// A string starting at the opening quote.
    fn string(&mut self, at: &str) -> Result<String, Syntax> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[start..self.pos]);
            match self.bytes.get(self.pos) {
                None => return self.fail(at, "unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(at, &mut out)?;
                }
                Some(_) => return self.fail(at, "unescaped control character in a string"),
            }
        }
    }

    fn escape(&mut self, at: &str, out: &mut String) -> Result<(), Syntax> {
        let Some(&b) = self.bytes.get(self.pos) else {
            return self.fail(at, "unterminated string");
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4(at)?;
                let code = if (0xD800..0xDC00).contains(&high) {
                    if !self.bytes[self.pos..].starts_with(b"\\u") {
                        return self.fail(at, "lone surrogate in a string");
                    }
                    self.pos += 2;
                    let low = self.hex4(at)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return self.fail(at, "lone surrogate in a string");
                    }
                    0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..0xE000).contains(&high) {
                    return self.fail(at, "lone surrogate in a string");
                } else {
                    high
                };
                match char::from_u32(code) {
                    Some(c) => c,
                    None => return self.fail(at, "invalid \\u escape"),
                }
            }
            _ => return self.fail(at, "invalid escape in a string"),
        };
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self, at: &str) -> Result<u32, Syntax> {
        let digits = self.bytes.get(self.pos..self.pos + 4);
        let parsed = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match parsed {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => self.fail(at, "invalid \\u escape"),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self, at: &str) -> Result<Value, Syntax> {
        let start = self.pos;
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.digits() {
            0 => return self.fail(at, "invalid number"),
            n if n > 1 && self.bytes[int_start] == b'0' => {
                return self.fail(at, "invalid number (leading zero)");
            }
            _ => {}
        }
        let mut integer = true;
        if self.bytes.get(self.pos) == Some(&b'.') {
            integer = false;
            self.pos += 1;
            if self.digits() == 0 {
                return self.fail(at, "invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.fail(at, "invalid number");
            }
        }
        let token = &self.text[start..self.pos];
        if integer {
            let magnitude = token.trim_start_matches('-');
            let safe = magnitude
                .parse::<u64>()
                .is_ok_and(|m| m <= MAX_SAFE_INTEGER);
            if !safe {
                self.unsafe_integers.push(at.to_owned());
            }
            if let Ok(i) = token.parse::<i64>() {
                return Ok(Value::Number(i.into()));
            }
            if let Ok(u) = token.parse::<u64>() {
                return Ok(Value::Number(u.into()));
            }
        }
        match token.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => self.fail(at, "number out of the range of a double"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_like_serde_json_on_valid_text() {
        let text =
            r#" {"a": [1, -2, 3.5, 1e3, true, false, null, "x\u00e9\ud83d\ude00\n"], "b": {}} "#;
        let ours = parse(text).unwrap().value;
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn refuses_duplicates_depth_trailing_content_and_lone_surrogates() {
        for bad in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": 1} x"#,
            r#"{"a": "\ud800"}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1,}"#,
            "[1]",
            "",
            r#"{"a": 1e999}"#,
        ] {
            let r = parse(bad).unwrap_err();
            assert_eq!(r.class, RefusalClass::Malformed, "{bad}");
        }
        let deep = |n: usize| format!("{}{}", r#"{"a":"#.repeat(n - 1) + "{}", "}".repeat(n - 1));
        assert!(parse(&deep(32)).is_ok());
        assert_eq!(parse(&deep(33)).unwrap_err().class, RefusalClass::Malformed);
    }

    #[test]
    fn reports_unsafe_integer_tokens_by_pointer() {
        let p = parse(r#"{"a": [9007199254740991, -9007199254740992], "b": {"c~/": 1e300, "d": 18446744073709551616}}"#)
            .unwrap();
        assert_eq!(p.unsafe_integers, ["/a/1", "/b/d"]);
        assert_eq!(p.value["a"][0], json!(9_007_199_254_740_991_u64));
    }
}
