//! Who may use the Streamable HTTP downstream: the clients file, one
//! client per line as `NAME SHA256-HEX` (the lowercase SHA-256 of its
//! bearer token; `#` comments and blank lines ignored), the approval
//! service's way of keeping tokens: only hashes are held, and every
//! presented token is compared against every hash in constant time.

use hookwire_edge::token;

use crate::Error;

pub use hookwire_edge::token::{MAX_TOKEN_BYTES, sha256_hex as token_sha256};
/// The longest client name.
const MAX_NAME: usize = 128;

/// The checked clients file.
#[derive(Clone)]
pub struct Clients {
    entries: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: hashes stay out of debug output.
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Clients").field("names", &names).finish()
    }
}

impl Clients {
    /// Parses a clients file's text; errors name the line, never a hash.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| Error::Config(format!("clients file line {}: {why}", n + 1));
            let mut words = line.split_whitespace();
            let (Some(name), Some(hash), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad("expected `NAME SHA256-HEX`"));
            };
            if name.len() > MAX_NAME || !name.chars().all(|c| c.is_ascii_graphic()) {
                return Err(bad(
                    "the name must be printable ASCII without spaces, at most 128 bytes",
                ));
            }
            let mut digest = [0u8; 32];
            if hash.len() != 64 || hex::decode_to_slice(hash, &mut digest).is_err() {
                return Err(bad("the hash is not 64 hex digits"));
            }
            if entries.iter().any(|(m, _)| m == name) {
                return Err(bad(&format!("client {name:?} is listed twice")));
            }
            if entries.iter().any(|(_, d)| *d == digest) {
                return Err(bad("two clients share one token hash"));
            }
            entries.push((name.to_owned(), digest));
        }
        if entries.is_empty() {
            return Err(Error::Config("the clients file lists no client".into()));
        }
        Ok(Self { entries })
    }

    /// The client whose token this is, if any.
    pub fn authenticate(&self, token: &str) -> Option<&str> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        // Every entry is compared, so the time taken does not say which
        // one matched.
        token::matching(
            self.entries.iter().map(|(n, d)| (n.as_str(), d)),
            &token::sha256(token),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_authenticate_their_client_only() {
        let text = format!(
            "# clients\n\nalice {}\nbob {}\n",
            token_sha256("t-alice"),
            token_sha256("t-bob")
        );
        let c = Clients::parse(&text).unwrap();
        assert_eq!(c.authenticate("t-alice"), Some("alice"));
        assert_eq!(c.authenticate("t-bob"), Some("bob"));
        assert_eq!(c.authenticate("t-eve"), None);
        assert_eq!(c.authenticate(""), None);
        assert_eq!(c.authenticate(&"x".repeat(MAX_TOKEN_BYTES + 1)), None);
        assert!(!format!("{c:?}").contains(&token_sha256("t-alice")));
    }

    #[test]
    fn bad_files_are_refused_by_line() {
        let h = token_sha256("a");
        for (text, want) in [
            ("", "lists no client"),
            ("alice", "line 1"),
            ("alice zz", "64 hex"),
            (&format!("alice {h} extra") as &str, "line 1"),
            (&format!("a {h}\na {}", token_sha256("b")), "listed twice"),
            (&format!("a {h}\nb {h}"), "share one token"),
        ] {
            let e = Clients::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains(&h));
        }
    }
}
