//! RFC 8785 canonical JSON (JCS) and the `jcs-sha256` context identity
//! (AGENT-HOOKS-0.1 §10.2).
//!
//! The canonicalizer writes bytes directly from borrowed values: the §10.2
//! projection is walked in place, never cloned, and the same pass enforces
//! the identity's input domain (integers within ±(2^53−1), nesting depth)
//! so that a value is either hashed exactly or refused, never rounded.

use std::ops::Range;

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// Largest integer magnitude RFC 8785 represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Default nesting bound on the identity path (§12.3).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Why a value has no canonical form. The message names the location and the
/// rule, never the value (§14).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    /// An integer beyond ±(2^53−1): canonicalization would round it.
    #[error("{0}: integer exceeds 2^53; string-encode 64-bit identifiers (§4.4)")]
    UnsafeInteger(String),
    /// Nesting deeper than the configured bound.
    #[error("value nests deeper than {0} levels (§12.3)")]
    TooDeep(usize),
}

/// A canonical serializer with a depth bound.
#[derive(Debug, Clone, Copy)]
pub struct Canonicalizer {
    max_depth: usize,
}

impl Default for Canonicalizer {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// A borrowed view of a JSON value, possibly restricted to some members:
/// how the §10.2 projection is written without copying the context.
#[derive(Debug, Clone, Copy)]
pub enum View<'a> {
    /// A whole value.
    Whole(&'a Value),
    /// An object restricted to the listed members (absent ones skipped).
    /// A non-object value is written whole.
    Only(&'a Value, &'static [&'static str]),
    /// A synthesized object of named views (keys need not be sorted).
    Object(&'a [(&'a str, View<'a>)]),
}

impl Canonicalizer {
    /// A canonicalizer refusing values nested deeper than `max_depth`.
    pub fn with_max_depth(max_depth: usize) -> Self {
        Self { max_depth }
    }

    /// Appends the canonical bytes of `view` to `out`.
    pub fn write(&self, view: View<'_>, out: &mut String) -> Result<(), CanonicalError> {
        self.write_inner(view, None, out)
    }

    /// Like [`Self::write`], for a view in which the value `repeated` (the
    /// same value, by address) occurs more than once: it is canonicalized
    /// at its first occurrence and its bytes are copied at the later ones.
    /// The output and the errors are exactly those of [`Self::write`].
    pub fn write_repeating(
        &self,
        view: View<'_>,
        repeated: &Value,
        out: &mut String,
    ) -> Result<(), CanonicalError> {
        self.write_inner(view, Some(repeated), out)
    }

    fn write_inner(
        &self,
        view: View<'_>,
        repeated: Option<&Value>,
        out: &mut String,
    ) -> Result<(), CanonicalError> {
        let mut w = Writer {
            max_depth: self.max_depth,
            out,
            deepest: None,
            repeat: repeated.map(|value| Repeat {
                value,
                written: None,
            }),
        };
        w.view(view, 0).map_err(Failure::into_error)
    }
}

/// The canonical text of a whole value with the default depth bound.
pub fn to_canonical_string(value: &Value) -> Result<String, CanonicalError> {
    let mut out = String::new();
    Canonicalizer::default().write(View::Whole(value), &mut out)?;
    Ok(out)
}

/// The canonical byte length of a value (the §5.3 evidence measure).
pub fn canonical_len(value: &Value) -> Result<usize, CanonicalError> {
    to_canonical_string(value).map(|s| s.len())
}

/// `"sha256:" + lowercase_hex(SHA-256(bytes))`.
pub fn sha256_identity(bytes: &[u8]) -> String {
    let mut text = *b"sha256:0000000000000000000000000000000000000000000000000000000000000000";
    // The slot is exactly twice the digest, so encoding cannot fail.
    let _ = hex::encode_to_slice(Sha256::digest(bytes), &mut text[7..]);
    String::from_utf8_lossy(&text).into_owned()
}

/// A failure on its way up: the error, and (for an unsafe integer) the
/// location, collected innermost first only once something failed.
struct Failure {
    too_deep: Option<usize>,
    path: Vec<Step>,
}

enum Step {
    Member(String),
    Index(usize),
}

impl Failure {
    fn too_deep(max_depth: usize) -> Self {
        Self {
            too_deep: Some(max_depth),
            path: Vec::new(),
        }
    }

    fn unsafe_integer() -> Self {
        Self {
            too_deep: None,
            path: Vec::new(),
        }
    }

    fn in_member(mut self, key: &str) -> Self {
        if self.too_deep.is_none() {
            self.path.push(Step::Member(key.to_owned()));
        }
        self
    }

    fn in_index(mut self, i: usize) -> Self {
        if self.too_deep.is_none() {
            self.path.push(Step::Index(i));
        }
        self
    }

    fn into_error(self) -> CanonicalError {
        use std::fmt::Write as _;
        if let Some(max) = self.too_deep {
            return CanonicalError::TooDeep(max);
        }
        let mut s = String::from("$");
        for step in self.path.iter().rev() {
            match step {
                Step::Member(k) => {
                    s.push('.');
                    s.push_str(k);
                }
                Step::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
            }
        }
        CanonicalError::UnsafeInteger(s)
    }
}

/// A value that occurs more than once, and where its canonical bytes went
/// the first time: their range in the output, and how many container
/// levels it has below its root (`None`: it is not a container).
struct Repeat<'v> {
    value: &'v Value,
    written: Option<(Range<usize>, Option<usize>)>,
}

/// One canonicalization in progress.
struct Writer<'o, 'v> {
    max_depth: usize,
    out: &'o mut String,
    /// The deepest container entered so far.
    deepest: Option<usize>,
    repeat: Option<Repeat<'v>>,
}

impl<'v> Writer<'_, 'v> {
    fn enter(&mut self, depth: usize) -> Result<(), Failure> {
        if depth >= self.max_depth {
            return Err(Failure::too_deep(self.max_depth));
        }
        self.deepest = Some(self.deepest.map_or(depth, |d| d.max(depth)));
        Ok(())
    }

    fn view(&mut self, view: View<'v>, depth: usize) -> Result<(), Failure> {
        match view {
            View::Whole(v) => self.value(v, depth),
            View::Only(Value::Object(m), keep) => self.object(m, |k| keep.contains(&k), depth),
            View::Only(v, _) => self.value(v, depth),
            View::Object(members) => {
                self.enter(depth)?;
                let mut entries: Vec<(&str, View<'v>)> = members.to_vec();
                entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
                self.out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    write_string(k, self.out);
                    self.out.push(':');
                    self.view(*v, depth + 1).map_err(|f| f.in_member(k))?;
                }
                self.out.push('}');
                Ok(())
            }
        }
    }

    fn value(&mut self, value: &'v Value, depth: usize) -> Result<(), Failure> {
        if let Some(r) = &self.repeat
            && std::ptr::eq(r.value, value)
        {
            return self.repeated(value, depth);
        }
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => write_number(n, self.out)?,
            Value::String(s) => write_string(s, self.out),
            Value::Array(items) => {
                self.enter(depth)?;
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.value(item, depth + 1).map_err(|f| f.in_index(i))?;
                }
                self.out.push(']');
            }
            Value::Object(m) => self.object(m, |_| true, depth)?,
        }
        Ok(())
    }

