//! hookwire-server: write AGENT-HOOKS-0.1 interceptors in Rust and serve
//! them over gRPC.
//!
//! An interceptor (policy engine, PII redactor, egress filter, ...)
//! implements [`InterceptorService`]: one typed async hook per interception
//! point, each defaulting to `allow`. [`Server`] puts it on the wire as the
//! `hookwire.v1.Interceptor` gRPC service, next to `grpc.health.v1`, with
//! graceful shutdown and optional tower layers.
//!
//! - [`service`]: the trait, [`dispatch`] and the [`manifest`] helper.
//! - [`adapter`]: the gRPC edge ([`GrpcAdapter`]): decoding, panic
//!   isolation, encoding.
//! - [`server`]: [`Server`] (settings and layers) and [`Router`] (serving).
//! - [`running`]: [`spawn_local`] and [`RunningServer`] for tests and
//!   examples.
//! - [`error`]: the crate's [`Error`] and its mapping to gRPC statuses.
//! - [`approval`]: approval services (§9): the queue of pending approvals,
//!   the `hookwire.v1.ApprovalService` streams, and the approval web page.
//!
//! ```no_run
//! use hookwire_server::prelude::*;
//!
//! struct AllowAll;
//!
//! #[async_trait]
//! impl InterceptorService for AllowAll {
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

pub mod adapter;
pub mod approval;
pub mod error;
mod health;
pub mod running;
pub mod server;
pub mod service;

pub use adapter::{DEFAULT_MAX_MESSAGE_BYTES, GrpcAdapter};
pub use error::Error;
pub use running::{RunningServer, spawn_local};
pub use server::{Router, Server};
pub use service::{InterceptorService, dispatch, manifest};

/// The `#[async_trait]` attribute implementations of
/// [`InterceptorService`] need, re-exported so authors need no extra
/// dependency.
pub use async_trait::async_trait;

/// What an interceptor author needs in scope: the trait, the attribute,
/// the domain types hooks take and return, and the serving entry points.
pub mod prelude {
    pub use crate::{
        InterceptorService, RunningServer, Server, async_trait, manifest, spawn_local,
    };
    pub use hookwire::wire::{InterceptorResponse, Manifest};
    pub use hookwire::{AgentContext, InterceptionPoint, Verdict};
}
