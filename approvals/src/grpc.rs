//! The gRPC edge of an approval service: `hookwire.v1.ApprovalService` over
//! an [`ApprovalQueue`].
//!
//! - `Resolve` attaches one host stream as a [`HostLink`](super::HostLink): requests go into
//!   the queue, the queue's deliveries come back down, heartbeats flow both
//!   ways, and the link is dropped (withdrawing the host's requests) when
//!   the stream ends, breaks, or falls silent for three heartbeats. When
//!   the server shuts down, a shared queue's links are
//!   [detached](super::HostLink::detach) instead: the requests stay pending
//!   for their hosts to re-attach on another instance (rolling restarts);
//!   an embedded queue's are dropped (nobody else could serve them).
//! - `Watch` gives an approver the pending set, then every change, and
//!   takes its `Seen` notices and decisions, acknowledging each decision.
//! - `Decide` is one decision without a stream.
//!
//! Every call is authenticated first ([`Access`]): `Resolve` takes a host
//! credential only, `Watch` and `Decide` an approver credential only. A
//! caller without one is `UNAUTHENTICATED`, the wrong principal
//! `PERMISSION_DENIED`, and the queue is not touched. The approver's name
//! comes from its credential (hellos and `DecideRequest.approver` are
//! ignored); it sees and decides only what its rules cover, and a
//! decision outside them is refused (`PERMISSION_DENIED`, which also ends
//! a `Watch` stream) and audited.
//!
//! Every message is bounded both ways ([`MAX_APPROVAL_MESSAGE_BYTES`] in,
//! [`MAX_APPROVAL_MESSAGE_BYTES`] plus a small envelope out), and so is
//! every free-text field the service keeps (names, request ids).
//!
//! Every stream ends when the server shuts down, so that graceful shutdown
//! never waits on a long-lived stream.
//!
//! `edge` holds what every call starts from (the caller's credentials,
//! heartbeats, refusals), `wire` the message bounds and conversions,
//! `hosts` the `Resolve` stream, `approvers` `Watch` and `Decide`.

mod approvers;
mod edge;
mod hosts;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use hookwire::pb;
use hookwire::pb::approval_service_server::{ApprovalService, ApprovalServiceServer};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::Access;
use crate::queue::ApprovalQueue;
pub use edge::DEFAULT_HEARTBEAT_INTERVAL;
use edge::{Edge, EventStream, Settings};
pub use wire::{MAX_APPROVAL_MESSAGE_BYTES, MAX_APPROVAL_REPLY_BYTES};

/// `hookwire.v1.ApprovalService` over a shared [`ApprovalQueue`].
#[derive(Debug, Clone)]
pub struct ApprovalGrpc {
    edge: Edge,
}

impl ApprovalGrpc {
    /// Serves `queue` to the principals of `access`, announcing `name`
    /// and sending heartbeats every `heartbeat` (between 10 ms and one
    /// hour). Every stream ends once `closing` turns `true` (or its sender
    /// is dropped).
    pub fn new(
        queue: ApprovalQueue,
        access: Access,
        name: impl Into<String>,
        heartbeat: Duration,
        closing: watch::Receiver<bool>,
    ) -> Self {
        let settings = Settings {
            name: name.into(),
            heartbeat: heartbeat.clamp(Duration::from_millis(10), Duration::from_secs(3600)),
        };
        Self {
            edge: Edge {
                queue,
                access,
                settings: Arc::new(settings),
                closing,
            },
        }
    }

    /// The tonic service to add to a router.
    pub fn into_server(self) -> ApprovalServiceServer<Self> {
        ApprovalServiceServer::new(self)
            .max_decoding_message_size(MAX_APPROVAL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_APPROVAL_REPLY_BYTES)
    }
}

#[tonic::async_trait]
impl ApprovalService for ApprovalGrpc {
    type ResolveStream = EventStream<pb::ServiceMessage>;
    type WatchStream = EventStream<pb::WatchEvent>;

    async fn resolve(
        &self,
        request: Request<Streaming<pb::HostMessage>>,
    ) -> Result<Response<Self::ResolveStream>, Status> {
        self.edge.resolve(request).await
    }

    async fn watch(
        &self,
        request: Request<Streaming<pb::ApproverMessage>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        self.edge.watch(request).await
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        self.edge.decide(request).await
    }
}
