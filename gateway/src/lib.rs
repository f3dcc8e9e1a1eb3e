//! hookwire-gateway: a model-API proxy that is a hookwire host.
//!
//! An agent in any language that talks to its model over a wire API the
//! gateway speaks (OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages; each API is one adapter in `api` over one provider-neutral
//! `core`) points its SDK's `base_url` at the gateway; the
//! gateway forwards to the real provider and governs the conversation
//! through a [`hookwire_client::Host`]: the same interceptor services,
//! declarations, approvals and records as a Rust agent embedding the
//! client. See `docs/gateway.md` for the mapping of the eight points, the
//! session header, the `hookwire` response extension and what the client
//! receives when something is denied.
//!
//! ```no_run
//! # async fn demo(host: hookwire_client::Host) -> Result<(), hookwire_gateway::Error> {
//! use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig};
//! let pool = CredentialPool::new().with_env("OPENAI_API_KEY")?;
//! let gateway = Gateway::new(host, GatewayConfig::new("https://api.openai.com/v1"), pool)?;
//! let running = gateway.spawn("127.0.0.1:8080".parse().unwrap()).await?;
//! println!("OPENAI_BASE_URL={}", running.base_url());
//! # Ok(()) }
//! ```
//!
//! | module | role |
//! | --- | --- |
//! | `gateway` | [`Gateway`]: routes, the fallback, serving, idle reaping, shutdown |
//! | `core` | one governed request of any API, end to end: conversations, replay, settling, streams |
//! | `api` | the adapters' contract and one adapter per wire API (`chat`) |
//! | `sse` | server-sent events split and written |
//! | `extension` | the `hookwire` response extension: overrides, upstream mutation |
//! | `credentials` | the pool of upstream keys |
//! | `principal` | who is asking: client tokens from a clients file, or the client's own credential; the owner of sessions and answers |
//! | `callback` | callback tokens: recursion protection |
//! | `upstream` | the HTTP client to the provider |
//! | `applied` | the gateway's own record of what it applied |
//! | `access` | the access layer: every request timed, counted, logged |
//! | `hooks` | [`SharedHooks`]: coding agents' hooks served beside the model routes, one session per agent session |
//! | `metrics` | [`GatewayMetrics`]: the `hookwire_gateway_*` series |
//! | `config`, `error` | configuration and the one error type |

mod access;
mod api;
mod applied;
mod bounds;
mod callback;
mod config;
mod core;
mod count_tokens;
mod credentials;
mod error;
mod extension;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod gateway;
mod headers;
mod hooks;
mod metrics;
mod principal;
mod run;
pub mod settings;
mod sse;
mod upstream;

pub use crate::core::{MAX_FLIGHTS, MAX_FLIGHTS_PER_CLIENT, MAX_RESPONSE_IDS};
pub use api::chat::{MAX_PARTS, MAX_TOOLS};
pub use api::mediation::{ApiTable, Class, Member, Table};
pub use api::mediation_table;
pub use applied::{Applied, AppliedLog};
pub use bounds::{MAX_MESSAGES, MAX_TOOL_CALLS};
pub use callback::MAX_TOKENS;
pub use config::{GatewayConfig, MAX_INERT_MEMBERS};
pub use credentials::{CredentialPool, MAX_CREDENTIALS, MAX_KEY_BYTES, Secret};
pub use error::Error;
pub use extension::{
    MAX_HEADER_VALUE, MAX_HEADERS, MAX_MODEL_NAME, ModelOverrides, NAMESPACE, SetBy,
    SystemPromptMode,
};
pub use gateway::{Gateway, RunningGateway};
pub use headers::{CALLBACK_HEADER, DEPTH_HEADER, MAX_SESSION_ID, SESSION_HEADER};
pub use hooks::SharedHooks;
/// TLS toward the upstream ([`GatewayConfig::upstream_tls`]): the edges'
/// shared client options.
pub use hookwire_edge::clients::{Clients, WatchedClients};
pub use hookwire_edge::https::UpstreamTls;
pub use metrics::GatewayMetrics;
pub use run::run;
pub use settings::Settings;
pub use sse::MAX_EVENT_BYTES;
