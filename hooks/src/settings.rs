//! What [`crate::run`] needs to serve the hooks daemon, validated before
//! anything listens: the host that governs every agent session (built by
//! the caller, e.g. from a declaration), the session bounds, where the
//! routes listen and who may call them (a bearer token; a Unix socket's
//! permissions), the daemon's metrics and the endpoint serving them.
//! [`Settings`] is made only from [`RawSettings`] (`TryFrom`), so that a
//! non-loopback address not allowed, or TCP without a token, is refused
//! with [`Error::Config`] before a port is bound; [`check_listen`] says the
//! same earlier, for a caller that has not built its host yet.

use std::net::SocketAddr;
use std::path::PathBuf;

use hookwire_client::Host;
use hookwire_server::metrics::SharedRegistry;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::host::HooksConfig;
use crate::metrics::HooksMetrics;

/// Where the routes listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address (port 0: any free port, announced); callers present
    /// the token.
    Tcp(SocketAddr),
    /// An owner-only Unix socket at this path; its permissions
    /// authenticate callers, and a token is required there too when given.
    Unix(PathBuf),
}

/// A metrics endpoint to serve beside the routes: its bound listener and
/// the registry holding the host's and the daemon's series.
pub struct MetricsEndpoint {
    /// The bound listener.
    pub listener: TcpListener,
    /// What it serves at `GET /metrics`.
    pub registry: SharedRegistry,
}

/// The settings as given (flags, a test), before validation.
pub struct RawSettings {
    /// The host governing every agent session.
    pub host: Host,
    /// What governs it, for the banner (e.g. the declaration's file).
    pub governed_by: String,
    /// Where the routes listen.
    pub listen: Listen,
    /// Listen on a non-loopback TCP address.
    pub allow_remote: bool,
    /// The bearer token callers present (required on TCP).
    pub token: Option<String>,
    /// Session bounds and what a liftable deny becomes.
    pub config: HooksConfig,
    /// The daemon's series, when metrics are served.
    pub metrics: Option<HooksMetrics>,
    /// The metrics endpoint, when asked for.
    pub metrics_endpoint: Option<MetricsEndpoint>,
}

/// Validated settings of the hooks daemon: what [`crate::run`] serves.
pub struct Settings {
    pub(crate) raw: RawSettings,
}

/// Refuses a listen address the daemon must not use: a non-loopback TCP
/// address unless `allow_remote`, or TCP without a token.
pub fn check_listen(listen: &Listen, allow_remote: bool, has_token: bool) -> Result<(), Error> {
    if let Listen::Tcp(addr) = listen
        && !allow_remote
        && !addr.ip().is_loopback()
    {
        return Err(Error::Config(format!(
            "{addr} is not a loopback address (pass --allow-remote to listen there)"
        )));
    }
    if !has_token && matches!(listen, Listen::Tcp(_)) {
        return Err(Error::Config(
            "a token (--token-file or --token-env) is required on TCP; \
             only a Unix socket (--listen unix:/path) can do without one"
                .into(),
        ));
    }
    Ok(())
}

impl TryFrom<RawSettings> for Settings {
    type Error = Error;

    fn try_from(raw: RawSettings) -> Result<Self, Error> {
        check_listen(&raw.listen, raw.allow_remote, raw.token.is_some())?;
        Ok(Self { raw })
    }
}
