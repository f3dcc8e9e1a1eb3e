//! Who may use an edge: the clients file, one client per line as
//! `NAME SHA256-HEX` (the lowercase SHA-256 of its bearer token; `#`
//! comments and blank lines ignored). Only hashes are held, and every
//! presented token is compared against every hash in constant time
//! ([`crate::token::matching`]).
//!
//! [`Clients`] is one parsed file. [`WatchedClients`] is what a serving
//! edge holds: it looks at the file's identity (device, inode, size,
//! modification time) before each authentication and reads it again when
//! it changed, so that adding or revoking a client takes effect on the
//! next request, with no restart and no timer (a file changed in the
//! last two seconds is read on every use, since two writes within the
//! file system's timestamp granularity leave the same identity). A file that became
//! unreadable or invalid fails closed: every token is refused until it is
//! fixed, since the old list may still hold a revoked client.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::Error;
use crate::token::{self, MAX_TOKEN_BYTES};

/// The longest client name.
pub const MAX_CLIENT_NAME: usize = 128;
/// The most clients one file may list.
pub const MAX_CLIENTS: usize = 10_000;
/// The largest clients file read.
const MAX_FILE_BYTES: u64 = (MAX_CLIENTS as u64) * 256;

/// One parsed clients file.
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
            let bad = |why: &str| Error::Clients(format!("line {}: {why}", n + 1));
            let mut words = line.split_whitespace();
            let (Some(name), Some(hash), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad("expected `NAME SHA256-HEX`"));
            };
            if !is_client_name(name) {
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
            if entries.len() >= MAX_CLIENTS {
                return Err(bad(&format!("more than {MAX_CLIENTS} clients")));
            }
            entries.push((name.to_owned(), digest));
        }
        if entries.is_empty() {
            return Err(Error::Clients("the file lists no client".into()));
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

    /// How many clients the file lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list is empty (a parsed file never is).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Whether `name` can name a client: printable ASCII without spaces, at
/// most [`MAX_CLIENT_NAME`] bytes.
pub fn is_client_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_CLIENT_NAME && name.bytes().all(|b| b.is_ascii_graphic())
}

/// The identity of a file's content as the file system reports it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

impl Stamp {
    /// Whether the file changed so recently that a second change within
    /// the file system's timestamp granularity could leave the stamp as
    /// it was (git's "racily clean" case): such a file is read again.
    fn is_recent(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        now - self.mtime_ns < RACY_NS
    }
}

/// How long after a change a file is read on every use (see
/// [`Stamp::is_recent`]).
const RACY_NS: i128 = 2_000_000_000;

/// The list as last read: the clients, or why the file cannot be used.
struct Loaded {
    stamp: Option<Stamp>,
    clients: Result<Arc<Clients>, String>,
}

/// The clients an edge serves: a fixed list, or a file read again when it
/// changes (see the module docs).
pub struct WatchedClients {
    path: Option<PathBuf>,
    loaded: Mutex<Loaded>,
}

impl std::fmt::Debug for WatchedClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchedClients")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl From<Clients> for WatchedClients {
    fn from(clients: Clients) -> Self {
        Self {
            path: None,
            loaded: Mutex::new(Loaded {
                stamp: None,
                clients: Ok(Arc::new(clients)),
            }),
        }
    }
}

impl WatchedClients {
    /// Reads `path`, which must hold a valid list now; later changes are
    /// picked up as they come.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let (stamp, clients) = read(path);
        let clients = clients.map_err(Error::Clients)?;
        Ok(Self {
            path: Some(path.to_owned()),
            loaded: Mutex::new(Loaded {
                stamp,
                clients: Ok(Arc::new(clients)),
            }),
        })
    }

    /// The current list: read again first if the file changed. An error
    /// (the file is gone, unreadable or invalid; its message names the
    /// file and the line, never a hash) means no client may be admitted.
    pub fn current(&self) -> Result<Arc<Clients>, Error> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(path) = &self.path {
            let now = std::fs::metadata(path).ok().map(|m| Stamp::of(&m));
            if now.is_none() || now != loaded.stamp || now.is_some_and(|s| s.is_recent()) {
                let (stamp, clients) = read(path);
                loaded.stamp = stamp;
                loaded.clients = clients.map(Arc::new);
            }
        }
        loaded.clients.clone().map_err(Error::Clients)
    }

    /// The client whose token this is: `Ok(None)` for a token no client
    /// holds, an error when the list cannot be used (fail closed).
    pub fn authenticate(&self, token: &str) -> Result<Option<String>, Error> {
        Ok(self.current()?.authenticate(token).map(str::to_owned))
    }
}

