//! `json_text`: bytes → [`hookwire::json::decode`], the exact JSON text
//! decoder every `JsonValue` field of the wire goes through, and the
//! RFC 8785 canonical form the identities are computed over.
//!
//! Input: the text itself (inputs that are not UTF-8 are skipped: every
//! wire field is a protobuf `string`). Properties: decoding never panics;
//! what it accepts serde_json reads as the same value (it is a strict
//! subset); `decode(encode(v)) == v`; canonicalization never panics, and
//! the canonical text, read back, canonicalizes to itself (when its large
//! doubles, now integer digits, are within the safe range).

use hookwire::{canonical, json};
use serde_json::Value;

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = json::decode(text) else {
        return;
    };
    let lax: Value = serde_json::from_str(text).expect("an exact text is valid JSON");
    assert_eq!(lax, value, "the exact decoder reads what serde_json reads");

    let encoded = json::encode(&value);
    let again = json::decode(&encoded).expect("an encoded value decodes");
    assert_eq!(again, value, "decode(encode(v)) == v");

    // The canonical text is a hash preimage, never decoded exactly by
    // hookwire: a large double is written as its integer digits (RFC 8785
    // §3.2.2.3), which the exact decoder refuses beyond 64 bits and the
    // canonicalizer refuses as an integer beyond 2^53 — by design. Read it
    // back as any JSON reader would; where it canonicalizes again, it must
    // be the same text.
    if let Ok(canon) = canonical::to_canonical_string(&value) {
        let reread: Value = serde_json::from_str(&canon).expect("a canonical text is JSON");
        if let Ok(recanon) = canonical::to_canonical_string(&reread) {
            assert_eq!(recanon, canon, "the canonical form is a fixed point");
        }
    }
}
