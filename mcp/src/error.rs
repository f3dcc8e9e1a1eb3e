//! The crate's one error type: what stops the proxy from starting or
//! serving, and what makes a session fail to open. No variant carries a
//! token or a payload.

use std::net::SocketAddr;

/// Everything that can go wrong in the proxy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The hookwire host refused something (a session, an emission).
    #[error("the hookwire host failed closed: {0}")]
    Host(#[from] hookwire_client::Error),
    /// The upstream could not be started or reached.
    #[error(transparent)]
    Upstream(crate::upstream::Failure),
    /// A configuration value is unusable (clients file, listen address).
    #[error("invalid mcp configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("{}", hookwire::listen::BindFailure::new(.addr, .source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Serving stopped on an I/O error.
    #[error("serving failed: {0}")]
    Serve(std::io::Error),
    /// The metrics endpoint beside the proxy could not be served.
    #[error(transparent)]
    Metrics(#[from] hookwire_server::Error),
}
