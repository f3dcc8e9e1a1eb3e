//! RFC 8785 canonical JSON (JCS) and the `jcs-sha256` context identity
//! (AGENT-HOOKS-0.1 §10.2).
//!
//! The canonicalizer writes bytes directly from borrowed values: the §10.2
//! projection is walked in place, never cloned, and the same pass enforces
//! the identity's input domain (integers within ±(2^53−1), nesting depth)
//! so that a value is either hashed exactly or refused, never rounded.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// Largest integer magnitude RFC 8785 represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Default nesting bound on the identity path (§12.3).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Why a value has no canonical form. The message names the location and the
/// rule, never the value (§14).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
        self.write_view(view, out, 0, &mut PathTrail::default())
    }

    fn write_view(
        &self,
        view: View<'_>,
        out: &mut String,
        depth: usize,
        trail: &mut PathTrail,
    ) -> Result<(), CanonicalError> {
        match view {
            View::Whole(v) => self.write_value(v, out, depth, trail),
            View::Only(Value::Object(m), keep) => {
                let mut entries: Vec<(&str, &Value)> = m
                    .iter()
                    .filter(|(k, _)| keep.contains(&k.as_str()))
                    .map(|(k, v)| (k.as_str(), v))
                    .collect();
                self.write_entries(&mut entries, out, depth, trail, |c, v, o, d, t| {
                    c.write_value(v, o, d, t)
                })
            }
            View::Only(v, _) => self.write_value(v, out, depth, trail),
            View::Object(members) => {
                let mut entries: Vec<(&str, View<'_>)> =
                    members.iter().map(|(k, v)| (*k, *v)).collect();
                self.write_entries(&mut entries, out, depth, trail, |c, v, o, d, t| {
                    c.write_view(v, o, d, t)
                })
            }
        }
    }

    fn write_entries<T: Copy>(
        &self,
        entries: &mut [(&str, T)],
        out: &mut String,
        depth: usize,
        trail: &mut PathTrail,
        mut write: impl FnMut(
            &Self,
            T,
            &mut String,
            usize,
            &mut PathTrail,
        ) -> Result<(), CanonicalError>,
    ) -> Result<(), CanonicalError> {
        if depth >= self.max_depth {
            return Err(CanonicalError::TooDeep(self.max_depth));
        }
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        out.push('{');
        for (i, (k, v)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(k, out);
            out.push(':');
            trail.push_member(k);
            write(self, *v, out, depth + 1, trail)?;
            trail.pop();
        }
        out.push('}');
        Ok(())
    }

    fn write_value(
        &self,
        value: &Value,
        out: &mut String,
        depth: usize,
        trail: &mut PathTrail,
    ) -> Result<(), CanonicalError> {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => write_number(n, out, trail)?,
            Value::String(s) => write_string(s, out),
            Value::Array(items) => {
                if depth >= self.max_depth {
                    return Err(CanonicalError::TooDeep(self.max_depth));
                }
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    trail.push_index(i);
                    self.write_value(item, out, depth + 1, trail)?;
                    trail.pop();
                }
                out.push(']');
            }
            Value::Object(m) => {
                let mut entries: Vec<(&str, &Value)> =
                    m.iter().map(|(k, v)| (k.as_str(), v)).collect();
                self.write_entries(&mut entries, out, depth, trail, |c, v, o, d, t| {
                    c.write_value(v, o, d, t)
                })?;
            }
        }
        Ok(())
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
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn write_number(n: &Number, out: &mut String, trail: &PathTrail) -> Result<(), CanonicalError> {
    if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(CanonicalError::UnsafeInteger(trail.render()));
        }
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(CanonicalError::UnsafeInteger(trail.render()));
        }
        let _ = write!(out, "{i}");
    } else {
        // serde_json never holds a non-finite f64.
        let f = n.as_f64().unwrap_or(0.0);
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(f));
    }
    Ok(())
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{08}' => "\\b",
            '\t' => "\\t",
            '\n' => "\\n",
            '\u{0c}' => "\\f",
            '\r' => "\\r",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escape);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Where the canonicalizer is, for error messages that name a location.
#[derive(Default)]
struct PathTrail(Vec<TrailStep>);

enum TrailStep {
    Member(String),
    Index(usize),
}

impl PathTrail {
    fn push_member(&mut self, k: &str) {
        self.0.push(TrailStep::Member(k.to_owned()));
    }
    fn push_index(&mut self, i: usize) {
        self.0.push(TrailStep::Index(i));
    }
    fn pop(&mut self) {
        self.0.pop();
    }
    fn render(&self) -> String {
        let mut s = String::from("$");
        for step in &self.0 {
            match step {
                TrailStep::Member(k) => {
                    s.push('.');
                    s.push_str(k);
                }
                TrailStep::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc8785_numbers_keys_and_escapes() {
        let v: Value = serde_json::from_str(
            r#"{"b":[1.0,1e21,0.000001,1e-7,-0.0,123.456],"a":"\u0007é\"","\u20ac":1,"\ud83d\ude00":2}"#,
        )
        .unwrap();
        assert_eq!(
            to_canonical_string(&v).unwrap(),
            "{\"a\":\"\\u0007é\\\"\",\"b\":[1,1e+21,0.000001,1e-7,0,123.456],\"€\":1,\"😀\":2}"
        );
    }

    #[test]
    fn unsafe_integers_are_refused_with_their_location() {
        let v = json!({"a": [0, 9_007_199_254_740_992u64]});
        assert_eq!(
            to_canonical_string(&v),
            Err(CanonicalError::UnsafeInteger("$.a[1]".into()))
        );
        let ok = json!({"a": -9_007_199_254_740_991i64});
        assert!(to_canonical_string(&ok).is_ok());
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = json!(1);
        for _ in 0..DEFAULT_MAX_DEPTH {
            v = json!([v]);
        }
        assert!(to_canonical_string(&v).is_ok());
        v = json!([v]);
        assert_eq!(
            to_canonical_string(&v),
            Err(CanonicalError::TooDeep(DEFAULT_MAX_DEPTH))
        );
    }
}