    /// The repeated value: written (and measured) the first time, copied
    /// afterwards, refused where a full write would nest too deep.
    fn repeated(&mut self, value: &'v Value, depth: usize) -> Result<(), Failure> {
        let written = self.repeat.as_ref().and_then(|r| r.written.clone());
        if let Some((range, height)) = written {
            if height.is_some_and(|h| depth + h >= self.max_depth) {
                return Err(Failure::too_deep(self.max_depth));
            }
            self.out.extend_from_within(range);
            return Ok(());
        }
        // First occurrence: write it normally (with the repeat disarmed so
        // that it is not mistaken for itself) and remember the bytes.
        let armed = self.repeat.take();
        let outer_deepest = self.deepest.take();
        let start = self.out.len();
        let result = self.value(value, depth);
        let height = self.deepest.map(|d| d - depth);
        self.deepest = match (outer_deepest, self.deepest) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.repeat = armed.map(|r| Repeat {
            written: Some((start..self.out.len(), height)),
            ..r
        });
        result
    }

    /// An object's members (those `keep` admits) in RFC 8785 order: the
    /// map's own order when it is already that order (the common case of
    /// byte-sorted keys below U+E000), a sorted copy of the entries
    /// otherwise.
    fn object(
        &mut self,
        m: &'v Map<String, Value>,
        keep: impl Fn(&str) -> bool,
        depth: usize,
    ) -> Result<(), Failure> {
        self.enter(depth)?;
        let mut in_order = true;
        let mut prev: Option<&str> = None;
        for k in m.keys().filter(|k| keep(k)) {
            if k.bytes().any(|b| b >= 0xEE) || prev.is_some_and(|p| p >= k.as_str()) {
                in_order = false;
                break;
            }
            prev = Some(k);
        }
        self.out.push('{');
        let mut first = true;
        if in_order {
            for (k, v) in m.iter().filter(|(k, _)| keep(k)) {
                self.member(&mut first, k, v, depth)?;
            }
        } else {
            let mut entries: Vec<(&'v str, &'v Value)> = m
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (k.as_str(), v))
                .collect();
            entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
            for (k, v) in entries {
                self.member(&mut first, k, v, depth)?;
            }
        }
        self.out.push('}');
        Ok(())
    }

    fn member(
        &mut self,
        first: &mut bool,
        k: &str,
        v: &'v Value,
        depth: usize,
    ) -> Result<(), Failure> {
        if !std::mem::take(first) {
            self.out.push(',');
        }
        write_string(k, self.out);
        self.out.push(':');
        self.value(v, depth + 1).map_err(|f| f.in_member(k))
    }
}

