//! Approval services: where a liftable deny (§5.1, §9) waits for a human
//! or an external system to lift it or let it stand.
//!
//! A host registers a stream resolver (`hookwire_client::StreamResolver`)
//! that sends every approval request over one `Resolve` stream of
//! `hookwire.v1.ApprovalService` (see `proto/hookwire/v1/approval.proto`).
//! This module is the other end:
//!
//! - `queue`: [`ApprovalQueue`], the pending requests of every host,
//!   seen by every approver; the first decision wins, late ones are
//!   refused, expired and orphaned requests are withdrawn. Its Rust API is
//!   what in-process approvers use.
//! - [`store`]: [`ApprovalStore`], where a queue shared by several
//!   instances keeps its state (PostgreSQL: `hookwire-approvals-postgres`);
//!   an embedded queue needs none.
//! - [`grpc`]: [`ApprovalGrpc`], the queue as the gRPC service (the
//!   hosts' `Resolve` stream, the approvers' `Watch` stream, `Decide`).
//! - [`web`]: the approval web page and its JSON/SSE API.
//! - [`serve`]: [`ApprovalServer`], which runs the gRPC service and the web
//!   page side by side over one queue.
//! - [`auth`]: [`Access`], who may submit (hosts) and who may decide
//!   (approvers, within their rules), by token hash or client certificate.
//! - `tls`: [`ServiceTls`], the certificate, key and optional client
//!   authority of both ports.
//!
//! ```no_run
//! # async fn run() -> Result<(), hookwire_server::Error> {
//! use hookwire_server::approval::{
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
mod events;
mod grpc;
mod queue;
mod serve;
pub mod store;
mod tls;
pub mod web;

/// Why the queue refused a decision; defined with the crate's [`Error`](crate::Error).
pub use crate::error::Refusal;
pub use auth::{Access, AccessConfig, ApproverConfig, ApproverRules, PrincipalConfig};
pub use grpc::{
    ApprovalGrpc, DEFAULT_HEARTBEAT_INTERVAL, MAX_APPROVAL_MESSAGE_BYTES, MAX_APPROVAL_REPLY_BYTES,
};
pub use queue::{
    Acceptance, ApprovalQueue, ApproverIdentity, AuthMethod, CloseReason, DEFAULT_INSTANCE,
    DecisionOutcome, DecisionRecord, DecisionSubject, HistoryQuery, HostDelivery, HostLink,
    MAX_APPROVER_NAME, MAX_DEADLINE, MAX_HISTORY, PendingApproval, QueueEvent, REATTACH_GRACE,
    Reattached, Subscription,
};
pub use serve::{ApprovalServer, RunningApprovalServer, SHUTDOWN_FLUSH_BOUND};
pub use store::{ApprovalStore, ReattachFound, StoreChange, StoredRequest, StoredState};
pub use tls::ServiceTls;
