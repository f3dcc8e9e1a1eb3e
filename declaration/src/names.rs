//! The name patterns a document and a registry share (§7.7.3, §7.7.5,
//! §10.1): binding ids and registered names, binding kinds, custom
//! identity provider names, and the name of the one built-in provider.

use super::limits::{MAX_ID_CHARS, MAX_KIND_CHARS};

/// The built-in identity provider's name (§10.1): RFC 8785 canonical JSON
/// hashed with SHA-256. A document names it without any registration;
/// `hookwire-client` re-exports it with the provider it names.
pub const JCS_SHA256: &str = "jcs-sha256";

/// `^[a-z][a-z0-9_-]{0,63}$`: binding ids and registered names (a
/// registry checks its names with it too).
pub fn is_reference(s: &str) -> bool {
    let mut bytes = s.bytes();
    s.len() <= MAX_ID_CHARS
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// `^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$`, at most 128 characters:
/// binding kinds, in a document and in a registry.
pub fn is_kind(s: &str) -> bool {
    s.len() <= MAX_KIND_CHARS
        && s.split('.').count() >= 2
        && s.split('.').all(|seg| {
            let mut bytes = seg.bytes();
            bytes.next().is_some_and(|b| b.is_ascii_lowercase())
                && bytes
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        })
}

/// The §10.1 custom provider name rule with the §7.7.3 length bound, for
/// a document's `identity_provider` and a registry's providers alike.
pub fn is_custom_provider(s: &str) -> bool {
    is_reference(s) && !s.starts_with("jcs")
}
