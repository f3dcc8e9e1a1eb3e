//! The byte format of a record line and of a checkpoint (see
//! `docs/audit.md`).
//!
//! Both are one JSON object whose last member is `"sig"`, the Ed25519
//! signature over the line's *signed payload*: the same bytes with the
//! `,"sig":"…"` member removed, i.e. everything before `,"sig":"` followed
//! by `}`. A record line's payload is exactly
//!
//! ```text
//! {"seq":<n>,"prev":"<64 hex>","record":<§10.3 record JSON>}
//! {"seq":<n>,"prev":"<64 hex>","record":<§10.3 record JSON>,"extensions":<facts>}
//! ```
//!
//! the second form when the host recorded facts beyond §10.3 (hookwire's
//! `extensions`, by namespace). That optional member is what line format
//! 2 ([`LINE_FORMAT`]) added to format 1, whose lines had exactly `seq`,
//! `prev` and `record` (and carried the facts inside `record`): a format 1
//! line is a valid format 2 line, so this verifier reads both.
//!
//! and a checkpoint's exactly `{"count":<n>,"head":"<64 hex>"}`. Because
//! the signature covers the bytes as written, a verifier needs no
//! canonical JSON: it cuts the fixed-length signature member off the end
//! and checks the rest. `prev` is the SHA-256 of the previous line's bytes
//! (without its newline), [`GENESIS`] for the first line; `seq` counts
//! lines from 1.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::broken::Problem;
use crate::key::{AuditKey, PublicKey};

/// The version of the record line format this crate writes (see
/// `docs/audit.md`): 2, the §10.3 record alone in `record` and hookwire's
/// facts beside it in `extensions`.
pub const LINE_FORMAT: u32 = 2;

/// A SHA-256 digest: of a line, or the chain's start.
pub type Hash = [u8; 32];

/// The `prev` of a log's first line: 32 zero bytes.
pub const GENESIS: Hash = [0; 32];

/// What precedes the signature's hex digits.
const SIG_OPEN: &[u8] = b",\"sig\":\"";
/// What follows them: the string's quote and the object's brace.
const SIG_CLOSE: &[u8] = b"\"}";
/// Length of the signature member plus the closing brace.
const SIG_TAIL: usize = SIG_OPEN.len() + 128 + SIG_CLOSE.len();

/// SHA-256 of a line's bytes (without its newline): the next line's
/// `prev`.
pub fn line_hash(line: &[u8]) -> Hash {
    Sha256::digest(line).into()
}

/// A record line (without its newline) for `record` at `seq` after `prev`,
/// with the host's `extensions` (facts beyond §10.3) beside it when there
/// are any.
pub(crate) fn record_line(
    seq: u64,
    prev: &Hash,
    record: &Value,
    extensions: &Map<String, Value>,
    key: &AuditKey,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = Vec::with_capacity(1024);
    line.extend_from_slice(b"{\"seq\":");
    line.extend_from_slice(seq.to_string().as_bytes());
    line.extend_from_slice(b",\"prev\":\"");
    extend_hex(&mut line, prev);
    line.extend_from_slice(b"\",\"record\":");
    serde_json::to_writer(&mut line, record)?;
    if !extensions.is_empty() {
        line.extend_from_slice(b",\"extensions\":");
        serde_json::to_writer(&mut line, extensions)?;
    }
    line.push(b'}');
    seal(&mut line, key);
    Ok(line)
}

/// A checkpoint line (without its newline): the log's first `count` lines
/// end with a line hashing to `head`.
pub(crate) fn checkpoint_line(count: u64, head: &Hash, key: &AuditKey) -> Vec<u8> {
    let mut line = Vec::with_capacity(64 + SIG_TAIL + 32);
    line.extend_from_slice(b"{\"count\":");
    line.extend_from_slice(count.to_string().as_bytes());
    line.extend_from_slice(b",\"head\":\"");
    extend_hex(&mut line, head);
    line.extend_from_slice(b"\"}");
    seal(&mut line, key);
    line
}

/// Signs a payload object and turns it into its line: the final `}` gives
/// way to the `sig` member and a new `}`.
fn seal(payload: &mut Vec<u8>, key: &AuditKey) {
    let sig = key.sign(payload);
    payload.pop();
    payload.extend_from_slice(SIG_OPEN);
    extend_hex(payload, &sig);
    payload.extend_from_slice(SIG_CLOSE);
}

