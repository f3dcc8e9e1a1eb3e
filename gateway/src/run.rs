//! [`run`]: the gateway served from [`Settings`] until a shutdown future
//! resolves: bound, announced (its routes, pooled keys, hook routes), its
//! metrics endpoint beside it, then every open conversation ended.
//! Everything `hookwire gateway` does once its host is built, so that the
//! gateway can be embedded and tested without the command; what it says
//! goes to stderr (stdout may carry records), in the command's words.

use std::future::Future;

use hookwire_server::announce;
use hookwire_server::metrics::MetricsTask;

use crate::error::Error;
use crate::gateway::Gateway;
use crate::settings::{MetricsEndpoint, RawSettings, Settings};

/// Serves the gateway of `settings` until `shutdown` resolves, then ends
/// every open conversation; prints the address, the upstream, the pooled
/// keys' labels, the hook routes and the metrics address once bound.
pub async fn run(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let RawSettings {
        host,
        governed_by,
        listen,
        config,
        pool,
        allow_anonymous: _,
        metrics_endpoint,
    } = settings.raw;
    let upstream = config.upstream.clone();
    let hooks_served = config.hooks.is_some();
    let labels = pool.labels();
    let gateway = Gateway::new(host, config, pool)?;
    let bind_error = |source| Error::Bind {
        addr: listen,
        source,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    announce::err(format_args!(
        "hookwire gateway: http://{addr}/v1 -> {} ({} pooled key(s){}), governed by {governed_by}",
        upstream,
        labels.len(),
        if labels.is_empty() {
            String::new()
        } else {
            format!(": {}", labels.join(", "))
        },
    ));
    if hooks_served {
        announce::err(format_args!(
            "hookwire gateway: coding agents' hooks at http://{addr}/v1/hooks/{{agent}}"
        ));
    }
    let metrics = match metrics_endpoint {
        Some(MetricsEndpoint { listener, registry }) => {
            let bound = listener.local_addr().map_err(Error::Serve)?;
            announce::err(format_args!(
                "hookwire gateway metrics: http://{bound}/metrics"
            ));
            Some(MetricsTask::spawn(listener, registry, Vec::new()))
        }
        None => None,
    };
    let served = gateway.serve(listener, shutdown).await;
    let stopped = match metrics {
        Some(m) => m
            .stop()
            .await
            .map_err(|e| Error::Serve(std::io::Error::other(e))),
        None => Ok(()),
    };
    served?;
    stopped
}
