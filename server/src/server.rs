//! Serving: a builder for the transport settings and tower layers, and the
//! [`Router`] that binds and runs one interceptor service with health.
//!
//! The flow mirrors tonic's: `Server::builder()`, settings and layers,
//! `.service(s)`, then one of the `serve*` methods. Shutdown is always
//! graceful: when the signal fires the listener closes, health turns
//! `NOT_SERVING`, and calls in flight complete before `serve*` returns.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use hookwire::Interceptor;
use hookwire::pb::interceptor_server::InterceptorServer;
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Bytes, Service, StdError};
use tonic_health::server::HealthReporter;
use tower::Layer;
use tower::layer::util::{Identity, Stack};

use crate::adapter::{DEFAULT_MAX_MESSAGE_BYTES, GrpcAdapter};
use crate::error::Error;
use crate::health::ServerHealth;
use crate::limits::{LimitedIncoming, ServerLimits};
use crate::metrics::ServerMetrics;
use crate::running::RunningServer;
use crate::services::Services;

/// Transport settings and tower layers for an interceptor server; the
/// starting point of `Server::builder().service(s).serve(addr)`.
///
/// `L` is the stack of tower layers added with [`layer`](Self::layer);
/// they wrap every request, health checks included, as HTTP requests.
#[derive(Debug, Clone)]
pub struct Server<L = Identity> {
    inner: tonic::transport::Server<L>,
    max_message_bytes: usize,
    tls: Option<TlsSettings>,
    metrics: Option<ServerMetrics>,
    limits: ServerLimits,
}

/// What the TLS acceptor is rebuilt from when a setting is added (always
/// `None` in a build without the `tls` feature).
#[derive(Clone)]
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
struct TlsSettings {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    client_ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("key_pem", &format_args!("<redacted>"))
            .field("client_ca", &self.client_ca_pem.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "tls")]
impl TlsSettings {
    fn server_config(&self) -> tonic::transport::ServerTlsConfig {
        let identity = tonic::transport::Identity::from_pem(&self.cert_pem, &self.key_pem);
        let config = tonic::transport::ServerTlsConfig::new().identity(identity);
        match &self.client_ca_pem {
            Some(ca) => config
                .client_ca_root(tonic::transport::Certificate::from_pem(ca))
                .client_auth_optional(false),
            None => config,
        }
    }
}

impl Server<Identity> {
    /// A server with no call timeout, no per-connection concurrency limit,
    /// requests up to [`DEFAULT_MAX_MESSAGE_BYTES`], and the default
    /// transport limits ([`ServerLimits::default`]: connection limit,
    /// handshake and idle timeouts, keepalive, streams per connection,
    /// accept back-off).
    pub fn builder() -> Self {
        Self {
            inner: tonic::transport::Server::builder(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            tls: None,
            metrics: None,
            limits: ServerLimits::default(),
        }
    }
}

impl Default for Server<Identity> {
    fn default() -> Self {
        Self::builder()
    }
}

impl<L> Server<L> {
    /// Bounds every call: one that runs longer fails with `CANCELLED`
    /// ("Timeout expired"), which the host treats as an interceptor
    /// failure. A shorter `grpc-timeout` sent by the client wins.
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Self {
        Self {
            inner: self.inner.timeout(timeout),
            ..self
        }
    }

    /// Runs at most `limit` calls at once per client connection; further
    /// calls wait for a slot. Protects a service whose hooks are costly.
    #[must_use]
    pub fn concurrency_limit_per_connection(self, limit: usize) -> Self {
        Self {
            inner: self.inner.concurrency_limit_per_connection(limit),
            ..self
        }
    }

    /// Largest request decoded, in bytes (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]); larger ones fail with `OUT_OF_RANGE`
    /// (tonic's status for an oversized message) before any hook runs, which
    /// the host fails closed as it does every error status. Keep it above
    /// the hosts' context bound.
    #[must_use]
    pub fn max_message_size(self, bytes: usize) -> Self {
        Self {
            max_message_bytes: bytes,
            ..self
        }
    }