/// Reads and parses the file at `path`, bounded, with the stamp it had
/// before it was read (a change while reading is seen next time).
fn read(path: &Path) -> (Option<Stamp>, Result<Clients, String>) {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return (None, Err(format!("{shown}: cannot read: {}", e.kind()))),
    };
    let stamp = Some(Stamp::of(&meta));
    if meta.len() > MAX_FILE_BYTES {
        return (
            stamp,
            Err(format!("{shown}: larger than {MAX_FILE_BYTES} bytes")),
        );
    }
    let parsed = match std::fs::read_to_string(path) {
        Ok(text) => Clients::parse(&text).map_err(|e| format!("{shown}: {e}")),
        Err(e) => Err(format!("{shown}: cannot read: {}", e.kind())),
    };
    (stamp, parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::sha256_hex;

    #[test]
    fn tokens_authenticate_their_client_only() {
        let text = format!(
            "# clients\n\nalice {}\nbob {}\n",
            sha256_hex("t-alice"),
            sha256_hex("t-bob")
        );
        let c = Clients::parse(&text).unwrap();
        assert_eq!(c.authenticate("t-alice"), Some("alice"));
        assert_eq!(c.authenticate("t-bob"), Some("bob"));
        assert_eq!(c.authenticate("t-eve"), None);
        assert_eq!(c.authenticate(""), None);
        assert_eq!(c.authenticate(&"x".repeat(MAX_TOKEN_BYTES + 1)), None);
        assert!(!format!("{c:?}").contains(&sha256_hex("t-alice")));
    }

    #[test]
    fn bad_files_are_refused_by_line() {
        let h = sha256_hex("a");
        for (text, want) in [
            ("", "lists no client"),
            ("alice", "line 1"),
            ("alice zz", "64 hex"),
            (&format!("alice {h} extra") as &str, "line 1"),
            (&format!("a {h}\na {}", sha256_hex("b")), "listed twice"),
            (&format!("a {h}\nb {h}"), "share one token"),
        ] {
            let e = Clients::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains(&h));
        }
    }

    #[test]
    fn a_watched_file_admits_added_clients_refuses_revoked_ones_and_fails_closed() {
        let dir = std::env::temp_dir().join(format!("hw-edge-clients-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clients");
        std::fs::write(&path, format!("alice {}\n", sha256_hex("t-alice"))).unwrap();
        let watched = WatchedClients::open(&path).unwrap();
        assert_eq!(
            watched.authenticate("t-alice").unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(watched.authenticate("t-bob").unwrap(), None);

        // Bob added, Alice revoked: each takes effect on the next call.
        std::fs::write(&path, format!("bob {}\n", sha256_hex("t-bob"))).unwrap();
        assert_eq!(
            watched.authenticate("t-bob").unwrap().as_deref(),
            Some("bob")
        );
        assert_eq!(watched.authenticate("t-alice").unwrap(), None);

        // A broken file refuses everyone, and says where, not what.
        std::fs::write(&path, format!("bob {} extra\n", sha256_hex("t-bob"))).unwrap();
        let e = watched.authenticate("t-bob").unwrap_err().to_string();
        assert!(
            e.contains("line 1") && !e.contains(&sha256_hex("t-bob")),
            "{e}"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(watched.authenticate("t-bob").is_err());

        // Fixed again: served again.
        std::fs::write(&path, format!("bob {}\n", sha256_hex("t-bob"))).unwrap();
        assert_eq!(
            watched.authenticate("t-bob").unwrap().as_deref(),
            Some("bob")
        );
        assert!(WatchedClients::open(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
