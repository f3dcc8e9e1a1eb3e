//! What [`crate::run`] needs to run the MCP proxy, validated before
//! anything listens: the host that governs every MCP session (built by
//! the caller, e.g. from a declaration with the hidden tools' binding),
//! the upstream, the proxy's bounds and mediation, the downstream (stdio,
//! or Streamable HTTP on an address with its clients), and the metrics
//! endpoint. [`Settings`] is made only from [`RawSettings`] (`TryFrom`),
//! so that a non-loopback address not allowed, or HTTP without a clients
//! list, is refused with [`Error::Config`] before a port is bound;
//! [`check_listen`] says the first earlier, for a caller that reads its
//! clients file afterwards.

use std::net::SocketAddr;
use std::sync::Arc;

use hookwire_client::Host;
use hookwire_edge::clients::WatchedClients;
use hookwire_server::metrics::SharedRegistry;
use tokio::net::TcpListener;

use crate::config::McpConfig;
use crate::error::Error;
use crate::upstream::UpstreamSpec;

/// A metrics endpoint to serve beside the proxy: its bound listener and
/// the registry holding the host's and the proxy's series.
pub struct MetricsEndpoint {
    /// The bound listener.
    pub listener: TcpListener,
    /// What it serves at `GET /metrics`.
    pub registry: SharedRegistry,
}

/// The settings as given (flags, a test), before validation.
pub struct RawSettings {
    /// The host governing every MCP session.
    pub host: Host,
    /// The real server.
    pub upstream: UpstreamSpec,
    /// Bounds, mediation, hidden tools, origins, upstream TLS, metrics.
    pub config: Arc<McpConfig>,
    /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio.
    pub listen: Option<SocketAddr>,
    /// Listen on a non-loopback address.
    pub allow_remote: bool,
    /// Who may use the HTTP downstream (required with `listen`).
    pub clients: Option<WatchedClients>,
    /// The metrics endpoint, when asked for.
    pub metrics_endpoint: Option<MetricsEndpoint>,
}

/// Where the proxy's MCP client reaches it, validated.
pub(crate) enum Downstream {
    /// One session on stdin/stdout.
    Stdio,
    /// Streamable HTTP on `addr`, open to `clients`.
    Http {
        addr: SocketAddr,
        clients: WatchedClients,
    },
}

/// Validated settings of the MCP proxy: what [`crate::run`] runs.
pub struct Settings {
    pub(crate) host: Host,
    pub(crate) upstream: UpstreamSpec,
    pub(crate) config: Arc<McpConfig>,
    pub(crate) downstream: Downstream,
    pub(crate) metrics_endpoint: Option<MetricsEndpoint>,
}

/// Refuses a non-loopback listen address unless `allow_remote`.
pub fn check_listen(addr: SocketAddr, allow_remote: bool) -> Result<(), Error> {
    if !allow_remote && !addr.ip().is_loopback() {
        return Err(Error::Config(format!(
            "{addr} is not a loopback address (pass --allow-remote to listen there)"
        )));
    }
    Ok(())
}

impl TryFrom<RawSettings> for Settings {
    type Error = Error;

    fn try_from(raw: RawSettings) -> Result<Self, Error> {
        let downstream = match raw.listen {
            None => Downstream::Stdio,
            Some(addr) => {
                check_listen(addr, raw.allow_remote)?;
                let Some(clients) = raw.clients else {
                    return Err(Error::Config("--listen needs --clients-file".into()));
                };
                Downstream::Http { addr, clients }
            }
        };
        Ok(Self {
            host: raw.host,
            upstream: raw.upstream,
            config: raw.config,
            downstream,
            metrics_endpoint: raw.metrics_endpoint,
        })
    }
}
