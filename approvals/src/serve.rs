//! Running an approval service: the gRPC service and, optionally, the web
//! page on a second port, both over one [`ApprovalQueue`], both behind
//! one [`Access`] list, both over TLS when given a [`ServiceTls`].
//!
//! Shutdown first ends every host, approver and page stream, then stops
//! both servers gracefully. What happens to the hosts' pending requests
//! depends on the queue:
//!
//! - embedded ([`ApprovalQueue::new`]): they are withdrawn (nobody else
//!   holds them); hosts fail them at once, or, with a re-attach grace,
//!   send them again to whatever instance they reach next, where they are
//!   queued anew with what is left of their deadline;
//! - shared ([`ApprovalQueue::shared`], e.g. PostgreSQL): their links are
//!   [detached](super::HostLink::detach): the requests stay pending and
//!   decidable everywhere for the store's re-attach grace, and a host
//!   whose resolver knows another instance re-attaches them there by id
//!   with their original deadlines (a rolling restart loses nothing).
//!   What no host re-attaches within the grace is withdrawn as
//!   `host_gone`.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hookwire_server::Error as ServerError;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::auth::Access;
use super::grpc::{ApprovalGrpc, DEFAULT_HEARTBEAT_INTERVAL};
use super::notify::Notifications;
use super::queue::ApprovalQueue;
use super::tls::{ServiceTls, TlsListener};
use super::web;
use crate::error::Error;

/// An approval service to run: its queue and settings.
#[derive(Debug, Clone)]
pub struct ApprovalServer {
    queue: ApprovalQueue,
    access: Access,
    tls: Option<ServiceTls>,
    name: String,
    heartbeat: Duration,
    notifications: Option<Notifications>,
}

impl ApprovalServer {
    /// A service over a fresh queue for the principals of `access`,
    /// heartbeats every [`DEFAULT_HEARTBEAT_INTERVAL`], without TLS.
    pub fn new(access: Access) -> Self {
        Self::with_queue(ApprovalQueue::new(), access)
    }

    /// A service over `queue`, shared with in-process approvers.
    pub fn with_queue(queue: ApprovalQueue, access: Access) -> Self {
        Self {
            queue,
            access,
            tls: None,
            name: "hookwire-approvals".into(),
            heartbeat: DEFAULT_HEARTBEAT_INTERVAL,
            notifications: None,
        }
    }

    /// Serves gRPC and the page over TLS (`https://`), verifying client
    /// certificates when `tls` has a client authority.
    #[must_use]
    pub fn tls(mut self, tls: ServiceTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The name announced to hosts and approvers.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How often each side of a stream sends a heartbeat; a host silent
    /// for three intervals is dropped (and its requests withdrawn).
    #[must_use]
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat = interval;
        self
    }

    /// Notifies the channels of `notifications` on every new request,
    /// decision and expiry (see [`notify`](crate::notify)); their links
    /// point at the page's address unless the settings give a public URL.
    #[must_use]
    pub fn notify(mut self, notifications: Notifications) -> Self {
        self.notifications = Some(notifications);
        self
    }

    /// Exposes the service's `hookwire_approval_*` series in `registry`
    /// (see [`ApprovalQueue::register_metrics`]); serve it with
    /// [`serve_metrics`](hookwire_server::metrics::serve_metrics).
    #[must_use]
    pub fn metrics(self, registry: &mut prometheus_client::registry::Registry) -> Self {
        self.queue.register_metrics(registry);
        self
    }

    /// The queue.
    pub fn queue(&self) -> &ApprovalQueue {
        &self.queue
    }

