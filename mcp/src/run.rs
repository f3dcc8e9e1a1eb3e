//! [`run`]: the MCP proxy run from [`Settings`] until a shutdown future
//! resolves (or, on stdio, until the client closes stdin): the metrics
//! endpoint, then the downstream — one session on stdio, or Streamable
//! HTTP bound and announced — and every session ended. Everything
//! `hookwire mcp` does once its host is built, so that the proxy can be
//! embedded and tested without the command; what it says goes to stderr
//! (stdout may be the MCP channel), in the command's words.

use std::future::Future;

use hookwire_server::announce;
use hookwire_server::metrics::MetricsTask;

use crate::error::Error;
use crate::http::{HttpProxy, serve_http};
use crate::settings::{Downstream, MetricsEndpoint, Settings};
use crate::stdio::serve_stdio;

/// Runs the proxy of `settings` until `shutdown` resolves (or stdin ends
/// on stdio); prints the metrics address and the HTTP address on stderr
/// once bound.
pub async fn run(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let Settings {
        host,
        upstream,
        config,
        downstream,
        metrics_endpoint,
    } = settings;
    let metrics = match metrics_endpoint {
        Some(MetricsEndpoint { listener, registry }) => {
            let bound = listener
                .local_addr()
                .map_err(hookwire_server::Error::LocalAddr)?;
            announce::err(format_args!("hookwire mcp metrics: http://{bound}/metrics"));
            Some(MetricsTask::spawn(listener, registry, Vec::new()))
        }
        None => None,
    };
    let served = match downstream {
        Downstream::Stdio => serve_stdio(host, upstream, config, shutdown).await,
        Downstream::Http { addr, clients } => {
            match tokio::net::TcpListener::bind(addr)
                .await
                .and_then(|l| l.local_addr().map(|bound| (l, bound)))
            {
                Ok((listener, bound)) => {
                    announce::err(format_args!(
                        "hookwire mcp: listening on http://{bound}/mcp"
                    ));
                    let proxy = HttpProxy::new(host, upstream, config, clients);
                    serve_http(proxy, listener, shutdown).await
                }
                Err(source) => Err(Error::Bind { addr, source }),
            }
        }
    };
    let stopped = match metrics {
        Some(m) => m.stop().await.map_err(Error::from),
        None => Ok(()),
    };
    served?;
    stopped
}
