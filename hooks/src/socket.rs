//! The daemon's Unix socket (`hookwire hooks serve --listen
//! unix:/path`): the socket's permissions authenticate the caller, so a
//! bearer token is optional there. The socket itself, its binding rules
//! and its peer check are `hookwire_edge::unix`; this module serves the
//! daemon's routes on it and counts refused peers in the daemon's
//! metrics.

use std::path::Path;

use tokio::net::UnixStream;

use crate::error::Error;
use crate::metrics::HooksMetrics;

pub use hookwire_edge::unix::MAX_SOCKET_PATH_BYTES;

/// The daemon's bound Unix socket, removed from the filesystem when
/// dropped.
#[derive(Debug)]
pub struct UnixSocket {
    inner: hookwire_edge::unix::UnixSocket,
}

impl UnixSocket {
    /// Binds a socket at `path` after the checks of
    /// [`hookwire_edge::unix`]. Must be called within a tokio runtime.
    pub fn bind(path: &Path) -> Result<Self, Error> {
        match hookwire_edge::unix::UnixSocket::bind(path) {
            Ok(inner) => Ok(Self { inner }),
            Err(hookwire_edge::Error::Socket { path, reason }) => {
                Err(Error::Socket { path, reason })
            }
            Err(other) => Err(Error::Socket {
                path: path.to_path_buf(),
                reason: other.to_string(),
            }),
        }
    }

    /// Counts refused peers in `metrics`.
    pub(crate) fn set_metrics(&mut self, metrics: Option<HooksMetrics>) {
        if let Some(m) = metrics {
            self.inner.on_refused(move || m.refused(None, "peer"));
        }
    }

    /// Where the socket is (its directory canonicalized).
    pub fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl axum::serve::Listener for UnixSocket {
    type Io = UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let stream = self.inner.accept().await;
            match stream.peer_addr() {
                Ok(addr) => return (stream, addr),
                // The peer left already: nothing to serve.
                Err(e) => {
                    tracing::debug!(error = %e, "hooks socket: a peer left before it was served")
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

#[cfg(test)]
mod tests;
