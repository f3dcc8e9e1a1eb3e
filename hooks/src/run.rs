//! [`run`]: the hooks daemon served from [`Settings`] until a shutdown
//! future resolves: the long-lived hooks host and its idle reaper, the
//! routes on TCP or a Unix socket, the metrics endpoint, then every open
//! agent session ended. Everything `hookwire hooks serve` does once its
//! host is built, so that the daemon can be embedded and tested without
//! the command; what it says goes to stderr (stdout may carry records),
//! in the command's words.

use std::future::Future;

use std::sync::Arc;

use hookwire_server::announce;
use hookwire_server::metrics::MetricsTask;

use crate::agents::Agent;
use crate::error::Error;
use crate::host::HooksHost;
use crate::serve::{Listener, router, serve, socket_router};
use crate::settings::{Listen, MetricsEndpoint, RawSettings, Settings};
use crate::socket::UnixSocket;

/// Serves the hook routes of `settings` until `shutdown` resolves, then
/// ends every open agent session; prints the routes' address and the
/// metrics address on stderr once bound.
pub async fn run(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let RawSettings {
        host,
        governed_by,
        listen,
        allow_remote: _,
        token,
        config,
        metrics,
        metrics_endpoint,
    } = settings.raw;
    let mut hooks = HooksHost::new(host, config);
    if let Some(m) = metrics {
        hooks = hooks.with_metrics(m);
    }
    let hooks = Arc::new(hooks);
    let reaper = hooks.spawn_reaper();
    let (listener, shown, routes) = match &listen {
        Listen::Tcp(want) => {
            let bind_error = |source| Error::Bind {
                addr: *want,
                source,
            };
            let listener = tokio::net::TcpListener::bind(want)
                .await
                .map_err(bind_error)?;
            let addr = listener.local_addr().map_err(bind_error)?;
            // `token` is Some here (the settings were checked).
            let routes = router(hooks.clone(), token.as_deref().unwrap_or(""))?;
            (Listener::from(listener), format!("http://{addr}"), routes)
        }
        Listen::Unix(path) => {
            let socket = UnixSocket::bind(path)?;
            let shown = format!("unix:{}", socket.path().display());
            let routes = socket_router(hooks.clone(), token.as_deref())?;
            (Listener::from(socket), shown, routes)
        }
    };
    let agents: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
    let access = match (&listen, token.is_some()) {
        (Listen::Unix(_), false) => "callers authenticated by the socket's permissions",
        _ => "callers present the bearer token",
    };
    announce::err(format_args!(
        "hookwire hooks: {shown} (routes /v1/hooks/{{{}}}; {access}), governed by {governed_by}",
        agents.join(",")
    ));
    let metrics = match metrics_endpoint {
        Some(MetricsEndpoint { listener, registry }) => {
            let bound = listener
                .local_addr()
                .map_err(hookwire_server::Error::LocalAddr)?;
            announce::err(format_args!(
                "hookwire hooks metrics: http://{bound}/metrics"
            ));
            Some(MetricsTask::spawn(listener, registry, Vec::new()))
        }
        None => None,
    };
    let served = serve(listener, routes, shutdown).await;
    reaper.abort();
    hooks.shutdown_all().await;
    let stopped = match metrics {
        Some(m) => m.stop().await.map_err(Error::from),
        None => Ok(()),
    };
    served?;
    stopped
}
