//! Static gRPC metadata a binding sends on every call (an `authorization`
//! token, a tenant header): checked once when the host is built, values
//! marked sensitive so they never reach debug output.

use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};

/// Header names gRPC and HTTP/2 reserve for themselves.
const RESERVED_HEADERS: [&str; 6] = [
    "content-type",
    "te",
    "user-agent",
    "host",
    "connection",
    "authority",
];

/// Checks one static metadata entry: a lowercase ASCII header name that is
/// neither reserved nor binary (`-bin`), and a visible-ASCII value. The
/// reason names the rule, never the value.
pub(crate) fn metadata_entry(
    key: &str,
    value: &str,
) -> Result<(AsciiMetadataKey, AsciiMetadataValue), String> {
    let name_ok = !key.is_empty()
        && key.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        });
    if !name_ok {
        return Err("metadata keys are lowercase ASCII letters, digits, '-', '_' and '.'".into());
    }
    if key.starts_with("grpc-") || key.starts_with(':') || RESERVED_HEADERS.contains(&key) {
        return Err("the metadata key is reserved by gRPC or HTTP/2".into());
    }
    if key.ends_with("-bin") {
        return Err("binary (-bin) metadata is not supported".into());
    }
    if value.is_empty() || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err("metadata values are non-empty visible ASCII (spaces allowed)".into());
    }
    let key = AsciiMetadataKey::from_bytes(key.as_bytes())
        .map_err(|_| "invalid metadata key".to_owned())?;
    let mut value =
        AsciiMetadataValue::try_from(value).map_err(|_| "invalid metadata value".to_owned())?;
    value.set_sensitive(true);
    Ok((key, value))
}
