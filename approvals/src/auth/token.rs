//! Bearer tokens as the approval service makes and keeps them: 256
//! random bits in hex behind a recognisable prefix, stored as SHA-256
//! only. Reading the `authorization: Bearer <token>` header, hashing and
//! comparing are `hookwire_edge::token`'s, shared with every edge.

use crate::error::Error;

pub use hookwire_edge::token::{
    MAX_TOKEN_BYTES as MAX_TOKEN_LEN, bearer, sha256_hex as token_sha256,
};

/// Prefix of every token [`new_token`] makes, so that a leaked one is
/// recognisable in a secret scanner.
pub const TOKEN_PREFIX: &str = "hwa_";

/// A fresh high-entropy token from the operating system's generator,
/// `hwa_` and 64 hex digits.
pub fn new_token() -> Result<String, Error> {
    Ok(format!("{TOKEN_PREFIX}{}", random_hex()?))
}

/// 256 bits from the operating system's generator, as 64 lowercase hex
/// digits: tokens, and the page's session ids and CSRF tokens.
pub(crate) fn random_hex() -> Result<String, Error> {
    hookwire_edge::token::random_hex::<32>().map_err(|e| Error::Random(e.to_string()))
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