/// RFC 8785 §3.2.3: member names sort by their UTF-16 code units.
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn write_number(n: &Number, out: &mut String) -> Result<(), Failure> {
    if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(Failure::unsafe_integer());
        }
        push_integer(out, false, u);
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(Failure::unsafe_integer());
        }
        push_integer(out, i < 0, i.unsigned_abs());
    } else {
        // serde_json never holds a non-finite f64.
        let f = n.as_f64().unwrap_or(0.0);
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(f));
    }
    Ok(())
}

/// Decimal digits of an integer, without the formatting machinery.
fn push_integer(out: &mut String, negative: bool, mut magnitude: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        out.push('-');
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// How each byte is written inside a string: 0 as itself, `u` as
/// `\u00XX`, anything else as a backslash and that character.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// The length of `s` as a JSON string literal, quotes included, escaped
/// as both RFC 8785 and serde_json escape (the same set of characters).
pub(crate) fn json_string_len(s: &str) -> usize {
    let extra: usize = s
        .bytes()
        .map(|b| match ESCAPE[usize::from(b)] {
            0 => 0,
            b'u' => 5,
            _ => 1,
        })
        .sum();
    s.len() + 2 + extra
}

fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let e = ESCAPE[usize::from(b)];
        if e == 0 {
            continue;
        }
        // `b` is ASCII, so `i` is a character boundary.
        out.push_str(&s[start..i]);
        out.push('\\');
        if e == b'u' {
            let mut digits = *b"u0000";
            // Two digits for one byte: encoding cannot fail.
            let _ = hex::encode_to_slice([b], &mut digits[3..]);
            out.push_str(std::str::from_utf8(&digits).unwrap_or_default());
        } else {
            out.push(char::from(e));
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
pub(crate) mod tests;
