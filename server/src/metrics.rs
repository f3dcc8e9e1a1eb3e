//! Prometheus metrics of an interceptor service, and the `/metrics`
//! endpoint that exposes a registry (this one's, a host's, an approval
//! service's, or all of them in one).
//!
//! Like the host's, every family registers in a
//! [`prometheus_client`] registry the caller owns
//! ([`Server::metrics`](crate::Server::metrics)), and the hot path touches
//! only handles resolved when the service is built. Names:
//! `hookwire_interceptor_*` (docs/operating.md).

use std::borrow::Cow;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt as _;
use hookwire::{Decision, InterceptionPoint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::limits::ServerLimits;

/// The interceptor services' metric families: requests by service, point
/// and decision, failures by kind, handler latency and requests in flight.
/// Register once per registry and hand a clone to every service of the
/// process ([`Server::metrics`](crate::Server::metrics)): the `service`
/// label (the manifest's name) tells them apart.
#[derive(Clone, Debug)]
pub struct ServerMetrics {
    families: Arc<ServerFamilies>,
}

#[derive(Debug)]
struct ServerFamilies {
    requests: Family<[Label; 3], Counter>,
    failures: Family<[Label; 3], Counter>,
    duration: Family<[Label; 2], Histogram, fn() -> Histogram>,
    in_flight: Family<[Label; 1], Gauge>,
}

/// One service's pre-resolved handles.
#[derive(Debug)]
pub(crate) struct ServiceInstruments {
    /// By point (position in [`InterceptionPoint::ALL`]), then decision.
    answered: [[Counter; 3]; 8],
    /// By point, then [`FailureKind`].
    failed: [[Counter; 3]; 8],
    duration: [Histogram; 8],
    in_flight: Gauge,
}

/// Why the service answered a request with an error status.
#[derive(Clone, Copy)]
enum FailureKind {
    InvalidContext,
    HookError,
    Panic,
}

impl FailureKind {
    const ALL: [Self; 3] = [Self::InvalidContext, Self::HookError, Self::Panic];

    const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidContext => "invalid_context",
            Self::HookError => "hook_error",
            Self::Panic => "panic",
        }
    }
}

type Label = (&'static str, Cow<'static, str>);

/// Served calls, in the shared request-latency buckets.
fn latency_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

impl ServerMetrics {
    /// Registers the `hookwire_interceptor_*` families in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let f = ServerFamilies {
            requests: Family::default(),
            failures: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
        };
        registry.register(
            "hookwire_interceptor_requests",
            "Requests answered with a verdict, by service, interception point and decision",
            f.requests.clone(),
        );
        registry.register(
            "hookwire_interceptor_request_failures",
            "Requests answered with an error status, by service, point and kind (invalid_context, hook_error, panic)",
            f.failures.clone(),
        );
        registry.register(
            "hookwire_interceptor_request_duration_seconds",
            "Time from received request to encoded answer, by service and point",
            f.duration.clone(),
        );
        registry.register(
            "hookwire_interceptor_requests_in_flight",
            "Requests being answered, by service",
            f.in_flight.clone(),
        );
        Self {
            families: Arc::new(f),
        }
    }

    /// The handles of the service named `service`, resolved once.
    pub(crate) fn service(&self, service: &str) -> ServiceInstruments {
        let f = &self.families;
        let name = || ("service", Cow::Owned(service.to_owned()));
        let at = |p: InterceptionPoint| ("point", Cow::Borrowed(p.as_str()));
        let answered = InterceptionPoint::ALL.map(|p| {
            [Decision::Allow, Decision::Deny, Decision::Transform].map(|d| {
                f.requests
                    .get_or_create(&[name(), at(p), ("decision", Cow::Borrowed(d.as_str()))])
                    .clone()
            })
        });
        let failed = InterceptionPoint::ALL.map(|p| {
            FailureKind::ALL.map(|k| {
                f.failures
                    .get_or_create(&[name(), at(p), ("kind", Cow::Borrowed(k.as_str()))])
                    .clone()
            })
        });
        let duration =
            InterceptionPoint::ALL.map(|p| f.duration.get_or_create(&[name(), at(p)]).clone());
        let in_flight = f.in_flight.get_or_create(&[name()]).clone();
        ServiceInstruments {
            answered,
            failed,
            duration,
            in_flight,
        }
    }
}

impl ServiceInstruments {
    /// Counts a request in flight until [`Answering::finished`].
    pub(crate) fn started(&self, point: InterceptionPoint) -> Answering<'_> {
        self.in_flight.inc();
        Answering {
            metrics: self,
            point: point_index(point),
            started: Instant::now(),
        }
    }
}

/// One request being answered; dropping it leaves the in-flight gauge.
pub(crate) struct Answering<'a> {
    metrics: &'a ServiceInstruments,
    point: usize,
    started: Instant,
}

