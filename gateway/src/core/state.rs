//! The state every request shares: the host, the configuration, the
//! upstream and its keys, the conversations, the flights. The core's
//! modules all hold it; it is a leaf so that none imports it from its
//! parent.

use std::sync::atomic::AtomicU64;

use hookwire_client::Host;

use super::conversation::Sessions;
use super::flight::Flights;
use crate::applied::AppliedLog;
use crate::callback::CallbackTokens;
use crate::config::GatewayConfig;
use crate::credentials::CredentialPool;
use crate::upstream::Upstream;

/// The state every request shares.
pub(crate) struct Inner {
    /// The host every emission goes through.
    pub(crate) host: Host,
    /// The operator's configuration.
    pub(crate) config: GatewayConfig,
    /// The HTTP client to the provider.
    pub(crate) upstream: Upstream,
    /// The upstream keys.
    pub(crate) pool: CredentialPool,
    /// Callback tokens (recursion protection).
    pub(crate) tokens: CallbackTokens,
    /// The bindings granted a callback token, each minted its own
    /// (`Host::callback_bindings`, read once).
    pub(crate) callback_bindings: Vec<String>,
    /// The conversations.
    pub(crate) sessions: Sessions,
    /// What the gateway applied to recent requests.
    pub(crate) applied: AppliedLog,
    /// The URL interceptors call back on.
    pub(crate) callback_base: std::sync::OnceLock<String>,
    /// The running requests a retry joins (module `flight`).
    pub(crate) flights: Flights,
    /// The next `request_id`.
    pub(crate) next_request: AtomicU64,
}
