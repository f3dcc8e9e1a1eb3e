//! hookwire-server: serve AGENT-HOOKS-0.1 interceptors over gRPC.
//!
//! An interceptor (policy engine, PII redactor, egress filter, ...)
//! implements [`hookwire::Interceptor`], re-exported here as
//! [`Interceptor`]: one typed async hook per interception point, each
//! defaulting to `allow`. The same type binds in-process in a
//! `hookwire-client` host. [`Server`] puts it on the wire as the
//! `hookwire.v1.Interceptor` gRPC service, next to `grpc.health.v1`, with
//! graceful shutdown and optional tower layers.
//!
//! - `adapter`: the gRPC edge ([`GrpcAdapter`]): the unary RPCs, `Describe`,
//!   and the `Multiplex` stream handed to `multiplex`.
//! - `multiplex`: the `Multiplex` stream served ([`MultiplexStream`], at
//!   most [`MULTIPLEX_IN_FLIGHT`] emissions at once per stream).
//! - `dispatch`: one emission answered, for both: decoding, routing
//!   through the policy's object-safe form, panic isolation, encoding.
//! - `server`: [`Server`] (settings and layers), [`Router`] (serving)
//!   and [`spawn_local`]; `services`: [`Services`], the services a router
//!   mounts, routed by gRPC service name.
//! - `peer`: [`Peer`], the verified client certificate of a mutual-TLS
//!   caller, which a hook reads with [`Peer::current`].
//! - `limits`: [`ServerLimits`], the transport limits every server applies
//!   (connections, handshake and idle timeouts, keepalive, streams per
//!   connection, accept back-off) through [`ServerLimits::harden`].
//! - `running`: [`RunningServer`], the handle of a server spawned in the
//!   background for tests and examples.
//! - `error`: the crate's [`Error`] and its mapping to gRPC statuses.
//! - `trace`: the `hookwire.handle` span, parented on the W3C trace
//!   context the host sends, and [`join_trace`] for context carried in a
//!   message; [`reflection`]: the gRPC reflection services mounted next to
//!   every service.
//! - [`metrics`]: [`metrics::ServerMetrics`] and the `/metrics` endpoint
//!   over a registry of the caller's; [`announce`]: the lines a served
//!   service prints, safe on a closed stream.
//!
//! The approval service (§9) has its own crate, `hookwire-approvals`,
//! built on this one.
//!
//! ```no_run
//! use hookwire_server::prelude::*;
//!
//! struct AllowAll;
//!
//! #[async_trait]
//! impl Interceptor for AllowAll {
//!     type Response = Verdict;
//!     fn manifest(&self) -> Manifest {
//!         manifest("allow-all", env!("CARGO_PKG_VERSION"))
//!     }
//! }
//!
//! # async fn run() -> Result<(), hookwire_server::Error> {
//! let running = spawn_local(AllowAll).await?;
//! println!("connect to {}", running.endpoint());
//! running.shutdown().await
//! # }
//! ```

mod adapter;
pub mod announce;
mod dispatch;
mod error;
mod health;
mod limits;
pub mod metrics;
mod multiplex;
mod peer;
pub mod reflection;
mod running;
mod server;
mod services;
mod trace;

pub use adapter::{DEFAULT_MAX_MESSAGE_BYTES, GrpcAdapter};
pub use error::Error;
pub use limits::{HANDSHAKE_BYTES, LimitedConnection, LimitedIncoming, ServerLimits};
pub use multiplex::{MULTIPLEX_IN_FLIGHT, MultiplexStream};
pub use peer::Peer;

/// The Prometheus client the metrics register in, re-exported so that
/// callers build their registry with the same version.
pub use prometheus_client;
pub use running::RunningServer;
pub use server::{Router, Server, spawn_local};
pub use services::Services;
pub use trace::join_trace;

/// The policy trait and what writing one takes, from the root crate, so
/// that an interceptor author needs only this dependency.
pub use hookwire::{BoxError, HookResponse, Interceptor, async_trait, manifest};

/// What an interceptor author needs in scope: the trait, the attribute,
/// the domain types hooks take and return, and the serving entry points.
pub mod prelude {
    pub use crate::{Interceptor, RunningServer, Server, async_trait, manifest, spawn_local};
    pub use hookwire::{
        AgentContext, BoxError, InterceptionPoint, InterceptorResponse, Manifest, Verdict,
    };
}