impl Answering<'_> {
    /// Counts the answer: a verdict's decision, or the error it became.
    pub(crate) fn finished(self, answer: Result<Decision, &Error>) {
        let m = self.metrics;
        m.duration[self.point].observe(self.started.elapsed().as_secs_f64());
        let counter = match answer {
            Ok(Decision::Allow) => &m.answered[self.point][0],
            Ok(Decision::Deny) => &m.answered[self.point][1],
            Ok(Decision::Transform) => &m.answered[self.point][2],
            Err(Error::InvalidContext(_)) => &m.failed[self.point][0],
            Err(Error::Panicked) => &m.failed[self.point][2],
            Err(_) => &m.failed[self.point][1],
        };
        counter.inc();
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
    }
}

fn point_index(point: InterceptionPoint) -> usize {
    InterceptionPoint::ALL
        .iter()
        .position(|p| *p == point)
        .unwrap_or_default()
}

/// A registry shared between the code that registers in it and the
/// `/metrics` endpoint that reads it.
pub type SharedRegistry = Arc<Mutex<Registry>>;

/// The Prometheus text exposition (0.0.4) of `registry`.
pub fn render(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_text::encode(&mut text, registry);
    text
}

/// The media type of [`render`]'s text, for an endpoint of your own.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Serves `GET /metrics` for `registry` on `listener` until `signal`, then
/// lets the scrapes in progress finish.
///
/// A plain HTTP/1.1 server on hyper (already in tonic's dependency graph,
/// so the SDK needs no web framework for one route), accepting under the
/// same [`ServerLimits`] as the gRPC port: bounded connections, handshake
/// and idle timeouts, accept back-off. Any other path is `404`, any other
/// method `405`. To mount the route on a web server of your own, answer
/// with [`render`] and [`CONTENT_TYPE`].
pub async fn serve_metrics(
    listener: TcpListener,
    registry: SharedRegistry,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    serve_metrics_with(listener, registry, Vec::new(), signal).await
}

/// A JSON document served beside `/metrics` (e.g. a status document at
/// `/status`): its path and what renders its text on each `GET`.
pub type JsonRoute = (&'static str, Arc<dyn Fn() -> String + Send + Sync>);

/// A `/metrics` endpoint running beside a service, on a task of its own:
/// every product's `run` starts it once its listener is bound and stops it
/// once the service has stopped, so that the endpoint answers scrapes for
/// the service's whole life and is never left behind.
pub struct MetricsTask {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), Error>>,
}

impl MetricsTask {
    /// Serves `registry` (and `routes`, see [`serve_metrics_with`]) on
    /// `listener` until [`MetricsTask::stop`].
    pub fn spawn(listener: TcpListener, registry: SharedRegistry, routes: Vec<JsonRoute>) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve_metrics_with(listener, registry, routes, async move {
            let _ = stopped.await;
        }));
        Self { stop, task }
    }

    /// Stops the endpoint, letting the scrapes in progress finish; its
    /// error, if serving failed.
    pub async fn stop(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or(Ok(()))
    }
}

/// [`serve_metrics`], also answering `GET` on each of `routes` with its
/// JSON document.
pub async fn serve_metrics_with(
    listener: TcpListener,
    registry: SharedRegistry,
    routes: Vec<JsonRoute>,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let routes: Arc<[JsonRoute]> = routes.into();
    let addr: SocketAddr = listener.local_addr().map_err(Error::LocalAddr)?;
    tracing::info!(%addr, "metrics serving");
    let mut incoming = ServerLimits::default().incoming(listener);
    let connections = GracefulShutdown::new();
    let mut signal = pin!(signal);
    loop {
        let connection = tokio::select! {
            () = &mut signal => break,
            accepted = incoming.next() => match accepted {
                Some(Ok(connection)) => connection,
                // The accept loop retries its own errors and never ends.
                Some(Err(_)) | None => break,
            },
        };
        let registry = registry.clone();
        let routes = Arc::clone(&routes);
        let service = service_fn(move |request: Request<Incoming>| {
            let response = answer(&request, &registry, &routes);
            async move { Ok::<_, Infallible>(response) }
        });
        let serving = connections
            .watch(http1::Builder::new().serve_connection(TokioIo::new(connection), service));
        tokio::spawn(async move {
            if let Err(e) = serving.await {
                tracing::debug!(error = %e, "metrics connection ended");
            }
        });
    }
    connections.shutdown().await;
    Ok(())
}

/// The answer to one request of the `/metrics` endpoint.
fn answer(
    request: &Request<Incoming>,
    registry: &SharedRegistry,
    routes: &[JsonRoute],
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::default());
    let route = routes
        .iter()
        .find(|(path, _)| *path == request.uri().path());
    if let Some((_, render_json)) = route
        && (request.method() == Method::GET || request.method() == Method::HEAD)
    {
        *response.body_mut() = Full::new(Bytes::from(render_json()));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    } else if request.uri().path() != "/metrics" && route.is_none() {
        *response.status_mut() = StatusCode::NOT_FOUND;
    } else if request.method() != Method::GET && request.method() != Method::HEAD {
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    } else {
        let text = render(&registry.lock().unwrap_or_else(PoisonError::into_inner));
        *response.body_mut() = Full::new(Bytes::from(text));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    }
    response
}
