//! `grpc.health.v1` for an interceptor server.
//!
//! Every server answers health checks for `hookwire.v1.Interceptor` and
//! for the whole server (`""`). Both are `SERVING` once the listener is
//! bound and turn `NOT_SERVING` as soon as shutdown starts. Then the
//! statuses are cleared, which ends open `Watch` streams: a watcher must
//! not keep a draining server alive. For the same reason shutdown also
//! fires the drain signal that ends `Multiplex` streams once the emissions
//! in flight on them are answered.

use std::sync::Arc;

use hookwire::pb::interceptor_server::SERVICE_NAME;
use tokio::sync::watch;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

/// The health statuses of one interceptor server.
#[derive(Debug, Clone)]
pub(crate) struct ServerHealth {
    reporter: HealthReporter,
    /// `true` once shutdown started: `Multiplex` streams then end.
    drain: Arc<watch::Sender<bool>>,
}

/// The names reported: the interceptor service and the server as a whole.
const NAMES: [&str; 2] = [SERVICE_NAME, ""];

impl ServerHealth {
    /// A reporter and the health service it feeds.
    pub(crate) fn new() -> (Self, HealthServer<impl Health>) {
        let (reporter, service) = tonic_health::server::health_reporter();
        let drain = Arc::new(watch::Sender::new(false));
        (Self { reporter, drain }, service)
    }

    /// The signal shutdown fires, for the gRPC adapter's streams.
    pub(crate) fn drain(&self) -> Arc<watch::Sender<bool>> {
        self.drain.clone()
    }

    /// The reporter, for services that report their own health.
    pub(crate) fn reporter(&self) -> &HealthReporter {
        &self.reporter
    }

    /// Marks everything `SERVING`.
    pub(crate) async fn serving(&self) {
        for name in NAMES {
            self.reporter
                .set_service_status(name, ServingStatus::Serving)
                .await;
        }
    }

    /// Marks everything `NOT_SERVING`, then ends `Watch` streams and
    /// drains `Multiplex` streams.
    pub(crate) async fn shutting_down(&self) {
        self.drain.send_replace(true);
        for name in NAMES {
            self.reporter
                .set_service_status(name, ServingStatus::NotServing)
                .await;
        }
        let mut reporter = self.reporter.clone();
        for name in NAMES {
            reporter.clear_service_status(name).await;
        }
    }
}
