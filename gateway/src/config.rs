//! What an operator sets for a gateway: the upstream, the bounds on
//! bodies, time and sessions, and recursion protection. Every field has
//! a bounded default; metrics are opt-in.

use std::time::Duration;

use hookwire_edge::https::UpstreamTls;

use crate::error::Error;
use crate::hooks::SharedHooks;
use crate::metrics::GatewayMetrics;

/// The gateway's configuration; start from [`GatewayConfig::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// The upstream base URL, e.g. `https://api.openai.com/v1` or
    /// `https://api.anthropic.com/v1`; the gateway appends each API's path
    /// (`/chat/completions`, `/responses`, `/messages`) and `/models`.
    pub upstream: String,
    /// TLS toward an `https` upstream beyond the web PKI roots: an extra
    /// CA, a client certificate (default: the web PKI roots alone).
    pub upstream_tls: UpstreamTls,
    /// The largest request body accepted (default 4 MiB).
    pub max_body_bytes: usize,
    /// The largest upstream response read (default 16 MiB).
    pub max_upstream_bytes: usize,
    /// How long the upstream may take to answer, head and body each
    /// (default 300 s).
    pub upstream_timeout: Duration,
    /// A conversation idle this long is shut down (default 10 min).
    pub idle_timeout: Duration,
    /// How many conversations may be open at once (default 10 000).
    pub max_sessions: usize,
    /// How many of them one client credential may hold (default 1 000):
    /// one caller cannot lock the others out.
    pub max_sessions_per_credential: usize,
    /// How long a callback token lives at most (default 120 s).
    pub callback_ttl: Duration,
    /// How many nested requests one callback token allows (default 16).
    pub callback_max_uses: u32,
    /// The deepest nesting allowed: a client's request is depth 0, an
    /// interceptor's callback depth 1 (default 1: callbacks allowed, and
    /// a request arriving with a larger `x-hookwire-depth`, e.g. through a
    /// loop of gateways, refused).
    pub max_depth: u32,
    /// The URL interceptors call back on (default `http://LISTEN/v1`).
    pub callback_base_url: Option<String>,
    /// How many [`Applied`](crate::Applied) entries are kept (default 1024).
    pub applied_capacity: usize,
    /// Mediate streamed answers incrementally (§12.1's exception: each
    /// segment released once a verdict covering it permits) instead of
    /// buffering them whole (default false: buffered).
    pub incremental_output: bool,
    /// Where the gateway counts its requests and upstream answers
    /// (default none: the access log only). Register it in the host's
    /// registry to serve both from one `/metrics`.
    pub metrics: Option<GatewayMetrics>,
    /// Members the operator declares inert beyond the mediation table
    /// ([`mediation_table`](crate::mediation_table)), each `API SIDE PATH`
    /// as the table names it, e.g. `messages request context_management`
    /// or `chat_completions request messages[].content[type=file].text`
    /// (default none: a member the table does not know is refused in a
    /// request and removed from an answer). At most
    /// [`MAX_INERT_MEMBERS`].
    pub inert_members: Vec<String>,
    /// How long an answer no client was waiting for (the client timed
    /// out while the request was held, e.g. for an approval) is kept for
    /// the client's retry to collect (default 120 s). A retry arriving
    /// while the request still runs joins it; see docs/gateway.md,
    /// "Retries".
    pub retry_window: Duration,
    /// The clients that may use the gateway, each by its token (a clients
    /// file, `NAME SHA256-HEX` a line, read again when it changes).
    /// Default none: the client's own credential is its identity, which
    /// is what an upstream key pool can no longer tell apart, so a
    /// gateway with a pool on a shared network sets this. With it, every
    /// route but a callback asks for a token the file lists (as the API
    /// key the SDK sends: `Authorization: Bearer`, or `x-api-key` for
    /// Messages), each client owns its sessions and answers and has its
    /// own session quota, and a pool is required (the token is never
    /// forwarded).
    pub clients: Option<std::sync::Arc<hookwire_edge::clients::WatchedClients>>,
    /// The hooks of coding agents, served beside the model routes and
    /// sharing one hookwire session per agent session with them (default
    /// none; see `crate::hooks` and docs/hooks.md).
    pub hooks: Option<SharedHooks>,
}

/// How many members an operator may declare inert.
pub const MAX_INERT_MEMBERS: usize = 256;

impl GatewayConfig {
    /// The defaults, forwarding to `upstream`.
    pub fn new(upstream: impl Into<String>) -> Self {
        Self {
            upstream: upstream.into(),
            upstream_tls: UpstreamTls::default(),
            max_body_bytes: 4 << 20,
            max_upstream_bytes: 16 << 20,
            upstream_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(600),
            max_sessions: 10_000,
            max_sessions_per_credential: 1_000,
            callback_ttl: Duration::from_secs(120),
            callback_max_uses: 16,
            max_depth: 1,
            callback_base_url: None,
            applied_capacity: 1024,
            incremental_output: false,
            metrics: None,
            inert_members: Vec::new(),
            retry_window: Duration::from_secs(120),
            clients: None,
            hooks: None,
        }
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        let positive = [
            ("max_body_bytes", self.max_body_bytes),
            ("max_upstream_bytes", self.max_upstream_bytes),
            ("max_sessions", self.max_sessions),
            (
                "max_sessions_per_credential",
                self.max_sessions_per_credential,
            ),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(Error::Config(format!("{name} must be positive")));
        }
        if self.upstream_timeout.is_zero() || self.idle_timeout.is_zero() {
            return Err(Error::Config("timeouts must be positive".into()));
        }
        if self.inert_members.len() > MAX_INERT_MEMBERS {
            return Err(Error::Config(format!(
                "at most {MAX_INERT_MEMBERS} inert members"
            )));
        }
        if let Some(bad) = self
            .inert_members
            .iter()
            .find(|m| m.split_whitespace().count() != 3 || m.len() > 512)
        {
            return Err(Error::Config(format!(
                "inert member {bad:?} is not `API SIDE PATH`"
            )));
        }
        if self.max_depth > 8 {
            return Err(Error::Config("max_depth is at most 8".into()));
        }
        Ok(())
    }
}
