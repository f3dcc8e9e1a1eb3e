//! Bearer tokens, one way for every edge: how a request presents one
//! (`Authorization: Bearer <token68>`, [`bearer`]), how an edge keeps one
//! (its SHA-256 only, [`sha256`], [`sha256_hex`]), how a presented token
//! is checked against the kept hashes (in constant time, every entry
//! compared, [`matching`], [`constant_time_eq`]), and how tokens and ids
//! are made (the operating system's generator, [`random_hex`]).
//!
//! The header rules are RFC 9110 §11 and RFC 6750 §2.1: the auth-scheme
//! is case-insensitive (`Bearer`, `bearer`, `BEARER`), one or more spaces
//! separate it from the credentials, which are a token68 (letters,
//! digits, `-._~+/`, then any `=` padding). Anything else is refused with
//! [`Error::InvalidAuthorization`], whose message never quotes the value.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::Error;

/// The longest bearer token an edge reads; a longer one is refused
/// before it is hashed.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The token of an `Authorization` header value: `Bearer` in any case,
/// one or more spaces, a token68 of at most [`MAX_TOKEN_BYTES`].
/// Surrounding blanks (which HTTP strips from field values anyway) are
/// ignored.
pub fn bearer(header: &str) -> Result<&str, Error> {
    let value = header.trim_matches([' ', '\t']);
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Error::InvalidAuthorization("the scheme is not Bearer"));
    }
    let token = rest.trim_start_matches(' ');
    if token.is_empty() {
        return Err(Error::InvalidAuthorization("no token after the scheme"));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Error::InvalidAuthorization("the token is too long"));
    }
    if !is_token68(token) {
        return Err(Error::InvalidAuthorization(
            "the token is not token68 (letters, digits, -._~+/ and trailing =)",
        ));
    }
    Ok(token)
}

/// Whether `s` is RFC 9110's `token68`: `1*( ALPHA / DIGIT / "-" / "." /
/// "_" / "~" / "+" / "/" ) *"="`, the only shape a bearer token can take
/// in a header; an edge whose operator picks the token checks it with
/// this at start.
pub fn is_token68(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The SHA-256 of `token`: what an edge keeps instead of the token.
pub fn sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The SHA-256 of `token` as 64 lowercase hex digits: how configuration
/// files list a token.
pub fn sha256_hex(token: &str) -> String {
    hex::encode(sha256(token))
}

/// Whether `a` and `b` are equal, in time that depends only on their
/// lengths: secrets (hashes, CSRF tokens) are compared with this.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// The item whose hash is `digest`, comparing every entry in constant
/// time (no early exit), so that the time taken does not say which entry
/// matched or whether one did.
pub fn matching<'a, T>(
    entries: impl IntoIterator<Item = (T, &'a [u8; 32])>,
    digest: &[u8; 32],
) -> Option<T> {
    let mut found = None;
    for (item, hash) in entries {
        if constant_time_eq(hash, digest) {
            found = Some(item);
        }
    }
    found
}

/// `N` bytes from the operating system's generator as `2 * N` lowercase
/// hex digits: every token, session id and nonce an edge makes.
pub fn random_hex<const N: usize>() -> Result<String, Error> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_case_insensitive() {
        for h in ["Bearer abc", "bearer abc", "BEARER abc", "bEaReR abc"] {
            assert_eq!(bearer(h).unwrap(), "abc", "{h}");
        }
    }

    #[test]
    fn one_or_more_spaces_follow_the_scheme_and_blanks_around_are_ignored() {
        assert_eq!(bearer("Bearer    abc").unwrap(), "abc");
        assert_eq!(bearer("  Bearer abc \t").unwrap(), "abc");
        // RFC 9110: SP after the scheme, not a tab.
        assert!(bearer("Bearer\tabc").is_err());
    }

    #[test]
    fn the_credentials_are_token68() {
        assert_eq!(
            bearer("Bearer aZ09-._~+/==").unwrap(),
            "aZ09-._~+/==",
            "every token68 character, then padding"
        );
        for bad in [
            "Bearer a b",
            "Bearer a,b",
            "Bearer =abc",
            "Bearer ==",
            "Bearer a=b",
            "Bearer \"abc\"",
            "Bearer tök",
            "Bearer a\u{0}",
        ] {
            let e = bearer(bad).unwrap_err();
            assert!(matches!(e, Error::InvalidAuthorization(_)), "{bad}");
        }
    }

    #[test]
    fn other_schemes_and_missing_tokens_are_refused() {
        for bad in [
            "",
            "Bearer",
            "Bearer ",
            "Bearer    ",
            "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
            "Bearerabc",
            "Token abc",
            "abc",
        ] {
            assert!(bearer(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_token_over_the_bound_is_refused_and_no_message_quotes_the_value() {
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert!(bearer(&long).is_err());
        let at = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES));
        assert!(bearer(&at).is_ok());
        let e = bearer("Bearer secret,value").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn hashes_are_sha256() {
        // FIPS 180-2's test vector for "abc".
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex::encode(sha256("abc")), sha256_hex("abc"));
    }

    #[test]
    fn comparison_and_lookup_find_the_one_entry() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        let (a, b) = (sha256("a"), sha256("b"));
        let entries = [("alice", &a), ("bob", &b)];
        assert_eq!(matching(entries, &sha256("b")), Some("bob"));
        assert_eq!(matching(entries, &sha256("c")), None);
    }

    #[test]
    fn random_ids_are_fresh_hex_of_the_asked_length() {
        let (x, y) = (random_hex::<16>().unwrap(), random_hex::<16>().unwrap());
        assert_eq!(x.len(), 32);
        assert_ne!(x, y);
        assert!(
            x.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(random_hex::<32>().unwrap().len(), 64);
    }
}
