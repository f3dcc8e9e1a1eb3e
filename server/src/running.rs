//! A server running in a background task, for tests and examples.
//!
//! [`crate::spawn_local`] (or [`crate::Router::spawn_local`]) binds a free
//! port on 127.0.0.1 and returns a [`RunningServer`]: where to connect,
//! and a handle that shuts the server down gracefully, explicitly with
//! [`RunningServer::shutdown`] or implicitly when dropped.
//!
//! This module only holds the handle; the serving side
//! ([`crate::server`]) creates it, so the dependency points one way.

use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::Error;

/// A server serving in a tokio task. Dropping it starts a graceful
/// shutdown without waiting for it; [`shutdown`](Self::shutdown) waits.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    tls: bool,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), Error>>>,
}

impl RunningServer {
    pub(crate) fn new(
        addr: SocketAddr,
        stop: oneshot::Sender<()>,
        task: JoinHandle<Result<(), Error>>,
    ) -> Self {
        Self {
            addr,
            tls: false,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The bound address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Marks a server that speaks TLS, so its endpoint is `https://`.
    pub(crate) fn with_tls(mut self, tls: bool) -> Self {
        self.tls = tls;
        self
    }

    /// The URL a gRPC client connects to: `http://127.0.0.1:PORT`, or
    /// `https://` when the server was built with [`Server::tls`](crate::Server::tls).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Stops accepting connections, lets calls in flight complete, and
    /// returns once the server has stopped (with its error, if it failed).
    pub async fn shutdown(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
