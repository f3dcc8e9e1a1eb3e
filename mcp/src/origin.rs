//! Which browser origins may reach the Streamable HTTP downstream. MCP's
//! transport requires the server to validate `Origin` (a page a browser
//! loaded must not drive a local proxy through DNS rebinding): a request
//! whose `Origin` is neither a loopback origin (`http`/`https` on
//! `localhost`, `127.0.0.0/8` or `[::1]`, any port) nor one the operator
//! allowed (`--allow-origin`) is answered 403. A request without `Origin`
//! is not from a browser's page (the SDKs and CLIs send none) and passes
//! on to authentication as before.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use crate::error::Error;

/// The longest origin read; a longer one is refused unread.
const MAX_ORIGIN: usize = 512;

/// The origins allowed beyond the loopback ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    allowed: BTreeSet<String>,
}

impl Origins {
    /// Loopback origins and `allowed` (each `scheme://host[:port]`, no
    /// path; compared without case).
    pub fn new<I: IntoIterator<Item = String>>(allowed: I) -> Result<Self, Error> {
        let mut set = BTreeSet::new();
        for o in allowed {
            let lower = o.trim().to_ascii_lowercase();
            if split(&lower).is_none() {
                return Err(Error::Config(format!(
                    "--allow-origin {o:?}: expected SCHEME://HOST[:PORT] (no path), e.g. https://app.example.com"
                )));
            }
            set.insert(lower);
        }
        Ok(Self { allowed: set })
    }

    /// Whether a request with this `Origin` header (`None`: absent) may
    /// proceed.
    pub fn permits(&self, origin: Option<&str>) -> bool {
        let Some(origin) = origin else { return true };
        if origin.len() > MAX_ORIGIN {
            return false;
        }
        let lower = origin.trim().to_ascii_lowercase();
        self.allowed.contains(&lower) || is_loopback(&lower)
    }
}

/// `scheme://host[:port]` split into scheme and host (brackets kept for
/// IPv6), or `None` when it is not an origin.
fn split(origin: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = origin.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let host = if rest.starts_with('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        if !(after.is_empty() || after.starts_with(':')) {
            return None;
        }
        &rest[..=end]
    } else {
        rest.split(':').next()?
    };
    let port_ok = match rest[host.len()..].strip_prefix(':') {
        None => rest.len() == host.len(),
        Some(p) => !p.is_empty() && p.parse::<u16>().is_ok(),
    };
    (!host.is_empty() && port_ok).then_some((scheme, host))
}

fn is_loopback(origin: &str) -> bool {
    let Some((scheme, host)) = split(origin) else {
        return false;
    };
    if scheme != "http" && scheme != "https" {
        return false;
    }
    host == "localhost"
        || host == "[::1]"
        || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_allowed_origins_pass_others_do_not() {
        let o = Origins::new(["https://App.Example.com".to_owned()]).unwrap();
        for ok in [
            None,
            Some("http://localhost:5173"),
            Some("http://127.0.0.1"),
            Some("https://127.3.2.1:8443"),
            Some("http://[::1]:3000"),
            Some("https://app.example.com"),
            Some("HTTP://LOCALHOST"),
        ] {
            assert!(o.permits(ok), "{ok:?}");
        }
        for bad in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "null",
            "file://",
            "ws://localhost",
            "https://app.example.com:444",
            "http://localhost:99999",
            "http://user@localhost",
            "",
        ] {
            assert!(!o.permits(Some(bad)), "{bad:?}");
        }
        assert!(!o.permits(Some(&format!("http://localhost/{}", "a".repeat(600)))));
    }

    #[test]
    fn allowed_origins_are_checked() {
        for bad in [
            "app.example.com",
            "https://a.example/path",
            "https://",
            "https://a:x",
        ] {
            assert!(Origins::new([bad.to_owned()]).is_err(), "{bad}");
        }
    }
}
