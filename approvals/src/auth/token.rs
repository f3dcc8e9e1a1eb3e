//! Bearer tokens: how they are made (256 random bits, hex), how the
//! service keeps them (SHA-256 only), and how a call presents one
//! (`authorization: Bearer <token>`).

use sha2::{Digest, Sha256};

use crate::error::Error;

/// Bytes of randomness in a token made by [`new_token`]: 256 bits.
const TOKEN_BYTES: usize = 32;

/// Prefix of every token [`new_token`] makes, so that a leaked one is
/// recognisable in a secret scanner.
pub const TOKEN_PREFIX: &str = "hwa_";

/// Longest bearer token the service reads; longer ones are refused
/// unread.
pub const MAX_TOKEN_LEN: usize = 512;

/// A fresh high-entropy token from the operating system's generator,
/// `hwa_` and 64 hex digits.
pub fn new_token() -> Result<String, Error> {
    Ok(format!("{TOKEN_PREFIX}{}", random_hex()?))
}

/// 256 bits from the operating system's generator, as 64 lowercase hex
/// digits: tokens, and the page's session ids and CSRF tokens.
pub(crate) fn random_hex() -> Result<String, Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// The hash the configuration stores for `token`: SHA-256, lowercase hex.
pub fn token_sha256(token: &str) -> String {
    hex::encode(token_digest(token))
}

/// The SHA-256 of `token`, as the access table compares it.
pub(crate) fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A configured token hash (64 hex digits, either case, surrounding
/// blanks ignored) as bytes; `what` names the principal or the list in
/// the error.
pub(crate) fn parse_hash(what: &str, hash: &str) -> Result<[u8; 32], Error> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hash.trim(), &mut out)
        .map_err(|_| Error::AccessConfig(format!("{what}: a token hash must be 64 hex digits")))?;
    Ok(out)
}

/// Reads `Bearer <token>` out of an `authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}
