//! The crate's one error type: what stops the daemon or the hook command,
//! and what makes a hook call fail closed. No variant carries the bearer
//! token or a payload's content.

use std::net::SocketAddr;

/// Everything that can go wrong in the hooks host, daemon or command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The agent named on a route or the command line is not supported.
    #[error("unknown agent {0:?} (supported: claude-code, codex, gemini-cli, cursor, copilot)")]
    UnknownAgent(String),
    /// The hook payload is not one the agent's adapter can read.
    #[error("invalid {agent} hook payload: {reason}")]
    Payload {
        /// The agent whose payload it claimed to be.
        agent: &'static str,
        /// What is wrong with it (never its content).
        reason: String,
    },
    /// The payload is larger than the bound.
    #[error("hook payload exceeds {0} bytes")]
    PayloadTooLarge(usize),
    /// The session table is full: the event fails closed.
    #[error("{0} agent sessions are open: no room for another")]
    Overloaded(usize),
    /// The agent session is open for another principal: its events come
    /// from that principal's credential only.
    #[error("the agent session belongs to another principal")]
    NotOwner,
    /// The hookwire host refused an emission.
    #[error("the hookwire host failed closed: {0}")]
    Host(#[from] hookwire_client::Error),
    /// A configuration value is unusable (listen address, token).
    #[error("invalid hooks configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("{}", hookwire::listen::BindFailure::new(.addr, .source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The Unix socket path is refused or cannot be bound.
    #[error("cannot serve on the Unix socket {}: {reason}", path.display())]
    Socket {
        /// The socket path asked for.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The HTTP server stopped on an I/O error.
    #[error("serving failed: {0}")]
    Serve(std::io::Error),
    /// The metrics endpoint beside the routes could not be served.
    #[error(transparent)]
    Metrics(#[from] hookwire_server::Error),
    /// The daemon could not be asked or gave no usable answer.
    #[error("the hookwire hooks daemon at {endpoint}: {reason}")]
    Daemon {
        /// The daemon's base URL.
        endpoint: String,
        /// What went wrong (unreachable, timed out, status, garbage).
        reason: String,
    },
}

/// The shared session table's refusals, in the daemon's terms: a full
/// table fails the event closed, another owner's session is not touched.
impl From<hookwire_edge::Error> for Error {
    fn from(e: hookwire_edge::Error) -> Self {
        match e {
            hookwire_edge::Error::SessionNotOwned => Self::NotOwner,
            hookwire_edge::Error::SessionsFull(n) | hookwire_edge::Error::SessionQuota(n) => {
                Self::Overloaded(n)
            }
            other => Self::Config(other.to_string()),
        }
    }
}