    /// Binds `grpc` (and `web`, when given) and serves in background
    /// tasks. Must be called within a tokio runtime.
    pub async fn spawn(
        self,
        grpc: SocketAddr,
        web: Option<SocketAddr>,
    ) -> Result<RunningApprovalServer, Error> {
        let grpc_listener = bind(grpc).await?;
        let web_listener = match web {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        self.spawn_with_listeners(grpc_listener, web_listener)
    }

    /// Serves gRPC and the web page on free ports of 127.0.0.1: the
    /// convenience for tests and examples.
    pub async fn spawn_local(self) -> Result<RunningApprovalServer, Error> {
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        self.spawn(local, Some(local)).await
    }

    /// Serves until `signal` completes, then shuts down (see the module
    /// docs). For binaries.
    pub async fn serve_with_shutdown(
        self,
        grpc: SocketAddr,
        web: Option<SocketAddr>,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let running = self.spawn(grpc, web).await?;
        signal.await;
        running.shutdown().await
    }

    /// Serves on already bound listeners in background tasks: bind
    /// `127.0.0.1:0` first to learn the ports, or serve from code that
    /// cannot await. Must be called within a tokio runtime.
    pub fn spawn_with_listeners(
        self,
        grpc: TcpListener,
        web: Option<TcpListener>,
    ) -> Result<RunningApprovalServer, Error> {
        let grpc_addr = grpc.local_addr().map_err(ServerError::LocalAddr)?;
        let web_addr = web
            .as_ref()
            .map(|l| l.local_addr().map_err(ServerError::LocalAddr))
            .transpose()?;
        let (closing, closing_rx) = watch::channel(false);
        let web_tls = self
            .tls
            .as_ref()
            .map(ServiceTls::rustls_config)
            .transpose()?;
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = &self.tls {
            builder = builder.tls_config(tls.grpc_config())?;
        }
        let service = ApprovalGrpc::new(
            self.queue.clone(),
            self.access.clone(),
            self.name,
            self.heartbeat,
            closing_rx.clone(),
        )
        .into_server();
        let (stop_grpc, grpc_stopped) = oneshot::channel::<()>();
        let keepalive = self
            .heartbeat
            .clamp(Duration::from_secs(1), Duration::from_secs(3600));
        // Transport limits (connections, handshake and idle timeouts,
        // streams, accept back-off); the heartbeat keeps its own keepalive.
        let limits = hookwire_server::ServerLimits {
            keepalive_interval: keepalive,
            keepalive_timeout: keepalive.saturating_mul(3),
            ..hookwire_server::ServerLimits::default()
        };
        let (builder, incoming) = limits.harden(builder, grpc);
        let grpc_task = tokio::spawn(async move {
            tracing::info!(addr = %grpc_addr, "approval service serving");
            builder
                .http2_keepalive_interval(Some(keepalive))
                .http2_keepalive_timeout(Some(keepalive.saturating_mul(3)))
                .add_service(service)
                .add_optional_service(hookwire_server::reflection::v1())
                .add_optional_service(hookwire_server::reflection::v1alpha())
                .serve_with_incoming_shutdown(incoming, async move {
                    let _ = grpc_stopped.await;
                })
                .await
                .map_err(Error::from)
        });
        let (stop_web, web_task) = match web {
            None => (None, None),
            Some(listener) => {
                let (stop, stopped) = oneshot::channel::<()>();
                let app = web::router(
                    self.queue.clone(),
                    self.access.clone(),
                    web_tls.is_some(),
                    closing_rx,
                );
                let stopped = async move {
                    let _ = stopped.await;
                };
                let task = match web_tls {
                    None => tokio::spawn(async move {
                        tracing::info!(addr = ?web_addr, "approval web page serving");
                        axum::serve(listener, app)
                            .with_graceful_shutdown(stopped)
                            .await
                            .map_err(Error::Web)
                    }),
                    Some(config) => {
                        let listener = TlsListener::new(listener, config).map_err(Error::Web)?;
                        tokio::spawn(async move {
                            tracing::info!(addr = ?web_addr, "approval web page serving over TLS");
                            axum::serve(listener, app)
                                .with_graceful_shutdown(stopped)
                                .await
                                .map_err(Error::Web)
                        })
                    }
                };
                (Some(stop), Some(task))
            }
        };
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        if let Some(n) = self.notifications {
            let page = web_addr.map(|a| format!("{scheme}://{a}/"));
            n.spawn(&self.queue, self.access.clone(), page, closing.subscribe());
        }
        Ok(RunningApprovalServer {
            grpc_addr,
            web_addr,
            scheme,
            queue: self.queue,
            closing,
            stops: [Some(stop_grpc), stop_web],
            tasks: [Some(grpc_task), web_task],
        })
    }
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source }.into())
}

/// The longest [`RunningApprovalServer::shutdown`] waits for a shared
/// queue's last writes (a store that does not answer must not hold a
/// shutdown forever; what is not written waits out the store's lease).
pub const SHUTDOWN_FLUSH_BOUND: Duration = Duration::from_secs(5);

/// An approval service serving in background tasks. Dropping it starts a
/// shutdown without waiting; [`shutdown`](Self::shutdown) waits.
#[derive(Debug)]
pub struct RunningApprovalServer {
    grpc_addr: SocketAddr,
    web_addr: Option<SocketAddr>,
    scheme: &'static str,
    queue: ApprovalQueue,
    closing: watch::Sender<bool>,
    stops: [Option<oneshot::Sender<()>>; 2],
    tasks: [Option<JoinHandle<Result<(), Error>>>; 2],
}

impl RunningApprovalServer {
    /// The gRPC address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.grpc_addr
    }

    /// The URL hosts and approvers connect to, `http://127.0.0.1:PORT`
    /// (`https://` under TLS).
    pub fn endpoint(&self) -> String {
        format!("{}://{}", self.scheme, self.grpc_addr)
    }

    /// The web page's address, when served.
    pub fn web_addr(&self) -> Option<SocketAddr> {
        self.web_addr
    }

    /// The web page's URL, `http://127.0.0.1:PORT/` (`https://` under
    /// TLS), when served.
    pub fn web_url(&self) -> Option<String> {
        self.web_addr.map(|a| format!("{}://{a}/", self.scheme))
    }

    /// The queue, for in-process approvers.
    pub fn queue(&self) -> &ApprovalQueue {
        &self.queue
    }

    fn signal(&mut self) {
        let _ = self.closing.send(true);
        for stop in &mut self.stops {
            if let Some(s) = stop.take() {
                let _ = s.send(());
            }
        }
    }

    /// Ends every stream, stops both servers, and waits until they have
    /// stopped (with the first error, if one failed) and, for a shared
    /// queue, until what the ended streams left to the store (detached
    /// requests) is written, for at most [`SHUTDOWN_FLUSH_BOUND`].
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.signal();
        let mut result = Ok(());
        for task in &mut self.tasks {
            if let Some(t) = task.take() {
                let r = t.await.map_err(Error::from).and_then(|r| r);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        // Each host stream's task detaches its link before its response
        // ends, and the gRPC server stopped only after every response
        // ended: the detaches are queued by now.
        if tokio::time::timeout(SHUTDOWN_FLUSH_BOUND, self.queue.flush())
            .await
            .is_err()
        {
            tracing::warn!("approval store writes still pending at shutdown");
        }
        result
    }
}

impl Drop for RunningApprovalServer {
    fn drop(&mut self) {
        self.signal();
    }
}
