//! `wire_verdict`: protobuf bytes of what a service answers → the domain.
//!
//! Input: a selector byte (0 `Verdict`, 1 `InterceptorResponse`,
//! 2 `Manifest`, modulo 3) and the encoded message. Properties: decoding
//! never panics; whatever decodes is valid (§5, §5.5), encodes and decodes
//! to the same value; a verdict's spec JSON form loads back to the same
//! verdict.

use hookwire::{InterceptorResponse, Manifest, Verdict, pb};
use prost::Message;

/// Selector of a `pb::Verdict` input.
pub const VERDICT: u8 = 0;
/// Selector of a `pb::InterceptorResponse` input.
pub const RESPONSE: u8 = 1;
/// Selector of a `pb::Manifest` input.
pub const MANIFEST: u8 = 2;

/// Frames a message as one input of this target.
pub fn input(selector: u8, message: &impl Message) -> Vec<u8> {
    let mut out = vec![selector];
    out.extend(message.encode_to_vec());
    out
}

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Some((selector, bytes)) = crate::split_selector(data) else {
        return;
    };
    match selector % 3 {
        VERDICT => verdict(bytes),
        RESPONSE => response(bytes),
        _ => manifest(bytes),
    }
}

fn verdict(bytes: &[u8]) {
    let Ok(wire) = pb::Verdict::decode(bytes) else {
        return;
    };
    let Ok(v) = Verdict::try_from(wire) else {
        return;
    };
    v.validate().expect("a decoded verdict passes §5");
    let again = Verdict::try_from(pb::Verdict::from(&v)).expect("a re-encoded verdict decodes");
    assert_eq!(again, v, "decode(encode(v)) == v");
    let from_json = Verdict::from_json(&v.to_json()).expect("the spec JSON form loads");
    assert_eq!(from_json, v, "the spec JSON form is the same verdict");
}

fn response(bytes: &[u8]) {
    let Ok(wire) = pb::InterceptorResponse::decode(bytes) else {
        return;
    };
    let Ok(r) = InterceptorResponse::try_from(wire) else {
        return;
    };
    r.validate().expect("a decoded response passes §5 and §5.5");
    let again = InterceptorResponse::try_from(pb::InterceptorResponse::from(&r))
        .expect("a re-encoded response decodes");
    assert_eq!(again, r, "decode(encode(r)) == r");
}

fn manifest(bytes: &[u8]) {
    let Ok(wire) = pb::Manifest::decode(bytes) else {
        return;
    };
    let Ok(m) = Manifest::try_from(wire) else {
        return;
    };
    let again = Manifest::try_from(pb::Manifest::from(&m)).expect("a re-encoded manifest decodes");
    assert_eq!(again, m, "decode(encode(m)) == m");
}
