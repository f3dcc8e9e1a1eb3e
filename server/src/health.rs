//! `grpc.health.v1` for an interceptor server.
//!
//! Every server answers health checks for `hookwire.v1.Interceptor` and
//! for the whole server (`""`). Both are `SERVING` once the listener is
//! bound and turn `NOT_SERVING` as soon as shutdown starts. Then the
//! statuses are cleared, which ends open `Watch` streams: a watcher must
//! not keep a draining server alive.

use hookwire::pb::interceptor_server::SERVICE_NAME;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

/// The health statuses of one interceptor server.
#[derive(Debug, Clone)]
pub(crate) struct ServerHealth {
    reporter: HealthReporter,
}

/// The names reported: the interceptor service and the server as a whole.
const NAMES: [&str; 2] = [SERVICE_NAME, ""];

impl ServerHealth {
    /// A reporter and the health service it feeds.
    pub(crate) fn new() -> (Self, HealthServer<impl Health>) {
        let (reporter, service) = tonic_health::server::health_reporter();
        (Self { reporter }, service)
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

    /// Marks everything `NOT_SERVING`, then ends `Watch` streams.
    pub(crate) async fn shutting_down(&self) {
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