    /// Replaces the transport limits (connections, handshake and idle
    /// timeouts, keepalive, streams per connection, accept back-off); see
    /// [`ServerLimits`] for what each bounds and its default.
    #[must_use]
    pub fn limits(self, limits: ServerLimits) -> Self {
        Self { limits, ..self }
    }

    /// Counts requests, failures, latency and requests in flight in
    /// `metrics` (the `hookwire_interceptor_*` families of
    /// docs/operating.md, registered with [`ServerMetrics::register`]);
    /// serve the registry with
    /// [`serve_metrics`](crate::metrics::serve_metrics) or your own endpoint.
    #[must_use]
    pub fn metrics(self, metrics: ServerMetrics) -> Self {
        Self {
            metrics: Some(metrics),
            ..self
        }
    }

    /// Serves over TLS with this PEM certificate chain and private key, so
    /// hosts reach the service at `https://` (see the host's `TlsConfig`).
    /// Needs the `tls` feature (on by default).
    #[cfg(feature = "tls")]
    pub fn tls(self, cert_pem: impl AsRef<[u8]>, key_pem: impl AsRef<[u8]>) -> Result<Self, Error> {
        let settings = TlsSettings {
            cert_pem: cert_pem.as_ref().to_vec(),
            key_pem: key_pem.as_ref().to_vec(),
            client_ca_pem: self.tls.as_ref().and_then(|t| t.client_ca_pem.clone()),
        };
        self.with_tls(settings)
    }

    /// Requires mutual TLS: every host must present a client certificate
    /// signed by this PEM authority, or its handshake is refused and no
    /// hook runs. Hooks see the verified caller through
    /// [`Peer::current`](crate::Peer::current). Needs [`tls`](Self::tls)
    /// first ([`Error::ClientCaWithoutTls`] otherwise). Needs the `tls`
    /// feature.
    #[cfg(feature = "tls")]
    pub fn client_ca(self, ca_pem: impl AsRef<[u8]>) -> Result<Self, Error> {
        let Some(settings) = self.tls.clone() else {
            return Err(Error::ClientCaWithoutTls);
        };
        self.with_tls(TlsSettings {
            client_ca_pem: Some(ca_pem.as_ref().to_vec()),
            ..settings
        })
    }

    #[cfg(feature = "tls")]
    fn with_tls(self, settings: TlsSettings) -> Result<Self, Error> {
        let inner = self.inner.tls_config(settings.server_config())?;
        Ok(Self {
            inner,
            tls: Some(settings),
            ..self
        })
    }

    /// Adds a tower layer around every request (tracing, auth, metrics,
    /// rate limits, ...). Layers added later wrap those added earlier.
    pub fn layer<N>(self, layer: N) -> Server<Stack<N, L>> {
        Server {
            inner: self.inner.layer(layer),
            max_message_bytes: self.max_message_bytes,
            metrics: self.metrics,
            tls: self.tls,
            limits: self.limits,
        }
    }

    /// Mounts `service` (and the health and gRPC reflection services) and
    /// returns the router that serves them.
    pub fn service<S: Interceptor>(self, service: S) -> Router<L> {
        let (health, health_service) = ServerHealth::new();
        let interceptor: InterceptorServer<GrpcAdapter> = GrpcAdapter::new(service)
            .with_drain(health.drain())
            .with_metrics(self.metrics.as_ref())
            .into_server()
            .max_decoding_message_size(self.max_message_bytes);
        let services = Services::default()
            .with(health_service)
            .with(interceptor)
            .with_optional(crate::reflection::v1())
            .with_optional(crate::reflection::v1alpha());
        Router {
            server: self.limits.apply(self.inner),
            services,
            health,
            tls: self.tls.is_some(),
            limits: self.limits,
        }
    }
}

/// Serves `service` with default settings on a free port of 127.0.0.1 in
/// a background task: `Server::builder().service(service).spawn_local()`.
/// Must be called within a tokio runtime.
pub async fn spawn_local<S: Interceptor>(service: S) -> Result<RunningServer, Error> {
    Server::builder().service(service).spawn_local().await
}

/// One interceptor service and its health service, ready to serve.
#[derive(Debug)]
pub struct Router<L = Identity> {
    server: tonic::transport::Server<L>,
    services: Services,
    health: ServerHealth,
    tls: bool,
    limits: ServerLimits,
}

impl<L> Router<L> {
    /// The health reporter, for a service that wants to report
    /// `NOT_SERVING` itself (e.g. while a backend it needs is down).
    pub fn health_reporter(&self) -> HealthReporter {
        self.health.reporter().clone()
    }
}

impl<L, ResBody> Router<L>
where
    L: Layer<Services> + Send + 'static,
    L::Service: Service<Request<Body>, Response = Response<ResBody>> + Clone + Send + 'static,
    <L::Service as Service<Request<Body>>>::Future: Send,
    <L::Service as Service<Request<Body>>>::Error: Into<StdError> + Send,
    ResBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    /// Binds `addr` and serves until the process ends.
    pub async fn serve(self, addr: SocketAddr) -> Result<(), Error> {
        self.serve_with_shutdown(addr, std::future::pending()).await
    }

