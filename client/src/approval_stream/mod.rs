//! An approval resolver (§9) reached over one long-lived gRPC stream: the
//! `Resolve` stream of a `hookwire.v1.ApprovalService`.
//!
//! [`StreamResolver`] keeps one bidirectional stream open to the service
//! and multiplexes every pending approval of every session over it: each
//! request gets an id, a oneshot waits for the resolution carrying that id,
//! and resolutions for ids it does not know (answered too late, or not its
//! own) are ignored. A background task owns the stream:
//!
//! - it connects when the resolver is built and reconnects with
//!   exponential backoff and full jitter whenever the stream ends, so a
//!   restarted service is picked up without rebuilding the host (and its
//!   hosts do not all come back at the same moment); given several instances of
//!   one service ([`StreamResolverBuilder::endpoints`]) it tries them in
//!   turn, moving to the next whenever a stream ends or an attempt fails;
//! - when the stream ends, breaks, or falls silent for three heartbeats,
//!   every request in flight fails **at once** (the seam denies it with
//!   `host_error:approval_resolver_failed`); none waits for its deadline —
//!   unless [`StreamResolverBuilder::reattach_grace`] is set: then they
//!   wait up to the grace for the next stream (to any instance) and are
//!   sent again on it, where a service sharing its queue re-attaches them
//!   by id with their original deadlines;
//! - a request made while no stream is up triggers a connection attempt
//!   and fails as soon as that attempt fails, or after
//!   [`StreamResolverBuilder::connect_wait`] without a stream.
//!
//! Each request is bounded by the resolver's own deadline
//! ([`StreamResolverBuilder::deadline`], [`DEFAULT_APPROVAL_DEADLINE`](crate::DEFAULT_APPROVAL_DEADLINE)
//! by default), which is also what the service is told to wait. Give the
//! host the same value with `HostBuilder::approval_deadline`: the seam
//! bounds the consultation too, and whichever ends first fails it. When a
//! request is given up (deadline, or the emission dropped) the service is
//! told to withdraw it.
//!
//! Resolutions are carried exactly as the service sent them: the seam
//! applies the §9 rules in their normative order, so a lying identity is
//! `host_error:approval_identity_mismatch` and an unspecified outcome
//! (`outcome: None`) `host_error:approval_resolver_failed`.
//!
//! The service also says when an approver is looking at a request; see
//! [`StreamResolver::subscribe_seen`].
//!
//! Two halves: `resolver` is what the host holds (the settings, the
//! resolver and its per-request bookkeeping); `link` is the background
//! task that owns the stream and the state both halves share.

mod link;
mod resolver;

pub use link::SeenEvent;
pub use resolver::{StreamResolver, StreamResolverBuilder};
