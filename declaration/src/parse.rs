//! Steps 1 and 2 of the load pipeline: reading a document from a file and
//! parsing its text under the §7.7 bounds.
//!
//! The text is read by [`hookwire::json::read`], the exact JSON reader the
//! wire uses too, which gives the loader the three things a generic parse
//! throws away: duplicate keys (refused, so a settings validator and the
//! loader never disagree on which value loaded), the nesting depth
//! (bounded at 32 while parsing, not after), and which numbers were written
//! as integer tokens beyond ±(2^53 − 1) (a generic parser turns them into
//! doubles, after which nobody can tell). Those tokens are reported back
//! by pointer for step 6.

use std::io::Read as _;
use std::path::Path;

use hookwire::json::{self, InvalidJson};
use serde_json::Value;

use super::limits::{MAX_DEPTH, MAX_DOCUMENT_BYTES};
use crate::refusal::{Refusal, RefusalClass};

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
    let json::Document {
        value,
        wide_integers,
    } = json::read(text, MAX_DEPTH).map_err(|e| {
        let pointer = match &e {
            InvalidJson::Document { pointer, .. } => pointer.clone(),
            _ => String::new(),
        };
        Refusal::one(RefusalClass::Malformed, pointer, e.to_string())
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
        unsafe_integers: wide_integers,
    })
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
