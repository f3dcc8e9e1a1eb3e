//! The `GET /metrics` endpoint a command runs beside its host or services
//! with `--metrics-addr`: bound here for every governed host (`gateway`,
//! `hooks serve`, `mcp`: `governed`, whose products serve it), and bound
//! and served here for `demo` and `serve-demo`. One registry holds every
//! series of the process (a host's and a service's together where both
//! run), bound before the services start, so that a busy port fails the
//! start, printed once bound, and stopped after the services. (`policy
//! serve` and `approvals serve` run their own, in their crates.)

use std::net::SocketAddr;

use hookwire_server::metrics::{SharedRegistry, serve_metrics};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::CliError;

/// Binds `addr` for a metrics endpoint, or does nothing without one.
pub(crate) async fn bind(addr: Option<SocketAddr>) -> Result<Option<TcpListener>, CliError> {
    match addr {
        Some(addr) => TcpListener::bind(addr)
            .await
            .map(Some)
            .map_err(|source| hookwire_server::Error::Bind { addr, source }.into()),
        None => Ok(None),
    }
}

/// The endpoint's task: what it ends with.
type Serving = JoinHandle<Result<(), hookwire_server::Error>>;

/// A running metrics endpoint (or none), stopped with [`MetricsEndpoint::stop`].
pub(crate) struct MetricsEndpoint {
    running: Option<(oneshot::Sender<()>, Serving)>,
}

impl MetricsEndpoint {
    /// Serves `registry` on `listener` (when bound), printing
    /// `{label}http://ADDR/metrics`.
    pub(crate) fn serve(
        listener: Option<TcpListener>,
        registry: SharedRegistry,
        label: &str,
    ) -> Result<Self, CliError> {
        let Some(listener) = listener else {
            return Ok(Self { running: None });
        };
        let bound = listener
            .local_addr()
            .map_err(hookwire_server::Error::LocalAddr)?;
        outln!("{label}http://{bound}/metrics");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_metrics(listener, registry, async move {
            let _ = stopped.await;
        }));
        Ok(Self {
            running: Some((stop, task)),
        })
    }

    /// Whether an endpoint is running (`--metrics-addr` was given).
    pub(crate) fn is_serving(&self) -> bool {
        self.running.is_some()
    }

    /// Stops the endpoint and reports how it ended.
    pub(crate) async fn stop(self) -> Result<(), CliError> {
        if let Some((stop, task)) = self.running {
            let _ = stop.send(());
            if let Ok(result) = task.await {
                result?;
            }
        }
        Ok(())
    }
}
