//! Prometheus metrics of an interceptor service and an approval service,
//! and the `/metrics` endpoint that exposes a registry.
//!
//! Like the host's, every family registers in a
//! [`prometheus_client`] registry the caller owns
//! ([`Server::metrics`](crate::Server::metrics),
//! [`ApprovalServer::metrics`](crate::approval::ApprovalServer::metrics)),
//! and the hot path touches only handles resolved when the service is
//! built. Names: `hookwire_interceptor_*` for the service SDK,
//! `hookwire_approval_*` for the approval service (docs/operating.md).

use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hookwire::{Decision, InterceptionPoint};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::error::Error;

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

/// Latency buckets: 0.25 ms to ~16 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 17))
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

/// The approval service's counters: requests submitted and how each left
/// the queue. The gauges (pending, oldest age, hosts, approvers) are read
/// from the queue at scrape time.
#[derive(Clone, Debug)]
pub(crate) struct ApprovalCounters {
    pub(crate) submitted: Counter,
    decisions: Family<[(&'static str, Cow<'static, str>); 1], Counter>,
    pub(crate) wait: Histogram,
}

impl Default for ApprovalCounters {
    fn default() -> Self {
        let c = Self {
            submitted: Counter::default(),
            decisions: Family::default(),
            wait: Histogram::new(exponential_buckets(0.5, 3.0, 9)),
        };
        for outcome in APPROVAL_OUTCOMES {
            let _ = c
                .decisions
                .get_or_create(&[("outcome", Cow::Borrowed(outcome))]);
        }
        c
    }
}

impl ApprovalCounters {
    /// Registers these counters (shared, not copied) in `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        let c = self;
        registry.register(
            "hookwire_approval_requests",
            "Approval requests submitted by hosts",
            c.submitted.clone(),
        );
        registry.register(
            "hookwire_approval_decisions",
            "Requests that left the queue, by outcome (approved, rejected, unresolved, expired, cancelled, host_gone, failed)",
            c.decisions.clone(),
        );
        registry.register(
            "hookwire_approval_decision_wait_seconds",
            "Time a request spent in the queue before it left, whatever the outcome",
            c.wait.clone(),
        );
    }

    /// Counts a request that left the queue as `outcome`.
    pub(crate) fn left(&self, outcome: &'static str, waited: std::time::Duration) {
        self.decisions
            .get_or_create(&[("outcome", Cow::Borrowed(outcome))])
            .inc();
        self.wait.observe(waited.as_secs_f64());
    }
}

/// Every `outcome` label value of `hookwire_approval_decisions_total`.
const APPROVAL_OUTCOMES: [&str; 7] = [
    "approved",
    "rejected",
    "unresolved",
    "expired",
    "cancelled",
    "host_gone",
    "failed",
];

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

/// An axum router answering `GET /metrics` with `registry`'s exposition:
/// mount it on a web server of your own, or run it with [`serve_metrics`].
pub fn metrics_router(registry: SharedRegistry) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let registry = registry.clone();
            async move {
                let text = render(&registry.lock().unwrap_or_else(PoisonError::into_inner));
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        prometheus_text::CONTENT_TYPE,
                    )],
                    text,
                )
            }
        }),
    )
}

/// Serves `GET /metrics` for `registry` on `listener` until `signal`.
pub async fn serve_metrics(
    listener: TcpListener,
    registry: SharedRegistry,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let addr: SocketAddr = listener.local_addr().map_err(Error::LocalAddr)?;
    tracing::info!(%addr, "metrics serving");
    axum::serve(listener, metrics_router(registry))
        .with_graceful_shutdown(signal)
        .await
        .map_err(Error::Metrics)
}
