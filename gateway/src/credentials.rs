//! The pool of upstream keys: read once from environment variables or
//! files, held as [`Secret`]s that never print, and selected per request
//! (round robin, or by label when an interceptor's `before_credentials`
//! stage asks for one). A key reaches nothing but the upstream's
//! `Authorization` header: not a log line, not an error, not a record.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::HeaderValue;

use crate::error::Error;

/// How many keys one pool holds at most.
pub const MAX_CREDENTIALS: usize = 256;
/// How long one key may be, in bytes.
pub const MAX_KEY_BYTES: usize = 4096;

/// A key that never prints: `Debug` and `Display` show `[redacted]`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The `Authorization: Bearer …` header value, marked sensitive so
    /// that hyper never logs it.
    fn bearer(&self) -> Option<HeaderValue> {
        let mut v = HeaderValue::from_str(&format!("Bearer {}", self.0)).ok()?;
        v.set_sensitive(true);
        Some(v)
    }

    /// The key alone as a header value, marked sensitive.
    fn raw(&self) -> Option<HeaderValue> {
        let mut v = HeaderValue::from_str(&self.0).ok()?;
        v.set_sensitive(true);
        Some(v)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// One key of the pool with the label that names it in records.
#[derive(Clone, Debug)]
struct Credential {
    label: String,
    header: HeaderValue,
    key: HeaderValue,
}

/// The upstream keys the gateway chooses from; see the module docs.
#[derive(Debug, Default)]
pub struct CredentialPool {
    keys: Vec<Credential>,
    next: AtomicUsize,
}

/// The credential chosen for one request: its label (what records show)
/// and the header values (what the upstream receives), both marked
/// sensitive.
#[derive(Debug, Clone)]
pub(crate) struct Chosen {
    /// What records show.
    pub(crate) label: String,
    /// `Bearer KEY`, for `Authorization`.
    pub(crate) header: HeaderValue,
    /// The key alone, for an API that takes it in its own header
    /// (Anthropic's `x-api-key`).
    pub(crate) key: HeaderValue,
}

impl CredentialPool {
    /// An empty pool: the client's own `Authorization` header is
    /// forwarded unchanged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key` under `label` (unique; e.g. `team-a`).
    pub fn with_key(mut self, label: impl Into<String>, key: Secret) -> Result<Self, Error> {
        let label = label.into();
        if self.keys.len() >= MAX_CREDENTIALS {
            return Err(Error::Credential {
                label,
                reason: format!("the pool holds at most {MAX_CREDENTIALS} keys"),
            });
        }
        if self.keys.iter().any(|c| c.label == label) {
            return Err(Error::Credential {
                label,
                reason: "duplicate label".into(),
            });
        }
        let bad = |reason: &str| Error::Credential {
            label: label.clone(),
            reason: reason.into(),
        };
        if key.0.is_empty() {
            return Err(bad("empty key"));
        }
        if key.0.len() > MAX_KEY_BYTES {
            return Err(bad("key too long"));
        }
        let (Some(header), Some(raw)) = (key.bearer(), key.raw()) else {
            return Err(bad("the key is not a valid header value"));
        };
        self.keys.push(Credential {
            label,
            header,
            key: raw,
        });
        Ok(self)
    }

    /// Adds the key held by the environment variable `name`, labelled
    /// `env:NAME`.
    pub fn with_env(self, name: &str) -> Result<Self, Error> {
        let label = format!("env:{name}");
        let key = std::env::var(name).map_err(|_| Error::Credential {
            label: label.clone(),
            reason: "the variable is not set (or not UTF-8)".into(),
        })?;
        self.with_key(label, Secret::new(key.trim()))
    }

    /// Adds every non-empty, non-`#` line of `path` as a key, labelled
    /// `file:PATH#LINE` (1-based).
    pub fn with_file(mut self, path: &Path) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| Error::Credential {
            label: format!("file:{shown}"),
            reason: format!("cannot read: {}", e.kind()),
        })?;
        if meta.len() > (MAX_CREDENTIALS * (MAX_KEY_BYTES + 1)) as u64 {
            return Err(Error::Credential {
                label: format!("file:{shown}"),
                reason: "file too large".into(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::Credential {
            label: format!("file:{shown}"),
            reason: format!("cannot read: {}", e.kind()),
        })?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self = self.with_key(format!("file:{shown}#{}", i + 1), Secret::new(line))?;
        }
        Ok(self)
    }

    /// How many keys the pool holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the pool is empty (the client's own key is forwarded).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The labels, in pool order.
    pub fn labels(&self) -> Vec<String> {
        self.keys.iter().map(|c| c.label.clone()).collect()
    }

    /// The key for one request: the one labelled `wanted`, or the next in
    /// round-robin order. `Ok(None)` for an empty pool; an unknown label
    /// is an error naming the label.
    pub(crate) fn choose(&self, wanted: Option<&str>) -> Result<Option<Chosen>, String> {
        if self.keys.is_empty() {
            return match wanted {
                Some(w) => Err(format!("credential {w:?} asked for, but the pool is empty")),
                None => Ok(None),
            };
        }
        let c = match wanted {
            Some(w) => self
                .keys
                .iter()
                .find(|c| c.label == w)
                .ok_or_else(|| format!("no credential labelled {w:?} in the pool"))?,
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.keys.len();
                &self.keys[i]
            }
        };
        Ok(Some(Chosen {
            label: c.label.clone(),
            header: c.header.clone(),
            key: c.key.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_prints_and_round_robin_cycles() {
        let pool = CredentialPool::new()
            .with_key("a", Secret::new("sk-aaaa"))
            .unwrap()
            .with_key("b", Secret::new("sk-bbbb"))
            .unwrap();
        let shown = format!("{pool:?} {:?} {}", Secret::new("sk-x"), Secret::new("sk-x"));
        assert!(!shown.contains("sk-"), "{shown}");
        let labels: Vec<_> = (0..4)
            .map(|_| pool.choose(None).unwrap().unwrap().label)
            .collect();
        assert_eq!(labels, ["a", "b", "a", "b"]);
        assert_eq!(pool.choose(Some("b")).unwrap().unwrap().label, "b");
        let err = pool.choose(Some("c")).unwrap_err();
        assert!(err.contains("\"c\""), "{err}");
        let dup = pool.with_key("a", Secret::new("sk-cccc")).unwrap_err();
        assert!(!dup.to_string().contains("sk-"), "{dup}");
    }

    #[test]
    fn keys_come_from_files_line_by_line_and_errors_name_labels_only() {
        let dir = std::env::temp_dir().join(format!("hwgw-cred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        std::fs::write(&path, "# pool\nsk-one\n\n sk-two \n").unwrap();
        let pool = CredentialPool::new().with_file(&path).unwrap();
        assert_eq!(pool.len(), 2);
        assert!(pool.labels()[1].ends_with("keys#4"), "{:?}", pool.labels());
        std::fs::write(&path, "sk-bad\nkey\u{7f}withcontrol\n").unwrap();
        let err = CredentialPool::new().with_file(&path).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("#2") && !text.contains("withcontrol"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
