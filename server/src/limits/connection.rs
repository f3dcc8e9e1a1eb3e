//! One accepted connection under the limits: it holds its connection slot
//! while open and fails its reads, which closes the HTTP/2 connection, once
//! the peer has been silent past its handshake or idle timeout. The same
//! for a TCP connection and one on an owner-only Unix socket.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

use super::settings::ServerLimits;

/// Bytes a peer must send before its handshake counts as begun: the length
/// of the HTTP/2 client connection preface (a TLS ClientHello is longer).
pub const HANDSHAKE_BYTES: u64 = 24;

/// One accepted connection: holds its slot until dropped, and fails its
/// reads (so the HTTP/2 connection closes) once the peer has been silent
/// past its handshake or idle timeout.
pub struct LimitedConnection {
    stream: Socket,
    _slot: OwnedSemaphorePermit,
    received: u64,
    accepted: Instant,
    last_read: Instant,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl std::fmt::Debug for LimitedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedConnection")
            .field("peer", &self.stream.peer())
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl LimitedConnection {
    pub(super) fn new(stream: Socket, slot: OwnedSemaphorePermit, limits: &ServerLimits) -> Self {
        let now = Instant::now();
        Self {
            stream,
            _slot: slot,
            received: 0,
            accepted: now,
            last_read: now,
            handshake_timeout: limits.handshake_timeout,
            idle_timeout: limits.effective_idle_timeout(),
            deadline: Box::pin(tokio::time::sleep_until(now + limits.handshake_timeout)),
        }
    }

    /// When the connection times out if nothing more arrives.
    fn due(&self) -> Instant {
        if self.received < HANDSHAKE_BYTES {
            // The handshake clock runs from accept, whatever trickled in.
            self.accepted + self.handshake_timeout
        } else {
            self.last_read + self.idle_timeout
        }
    }

    /// `Pending` while the connection may still wait; the timeout error
    /// once it may not.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            ready!(self.deadline.as_mut().poll(cx));
            let due = self.due();
            if due <= Instant::now() {
                let phase = if self.received < HANDSHAKE_BYTES {
                    "handshake"
                } else {
                    "idle"
                };
                tracing::debug!(peer = ?self.stream.peer(), phase, "closing a silent connection");
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connection {phase} timeout"),
                ));
            }
            self.deadline.as_mut().reset(due);
        }
    }
}

impl Connected for LimitedConnection {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        match &self.stream {
            Socket::Tcp(stream) => stream.connect_info(),
            // A Unix peer has no address: its user id was checked on accept.
            Socket::Unix(_) => TcpConnectInfo {
                local_addr: None,
                remote_addr: None,
            },
        }
    }
}

impl AsyncRead for LimitedConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n > 0 {
                    self.received = self.received.saturating_add(n);
                    self.last_read = Instant::now();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.poll_deadline(cx) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for LimitedConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// An accepted stream: TCP, or an owner-only Unix socket's.
pub(super) enum Socket {
    /// A TCP connection (`TCP_NODELAY` set).
    Tcp(TcpStream),
    /// A connection on a Unix socket, its peer's user id checked.
    Unix(UnixStream),
}

impl Socket {
    /// The peer, for logs: its address, or `unix` on a Unix socket.
    fn peer(&self) -> Option<String> {
        match self {
            Self::Tcp(s) => s.peer_addr().ok().map(|a| a.to_string()),
            Self::Unix(_) => Some("unix".to_owned()),
        }
    }
}

/// Calls `$method` on whichever stream `$self` holds.
macro_rules! either {
    ($self:expr, $s:ident => $body:expr) => {
        match $self.get_mut() {
            Socket::Tcp($s) => $body,
            Socket::Unix($s) => $body,
        }
    };
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        either!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        either!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        either!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Tcp(s) => s.is_write_vectored(),
            Self::Unix(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        either!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        either!(self, s => Pin::new(s).poll_shutdown(cx))
    }
}
