//! What [`crate::run`] needs to serve the gateway, validated before
//! anything listens: the host that governs every conversation (built by
//! the caller, e.g. from a declaration), the upstream configuration, the
//! key pool, the listen address, and the metrics endpoint. [`Settings`]
//! is made only from [`RawSettings`] (`TryFrom`), so that a key pool
//! every caller on a non-loopback address could spend is refused with
//! [`Error::Config`] before a port is bound; [`check_exposure`] says the
//! same earlier, for a caller that has not built its host yet.

use std::net::SocketAddr;

use hookwire_client::Host;
use hookwire_server::metrics::SharedRegistry;
use tokio::net::TcpListener;

use crate::config::GatewayConfig;
use crate::credentials::CredentialPool;
use crate::error::Error;

/// A metrics endpoint to serve beside the gateway: its bound listener and
/// the registry holding the host's and the gateway's series.
pub struct MetricsEndpoint {
    /// The bound listener.
    pub listener: TcpListener,
    /// What it serves at `GET /metrics`.
    pub registry: SharedRegistry,
}

/// The settings as given (flags, a test), before validation.
pub struct RawSettings {
    /// The host governing every conversation.
    pub host: Host,
    /// What governs it, for the banner (e.g. the declaration's file).
    pub governed_by: String,
    /// Where the gateway listens (port 0: any free port, announced).
    pub listen: SocketAddr,
    /// The upstream, bounds, clients, hooks and metrics of the gateway.
    pub config: GatewayConfig,
    /// The pooled upstream keys.
    pub pool: CredentialPool,
    /// Let every caller spend a pooled key on a non-loopback address
    /// without a clients file.
    pub allow_anonymous: bool,
    /// The metrics endpoint, when asked for.
    pub metrics_endpoint: Option<MetricsEndpoint>,
}

/// Validated settings of the gateway: what [`crate::run`] serves.
pub struct Settings {
    pub(crate) raw: RawSettings,
}

/// Refuses a key pool that every caller of a non-loopback `listen` could
/// spend: `pooled` keys, no clients list, not `allow_anonymous`.
pub fn check_exposure(
    listen: SocketAddr,
    pooled: bool,
    has_clients: bool,
    allow_anonymous: bool,
) -> Result<(), Error> {
    if pooled && !has_clients && !allow_anonymous && !listen.ip().is_loopback() {
        return Err(Error::Config(format!(
            "{listen} is not a loopback address and the gateway holds a key pool: give \
             --clients-file (made with `hookwire gateway token`) so that only listed clients \
             spend the keys, or --allow-anonymous to let every caller spend them"
        )));
    }
    Ok(())
}

impl TryFrom<RawSettings> for Settings {
    type Error = Error;

    fn try_from(raw: RawSettings) -> Result<Self, Error> {
        check_exposure(
            raw.listen,
            !raw.pool.labels().is_empty(),
            raw.config.clients.is_some(),
            raw.allow_anonymous,
        )?;
        Ok(Self { raw })
    }
}
