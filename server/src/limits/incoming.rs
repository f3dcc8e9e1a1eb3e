//! The accept loop under the limits: at most
//! [`max_connections`](ServerLimits::max_connections) connections at once,
//! each a [`LimitedConnection`], and a pause after each accept error (the
//! `backoff` module) instead of a spin. The listener is a TCP one or an
//! owner-only Unix socket (`hookwire_edge::unix`), whose own accept checks
//! the peer's user id and pauses after errors.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use hookwire_edge::unix::UnixSocket;

use super::connection::{LimitedConnection, Socket};
use super::settings::ServerLimits;
use hookwire::backoff::Backoff;

/// The first step of the accept loop's back-off after an accept error.
const ACCEPT_BACKOFF_BASE: Duration = Duration::from_millis(5);

impl ServerLimits {
    /// Applies every limit: the HTTP/2 settings to `server`, and the
    /// connection limit, timeouts and accept back-off to the stream of
    /// connections accepted on `listener`. Serve with
    /// `server.add_service(..).serve_with_incoming_shutdown(incoming, signal)`.
    pub fn harden<L>(
        &self,
        server: tonic::transport::Server<L>,
        listener: TcpListener,
    ) -> (tonic::transport::Server<L>, LimitedIncoming) {
        (self.apply(server), self.incoming(listener))
    }

    /// The connection half of [`harden`](Self::harden): `listener`'s
    /// connections, at most [`max_connections`](Self::max_connections) at
    /// once, each closed when its handshake or idle timeout expires.
    pub fn incoming(&self, listener: TcpListener) -> LimitedIncoming {
        LimitedIncoming::new(Listener::Tcp(listener), *self)
    }

    /// [`incoming`](Self::incoming) for an owner-only Unix socket: the
    /// same connection limit and timeouts; peers of other users never
    /// take a slot.
    pub fn incoming_unix(&self, socket: UnixSocket) -> LimitedIncoming {
        LimitedIncoming::new(Listener::Unix(socket), *self)
    }
}

/// The connections accepted on a listener under [`ServerLimits`]: a
/// `Stream` for tonic's `serve_with_incoming*`. Accept errors never reach
/// tonic (which would retry at once); they are logged and retried after a
/// growing sleep.
pub struct LimitedIncoming {
    inner: Pin<Box<dyn Stream<Item = io::Result<LimitedConnection>> + Send>>,
}

impl std::fmt::Debug for LimitedIncoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedIncoming").finish_non_exhaustive()
    }
}

/// What the accept loop accepts on.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixSocket),
}

struct AcceptLoop {
    listener: Listener,
    slots: Arc<Semaphore>,
    limits: ServerLimits,
}

impl LimitedIncoming {
    fn new(listener: Listener, limits: ServerLimits) -> Self {
        let state = AcceptLoop {
            listener,
            slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            limits,
        };
        let stream = futures::stream::unfold(state, |state| async move {
            let connection = state.next().await;
            Some((Ok(connection), state))
        });
        Self {
            inner: Box::pin(stream),
        }
    }
}

impl AcceptLoop {
    /// Waits for a free slot, then for a connection, sleeping after each
    /// accept error.
    async fn next(&self) -> LimitedConnection {
        let mut backoff = Backoff::new(ACCEPT_BACKOFF_BASE, self.limits.accept_backoff_max);
        loop {
            let permit = match self.slots.clone().acquire_owned().await {
                Ok(permit) => permit,
                // The semaphore is never closed; waiting forever is the
                // truthful answer if it were.
                Err(_) => std::future::pending().await,
            };
            let listener = match &self.listener {
                Listener::Tcp(listener) => listener,
                Listener::Unix(socket) => {
                    let stream = socket.accept().await;
                    return LimitedConnection::new(Socket::Unix(stream), permit, &self.limits);
                }
            };
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return LimitedConnection::new(Socket::Tcp(stream), permit, &self.limits);
                }
                // The peer gave up between SYN and accept: nothing to wait for.
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    let pause = backoff.next_delay();
                    tracing::warn!(error = %e, retry_in = ?pause, "accept failed; backing off");
                    drop(permit);
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

/// Errors of one connection, not of the listener: retried at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

impl Stream for LimitedIncoming {
    type Item = io::Result<LimitedConnection>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
