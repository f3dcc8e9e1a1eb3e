//! A Unix socket only its owner can reach: the transport for a
//! co-located caller (the hooks daemon's `unix:/path`, an interceptor
//! service's `unix:/path`), where the socket's permissions authenticate
//! the peer. The socket is created with mode 0600 in a directory the
//! user owns and nobody else can write to, bound in a private directory
//! beside its final path and renamed into place, so that it is never
//! reachable with looser permissions. A stale socket left by a process
//! that died is replaced; a live one (another process answers on it), an
//! existing file that is not a socket, a parent directory that is group-
//! or world-writable or owned by someone else are refused. The socket is
//! removed when dropped (if it is still the one this process created).
//!
//! Each accepted connection is checked once more: a peer whose user id
//! is not the socket owner's (only root can get past the mode) is
//! disconnected.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};

use crate::error::Error;

/// The longest socket path accepted, in bytes (the kernel's `sun_path`
/// holds 108 with its terminating zero; binding happens at a longer
/// temporary path first).
pub const MAX_SOCKET_PATH_BYTES: usize = 80;

/// How long a socket waits before accepting again after an accept
/// error other than a connection aborted by its peer (e.g. out of file
/// descriptors).
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A bound Unix socket, removed from the filesystem when dropped.
pub struct UnixSocket {
    listener: UnixListener,
    path: PathBuf,
    owner: u32,
    identity: (u64, u64),
    /// Called for each peer refused by the user-id check (a metric).
    on_refused: Option<RefusedHook>,
}

/// What a socket's owner is told when a peer is refused.
type RefusedHook = Arc<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for UnixSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixSocket")
            .field("path", &self.path)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl UnixSocket {
    /// Binds a socket at `path` after the checks the module describes.
    /// Must be called within a tokio runtime.
    pub fn bind(path: &Path) -> Result<Self, Error> {
        let refuse = |reason: String| Error::Socket {
            path: path.to_path_buf(),
            reason,
        };
        if path.as_os_str().len() > MAX_SOCKET_PATH_BYTES {
            return Err(refuse(format!(
                "longer than {MAX_SOCKET_PATH_BYTES} bytes (use a shorter path, e.g. under $XDG_RUNTIME_DIR)"
            )));
        }
        let Some(name) = path.file_name() else {
            return Err(refuse("names no file".into()));
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let parent = std::fs::canonicalize(&parent)
            .map_err(|e| refuse(format!("its directory {}: {e}", parent.display())))?;
        let dir = std::fs::metadata(&parent)
            .map_err(|e| refuse(format!("its directory {}: {e}", parent.display())))?;
        if !dir.is_dir() {
            return Err(refuse(format!("{} is not a directory", parent.display())));
        }
        if dir.mode() & 0o022 != 0 {
            return Err(refuse(format!(
                "its directory {} is group- or world-writable (mode {:o}): another user could replace the socket; use a directory only you can write to",
                parent.display(),
                dir.mode() & 0o7777
            )));
        }
        let path = parent.join(name);
        check_existing(&path).map_err(refuse)?;
        // Bound in a private (0700) directory, made 0600, then renamed
        // into place: never reachable with the umask's permissions.
        let private = tempfile::Builder::new()
            .prefix(".hookwire-sock-")
            .tempdir_in(&parent)
            .map_err(|e| {
                refuse(format!(
                    "cannot create a directory in {}: {e}",
                    parent.display()
                ))
            })?;
        let staged = private.path().join("s");
        let std_listener = std::os::unix::net::UnixListener::bind(&staged)
            .map_err(|e| refuse(format!("cannot bind: {e}")))?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| refuse(format!("cannot make it 0600: {e}")))?;
        // The socket was created by this process: its owner is the user
        // this process runs as.
        let owner = std::fs::metadata(&staged)
            .map_err(|e| refuse(format!("cannot read it back: {e}")))?
            .uid();
        if dir.uid() != owner {
            return Err(refuse(format!(
                "its directory {} belongs to user {}, not to the user {owner} this process runs as",
                parent.display(),
                dir.uid()
            )));
        }
        std::fs::rename(&staged, &path)
            .map_err(|e| refuse(format!("cannot move it into place: {e}")))?;
        let placed = std::fs::symlink_metadata(&path)
            .map_err(|e| refuse(format!("cannot read it back: {e}")))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| refuse(format!("cannot make it non-blocking: {e}")))?;
        let listener = UnixListener::from_std(std_listener)
            .map_err(|e| refuse(format!("cannot listen: {e}")))?;
        Ok(Self {
            listener,
            path,
            owner,
            identity: (placed.dev(), placed.ino()),
            on_refused: None,
        })
    }

    /// Calls `hook` for each peer the user-id check refuses (to count
    /// them).
    pub fn on_refused(&mut self, hook: impl Fn() + Send + Sync + 'static) {
        self.on_refused = Some(Arc::new(hook));
    }

    /// The user id that owns the socket (the process's): the only peer
    /// accepted.
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// The next connection of a peer running as the socket's owner.
    /// Peers of other users are disconnected (logged, and counted by the
    /// [`on_refused`](Self::on_refused) hook); accept errors other than a
    /// peer's abort pause [`ACCEPT_BACKOFF`] before the next try, so an
    /// exhausted descriptor table is not a busy loop.
    pub async fn accept(&self) -> UnixStream {
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) => match stream.peer_cred() {
                    Ok(cred) if cred.uid() == self.owner => return stream,
                    other => {
                        let peer =
                            other.map_or_else(|e| e.to_string(), |c| format!("uid {}", c.uid()));
                        tracing::warn!(socket = %self.path.display(), peer = %peer, "a peer that is not the socket's owner was disconnected");
                        if let Some(hook) = &self.on_refused {
                            hook();
                        }
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    tracing::warn!(socket = %self.path.display(), error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    /// The listener's own address.
    pub fn local_addr(&self) -> std::io::Result<tokio::net::unix::SocketAddr> {
        self.listener.local_addr()
    }

    /// Where the socket is (its directory canonicalized).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Refuses an existing `path` unless it is a stale socket (nobody
/// answers on it), which the rename then replaces.
fn check_existing(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot inspect it: {e}")),
    };
    if !meta.file_type().is_socket() {
        return Err("exists and is not a socket: refusing to replace it".into());
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err("another process is listening on it (a running service?)".into()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
        Err(e) => Err(format!("exists and cannot be probed: {e}")),
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        // Only the socket this process placed: a later one's stays.
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours && let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the socket");
        }
    }
}

#[cfg(test)]
mod tests;