    /// Binds `addr` and serves until `signal` completes, then shuts down
    /// gracefully.
    pub async fn serve_with_shutdown(
        self,
        addr: SocketAddr,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        self.serve_with_listener(listener, signal).await
    }

    /// Serves on an already bound listener until `signal` completes, then
    /// shuts down gracefully. Bind `127.0.0.1:0` first to learn the port
    /// before serving.
    pub async fn serve_with_listener(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        self.health.serving().await;
        let at = listener.local_addr().map_err(Error::LocalAddr)?.to_string();
        let incoming = self.limits.incoming(listener);
        self.run(incoming, at, signal).await
    }

    /// Binds an owner-only Unix socket at `path` and serves until
    /// `signal` completes, then shuts down gracefully and removes the
    /// socket: the transport for a host on the same machine
    /// (`unix:/path` endpoints). The socket is 0600 in a directory only
    /// this user can write to, and a peer of another user is disconnected
    /// on accept (`hookwire_edge::unix` has every rule); the server's
    /// connection limit and timeouts apply as on TCP.
    pub async fn serve_unix_with_shutdown(
        self,
        path: &Path,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let socket = hookwire_edge::unix::UnixSocket::bind(path)?;
        self.serve_unix_socket(socket, signal).await
    }

    /// Serves on an owner-only Unix socket already bound (bind first to
    /// announce the socket only once it accepts) until `signal`
    /// completes; the socket is removed when serving ends.
    pub async fn serve_unix_socket(
        self,
        socket: hookwire_edge::unix::UnixSocket,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let at = format!("unix:{}", socket.path().display());
        self.health.serving().await;
        let incoming = self.limits.incoming_unix(socket);
        self.run(incoming, at, signal).await
    }

    /// Binds `127.0.0.1:0` and serves in a background task: the
    /// convenience for tests and examples. Health is `SERVING` when this
    /// returns. See [`RunningServer`].
    pub async fn spawn_local(self) -> Result<RunningServer, Error> {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local = listener.local_addr().map_err(Error::LocalAddr)?;
        self.health.serving().await;
        let self_tls = self.tls;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming = self.limits.incoming(listener);
        let task = tokio::spawn(self.run(incoming, local.to_string(), async move {
            // A dropped sender is a shutdown request too.
            let _ = stopped.await;
        }));
        Ok(RunningServer::new(local, stop, task).with_tls(self_tls))
    }

    /// Serves `incoming` (accepted at `addr`) until `signal`, with
    /// health already marked `SERVING`.
    async fn run(
        self,
        incoming: LimitedIncoming,
        addr: String,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let health = self.health;
        tracing::info!(%addr, "interceptor serving");
        let draining = health.clone();
        let signal = async move {
            signal.await;
            tracing::info!(%addr, "interceptor shutting down");
            draining.shutting_down().await;
        };
        let served = self
            .server
            .serve_with_incoming_shutdown(self.services, incoming, signal)
            .await;
        if served.is_err() {
            health.shutting_down().await;
        }
        served.map_err(Error::from)
    }
}
