//! The proxy's settings, shared by every session.

use std::collections::BTreeSet;
use std::time::Duration;

use hookwire_edge::https::UpstreamTls;

use crate::mediation::Mediation;
use crate::metrics::McpMetrics;
use crate::origin::Origins;

/// The default bound on one JSON-RPC message, either direction.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 << 20;

/// The default of [`McpConfig::max_sessions_per_client`]: a quarter of
/// the default table.
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 64;

/// How the proxy runs.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// The longest one upstream request may take.
    pub call_timeout: Duration,
    /// An HTTP session with no request for this long is ended.
    pub idle_timeout: Duration,
    /// How long a stateless (2026-07-28) `tools/call` is held before it is
    /// answered `input_required` and parked for the client to collect.
    pub input_required_after: Duration,
    /// The most HTTP sessions open at once.
    pub max_sessions: usize,
    /// The most of them one client (one bearer token's name) may hold,
    /// so that one client's flood cannot lock the others out.
    pub max_sessions_per_client: usize,
    /// The most requests of the client in flight per session.
    pub max_in_flight: usize,
    /// The largest message accepted from either side, in bytes.
    pub max_message_bytes: usize,
    /// Tools removed from `tools/list` and denied when called anyway.
    pub hidden: BTreeSet<String>,
    /// The proxy's series, when metrics are served.
    pub metrics: Option<McpMetrics>,
    /// The mediation table with the operator's inert methods.
    pub mediation: Mediation,
    /// The browser origins the HTTP downstream accepts beyond loopback.
    pub origins: Origins,
    /// TLS toward an `https` Streamable HTTP upstream beyond the web PKI
    /// roots: an extra CA, a client certificate.
    pub upstream_tls: UpstreamTls,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(3600),
            input_required_after: Duration::from_secs(5),
            max_sessions: 256,
            max_sessions_per_client: DEFAULT_MAX_SESSIONS_PER_CLIENT,
            max_in_flight: 64,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            hidden: BTreeSet::new(),
            metrics: None,
            mediation: Mediation::default(),
            origins: Origins::default(),
            upstream_tls: UpstreamTls::default(),
        }
    }
}
