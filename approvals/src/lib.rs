//! hookwire-approvals: the approval service, where a liftable deny (§5.1,
//! §9) waits for a human or an external system to lift it or let it stand.
//!
//! A host registers a stream resolver (`hookwire_client::StreamResolver`)
//! that sends every approval request over one `Resolve` stream of
//! `hookwire.v1.ApprovalService` (see `proto/hookwire/v1/approval.proto`).
//! This crate is the other end; its gRPC port is served the way the
//! interceptor SDK (`hookwire-server`) serves interceptors (transport
//! limits, reflection, mutual-TLS peers, trace context):
//!
//! - `queue`: [`ApprovalQueue`], the pending requests of every host,
//!   seen by every approver; the first decision wins, late ones are
//!   refused, expired and orphaned requests are withdrawn. Its Rust API is
//!   what in-process approvers use.
//! - [`store`]: [`ApprovalStore`], where a queue keeps its state: in
//!   memory for an embedded queue (`store::memory::MemoryStore`), shared
//!   by several instances otherwise (PostgreSQL:
//!   `hookwire-approvals-postgres`).
//! - [`grpc`]: [`ApprovalGrpc`], the queue as the gRPC service (the
//!   hosts' `Resolve` stream, the approvers' `Watch` stream, `Decide`).
//! - [`web`]: the approval web page and its JSON/SSE API.
//! - [`serve`]: [`ApprovalServer`], which runs the gRPC service and the web
//!   page side by side over one queue.
//! - [`settings`]: [`Settings`], what the served service needs, validated
//!   from [`settings::RawSettings`]; `run`: [`run`], the service with its
//!   notifications and metrics served until shut down (what `hookwire
//!   approvals serve` runs), printing through `hookwire_server::announce`.
//! - [`auth`]: [`Access`], who may submit (hosts) and who may decide
//!   (approvers, within their rules), by token hash or client certificate;
//!   `decide`: the rules check and audit every decision passes, from
//!   either front end.
//! - `tls`: [`ServiceTls`], the certificate, key and optional client
//!   authority of both ports.
//! - `error`: the crate's [`Error`] and [`Refusal`], and their mapping to
//!   gRPC statuses.
//! - [`notify`]: [`Notifications`], webhooks (generic and signed, Slack,
//!   Microsoft Teams) on a new request, a decision and an expiry, routed
//!   by the approvers' rules.
//! - `metrics`: the `hookwire_approval_*` counters; `trace`: the
//!   `hookwire.approval.request` span.
//!
//! ```no_run
//! # async fn run() -> Result<(), hookwire_approvals::Error> {
//! use hookwire_approvals::{
//!     Access, AccessConfig, ApprovalServer, ApproverConfig, PrincipalConfig,
//! };
//!
//! let access = Access::new(
//!     &AccessConfig::default()
//!         .host(PrincipalConfig::token("billing-agent", "host-token"))
//!         .approver(ApproverConfig::token("ann", "ann-token")),
//! )?;
//! let running = ApprovalServer::new(access).spawn_local().await?;
//! println!("hosts connect to {}", running.endpoint());
//! println!("approvers open {:?}", running.web_url());
//! // In-process approvers share the same queue:
//! for pending in running.queue().pending() {
//!     println!("{} waits: {:?}", pending.id, pending.tool_name());
//! }
//! running.shutdown().await
//! # }
//! ```

pub mod auth;
mod decide;
mod error;
mod events;
mod grpc;
mod metrics;
pub mod notify;
mod queue;
mod run;
mod serve;
pub mod settings;
pub mod store;
mod tls;
mod trace;
pub mod web;

pub use auth::{Access, AccessConfig, ApproverConfig, ApproverRules, PrincipalConfig};
pub use error::{Error, Refusal};
pub use grpc::{
    ApprovalGrpc, DEFAULT_HEARTBEAT_INTERVAL, MAX_APPROVAL_MESSAGE_BYTES, MAX_APPROVAL_REPLY_BYTES,
};
pub use notify::{Notifications, NotifyConfig};
pub use queue::{
    Acceptance, ApprovalQueue, ApproverIdentity, AuthMethod, CloseReason, DEFAULT_INSTANCE,
    DecisionOutcome, DecisionRecord, DecisionSubject, HistoryQuery, HostDelivery, HostLink,
    MAX_APPROVER_NAME, MAX_DEADLINE, MAX_HISTORY, PendingApproval, QueueEvent, REATTACH_GRACE,
    Reattached, Subscription,
};
pub use run::run;
pub use serve::{ApprovalServer, RunningApprovalServer, SHUTDOWN_FLUSH_BOUND};
pub use settings::Settings;
pub use store::{ApprovalStore, ReattachFound, StoreChange, StoredRequest, StoredState};
pub use tls::ServiceTls;

/// The README's Rust snippets, compiled as doctests so that the front page
/// never shows an API that no longer exists (here, where every crate they
/// use is a dependency).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeSnippets;