/// The signed payload of a line whose signature `key` made, or why not.
fn unseal(line: &[u8], key: &PublicKey) -> Result<Vec<u8>, Problem> {
    let malformed = || Problem::Malformed("no signature member at the end of the line".into());
    let cut = line.len().checked_sub(SIG_TAIL).ok_or_else(malformed)?;
    let (payload, tail) = line.split_at(cut);
    let digits = tail
        .strip_prefix(SIG_OPEN)
        .and_then(|t| t.strip_suffix(SIG_CLOSE))
        .ok_or_else(malformed)?;
    let sig: [u8; 64] = lowercase_hex(digits).ok_or_else(malformed)?;
    let mut signed = Vec::with_capacity(payload.len() + 1);
    signed.extend_from_slice(payload);
    signed.push(b'}');
    if key.verifies(&signed, &sig) {
        Ok(signed)
    } else {
        Err(Problem::BadSignature)
    }
}

/// One verified record line.
#[derive(Debug)]
pub(crate) struct Entry {
    pub seq: u64,
    pub prev: Hash,
}

/// Checks a record line's signature and shape (format 1 or 2).
pub(crate) fn open_record_line(line: &[u8], key: &PublicKey) -> Result<Entry, Problem> {
    let payload = unseal(line, key)?;
    let object = json_object(&payload)?;
    let with_extensions = object.contains_key("extensions");
    let members = ["seq", "prev", "record"];
    if object.len() != members.len() + usize::from(with_extensions)
        || members.iter().any(|m| !object.contains_key(*m))
    {
        return Err(Problem::Malformed(
            "members are not exactly seq, prev, record and optionally extensions".into(),
        ));
    }
    if with_extensions && !object["extensions"].is_object() {
        return Err(Problem::Malformed("extensions is not an object".into()));
    }
    let seq = object["seq"]
        .as_u64()
        .ok_or_else(|| Problem::Malformed("seq is not a count".into()))?;
    let prev = hash_member(&object["prev"], "prev")?;
    if !object["record"].is_object() {
        return Err(Problem::Malformed("record is not an object".into()));
    }
    Ok(Entry { seq, prev })
}

/// Checks a checkpoint line's signature and shape: `(count, head)`.
pub(crate) fn open_checkpoint_line(line: &[u8], key: &PublicKey) -> Result<(u64, Hash), Problem> {
    let payload = unseal(line, key)?;
    let object = parse_object(&payload, &["count", "head"])?;
    let count = object["count"]
        .as_u64()
        .ok_or_else(|| Problem::Malformed("count is not a count".into()))?;
    Ok((count, hash_member(&object["head"], "head")?))
}

/// The payload as a JSON object.
fn json_object(payload: &[u8]) -> Result<Map<String, Value>, Problem> {
    match serde_json::from_slice(payload) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(Problem::Malformed("not a JSON object".into())),
    }
}

/// The payload as an object with exactly `members`.
fn parse_object(payload: &[u8], members: &[&str]) -> Result<Map<String, Value>, Problem> {
    let object = json_object(payload)?;
    if object.len() != members.len() || members.iter().any(|m| !object.contains_key(*m)) {
        return Err(Problem::Malformed(format!(
            "members are not exactly {}",
            members.join(", ")
        )));
    }
    Ok(object)
}

fn hash_member(value: &Value, name: &str) -> Result<Hash, Problem> {
    value
        .as_str()
        .and_then(|digits| lowercase_hex(digits.as_bytes()))
        .ok_or_else(|| Problem::Malformed(format!("{name} is not 64 hex digits")))
}

/// Exactly `2 * N` lowercase hex digits as `N` bytes: every hash and
/// signature has one spelling, so a line cannot change while its meaning
/// stays (the `hex` crate alone would also read uppercase).
fn lowercase_hex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

/// Appends the lowercase hex of `bytes` to `out`, in place.
fn extend_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    out.resize(start + 2 * bytes.len(), 0);
    // The slot is exactly twice `bytes`: encoding cannot fail.
    let _ = hex::encode_to_slice(bytes, &mut out[start..]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_round_trips_and_other_spellings_are_refused() {
        let bytes = [0x00, 0x9f, 0xa0, 0xff];
        let mut out = b"x".to_vec();
        super::extend_hex(&mut out, &bytes);
        assert_eq!(out, b"x009fa0ff");
        assert_eq!(super::lowercase_hex::<4>(b"009fa0ff"), Some(bytes));
        assert_eq!(super::lowercase_hex::<4>(b"009FA0FF"), None);
        assert_eq!(super::lowercase_hex::<4>(b"009fa0f"), None);
        assert_eq!(super::lowercase_hex::<4>(b"009fa0fg"), None);
    }
}
