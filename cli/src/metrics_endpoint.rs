//! The `GET /metrics` endpoint a command runs beside its host or services
//! with `--metrics-addr` (`gateway`, `demo`, `policy serve`, `serve-demo`,
//! `approvals serve`): one registry holds every series of the process (a
//! host's and a service's together where both run), bound before the
//! services start, so that a busy port fails the start, printed once
//! bound, and stopped after the services.

use std::net::SocketAddr;

use hookwire_server::metrics::{JsonRoute, SharedRegistry, serve_metrics_with};
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
        Self::serve_announced(listener, registry, label, false)
    }

    /// [`MetricsEndpoint::serve`], printing the address on stderr when
    /// `on_stderr` (a command whose stdout is a protocol channel).
    pub(crate) fn serve_announced(
        listener: Option<TcpListener>,
        registry: SharedRegistry,
        label: &str,
        on_stderr: bool,
    ) -> Result<Self, CliError> {
        Self::serve_with(listener, registry, label, on_stderr, Vec::new())
    }

    /// [`MetricsEndpoint::serve_announced`], also serving each of `routes`
    /// (a JSON document, e.g. `policy serve`'s `/status`).
    pub(crate) fn serve_with(
        listener: Option<TcpListener>,
        registry: SharedRegistry,
        label: &str,
        on_stderr: bool,
        routes: Vec<JsonRoute>,
    ) -> Result<Self, CliError> {
        let Some(listener) = listener else {
            return Ok(Self { running: None });
        };
        let bound = listener
            .local_addr()
            .map_err(hookwire_server::Error::LocalAddr)?;
        if on_stderr {
            errln!("{label}http://{bound}/metrics");
        } else {
            outln!("{label}http://{bound}/metrics");
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_metrics_with(listener, registry, routes, async move {
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
