//! The gRPC edge of an approval service: `hookwire.v1.ApprovalService` over
//! an [`ApprovalQueue`].
//!
//! - `Resolve` attaches one host stream as a [`HostLink`](super::HostLink): requests go into
//!   the queue, the queue's deliveries come back down, heartbeats flow both
//!   ways, and the link is dropped (withdrawing the host's requests) when
//!   the stream ends, breaks, or falls silent for three heartbeats.
//! - `Watch` gives an approver the pending set, then every change, and
//!   takes its `Seen` notices and decisions, acknowledging each decision.
//! - `Decide` is one decision without a stream.
//!
//! Every stream ends when the server shuts down, so that graceful shutdown
//! never waits on a long-lived stream.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hookwire::approval::{StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_server::{ApprovalService, ApprovalServiceServer};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::queue::{
    ApprovalQueue, ApproverIdentity, CloseReason, HostDelivery, PendingApproval, QueueEvent,
};
use crate::adapter::DEFAULT_MAX_MESSAGE_BYTES;
use crate::error::{Error, Refusal};

/// How often each side of a stream sends a heartbeat by default.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);

/// Messages buffered per stream before the sender waits.
const STREAM_BUFFER: usize = 256;

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// `hookwire.v1.ApprovalService` over a shared [`ApprovalQueue`].
#[derive(Debug, Clone)]
pub struct ApprovalGrpc {
    queue: ApprovalQueue,
    settings: Arc<Settings>,
    closing: watch::Receiver<bool>,
}

#[derive(Debug)]
struct Settings {
    name: String,
    heartbeat: Duration,
}

impl ApprovalGrpc {
    /// Serves `queue`, announcing `name` and sending heartbeats every
    /// `heartbeat` (between 10 ms and one hour). Every stream ends once `closing` turns `true` (or its
    /// sender is dropped).
    pub fn new(
        queue: ApprovalQueue,
        name: impl Into<String>,
        heartbeat: Duration,
        closing: watch::Receiver<bool>,
    ) -> Self {
        Self {
            queue,
            settings: Arc::new(Settings {
                name: name.into(),
                heartbeat: heartbeat.clamp(Duration::from_millis(10), Duration::from_secs(3600)),
            }),
            closing,
        }
    }

    /// The tonic service to add to a router.
    pub fn into_server(self) -> ApprovalServiceServer<Self> {
        ApprovalServiceServer::new(self).max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
    }

    fn ready(&self) -> pb::ServiceReady {
        pb::ServiceReady {
            service: self.settings.name.clone(),
            heartbeat_interval_ms: millis(self.settings.heartbeat),
        }
    }

    fn ticker(&self) -> tokio::time::Interval {
        let period = self.settings.heartbeat;
        let mut t = tokio::time::interval_at(Instant::now() + period, period);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        t
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn peer<T>(request: &Request<T>) -> String {
    request
        .remote_addr()
        .map_or_else(|| "unknown".to_owned(), |a| a.to_string())
}

/// Resolves once `closing` is `true` or its sender is gone.
async fn closed(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}

/// The wire form of a pending request, with the time left now.
pub(crate) fn pending_to_pb(p: &PendingApproval) -> pb::PendingApproval {
    pb::PendingApproval {
        request: Some(pb::ApprovalRequest::from(&StreamRequest {
            request_id: p.id.clone(),
            request: p.request.clone(),
            deadline: p.remaining(),
        })),
        host: p.host.clone(),
        seen_by: p.seen_by.clone(),
    }
}

fn pending_set(pending: &[PendingApproval]) -> pb::WatchEvent {
    event(pb::watch_event::Kind::Pending(pb::PendingSet {
        requests: pending.iter().map(pending_to_pb).collect(),
    }))
}

fn event(kind: pb::watch_event::Kind) -> pb::WatchEvent {
    pb::WatchEvent { kind: Some(kind) }
}

fn down(kind: pb::service_message::Kind) -> pb::ServiceMessage {
    pb::ServiceMessage { kind: Some(kind) }
}

fn close_reason(r: CloseReason) -> pb::CloseReason {
    match r {
        CloseReason::Expired => pb::CloseReason::Expired,
        CloseReason::Cancelled => pb::CloseReason::Cancelled,
        CloseReason::HostGone => pb::CloseReason::HostGone,
        CloseReason::Failed => pb::CloseReason::Failed,
    }
}

/// The wire status of a decision's result.
pub(crate) fn decision_status<T>(result: &Result<T, Error>) -> pb::DecisionStatus {
    match result {
        Ok(_) => pb::DecisionStatus::Accepted,
        Err(Error::Refused { refusal, .. }) => match refusal {
            Refusal::UnknownRequest => pb::DecisionStatus::UnknownRequest,
            Refusal::AlreadyResolved => pb::DecisionStatus::AlreadyResolved,
            Refusal::Expired => pb::DecisionStatus::Expired,
            Refusal::Withdrawn => pb::DecisionStatus::Withdrawn,
        },
        Err(_) => pb::DecisionStatus::UnknownRequest,
    }
}

fn queue_event_to_pb(e: QueueEvent) -> pb::WatchEvent {
    use pb::watch_event::Kind;
    event(match e {
        QueueEvent::Added(p) => Kind::Added(pending_to_pb(&p)),
        QueueEvent::Seen { id, approver } => Kind::Seen(pb::Seen {
            request_id: id,
            approver: approver.name().to_owned(),
        }),
        QueueEvent::Resolved {
            id,
            approver,
            outcome,
        } => Kind::Resolved(pb::Resolved {
            request_id: id,
            approver: approver.name().to_owned(),
            outcome: pb::ApprovalOutcome::from(outcome) as i32,
        }),
        QueueEvent::Closed { id, reason } => Kind::Closed(pb::Closed {
            request_id: id,
            reason: close_reason(reason) as i32,
        }),
    })
}

fn delivery_to_pb(d: HostDelivery) -> pb::ServiceMessage {
    use pb::service_message::Kind;
    down(match d {
        HostDelivery::Resolution(r) => Kind::Resolution(pb::ApprovalResolution::from(&*r)),
        HostDelivery::Seen {
            request_id,
            approver,
        } => Kind::Seen(pb::Seen {
            request_id,
            approver,
        }),
        HostDelivery::Failed { request_id, reason } => {
            Kind::Failed(pb::RequestFailed { request_id, reason })
        }
    })
}

#[tonic::async_trait]
impl ApprovalService for ApprovalGrpc {
    type ResolveStream = EventStream<pb::ServiceMessage>;
    type WatchStream = EventStream<pb::WatchEvent>;

    async fn resolve(
        &self,
        request: Request<Streaming<pb::HostMessage>>,
    ) -> Result<Response<Self::ResolveStream>, Status> {
        let peer = peer(&request);
        let mut inbound = request.into_inner();
        let (link, mut deliveries) = self.queue.connect_host(peer.clone());
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let ready = down(pb::service_message::Kind::Ready(self.ready()));
        let _ = tx.send(Ok(ready)).await;
        let mut ticker = self.ticker();
        let silence = self.settings.heartbeat * 3;
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            use pb::host_message::Kind;
            let mut heard = Instant::now();
            tracing::info!(%peer, "approval host connected");
            loop {
                tokio::select! {
                    message = inbound.message() => {
                        let message = match message {
                            Ok(Some(m)) => m,
                            Ok(None) => break,
                            Err(status) => {
                                tracing::debug!(%peer, code = ?status.code(), "host stream broke");
                                break;
                            }
                        };
                        heard = Instant::now();
                        match message.kind {
                            Some(Kind::Hello(h)) => link.set_name(h.name),
                            Some(Kind::Request(r)) => {
                                let request_id = r.request_id.clone();
                                let span = crate::trace::approval_span(&r.trace_context, &request_id, &peer);
                                let submitted = span.in_scope(|| {
                                    StreamRequest::try_from(r)
                                        .map_err(Error::from)
                                        .and_then(|r| link.submit(r.request_id, r.request, r.deadline))
                                        .inspect_err(|e| tracing::info!(%peer, error = %e, "refused an approval request"))
                                });
                                if let Err(e) = submitted {
                                    let failed = pb::RequestFailed { request_id, reason: e.to_string() };
                                    let _ = tx.send(Ok(down(pb::service_message::Kind::Failed(failed)))).await;
                                }
                            }
                            Some(Kind::Cancel(c)) => link.cancel(&c.request_id),
                            Some(Kind::Heartbeat(_)) | None => {}
                        }
                    }
                    delivery = deliveries.recv() => {
                        let Some(d) = delivery else { break };
                        if tx.send(Ok(delivery_to_pb(d))).await.is_err() {
                            break;
                        }
                    }
                    _ = ticker.tick() => {
                        if heard.elapsed() > silence {
                            tracing::info!(%peer, "approval host silent; dropping its stream");
                            break;
                        }
                        let beat = down(pb::service_message::Kind::Heartbeat(pb::Heartbeat {}));
                        if tx.send(Ok(beat)).await.is_err() {
                            break;
                        }
                    }
                    () = closed(&mut closing) => break,
                }
            }
            tracing::info!(%peer, "approval host disconnected");
            // Dropping the link withdraws what is still pending; dropping
            // `tx` ends the response stream.
            drop(link);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn watch(
        &self,
        request: Request<Streaming<pb::ApproverMessage>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut approver = peer(&request);
        let mut inbound = request.into_inner();
        let queue = self.queue.clone();
        let mut sub = queue.subscribe();
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let _ = tx.send(Ok(pending_set(&sub.pending))).await;
        let _ = tx
            .send(Ok(event(pb::watch_event::Kind::Ready(self.ready()))))
            .await;
        let mut ticker = self.ticker();
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            use pb::approver_message::Kind;
            let mut inbound_open = true;
            loop {
                tokio::select! {
                    message = inbound.message(), if inbound_open => {
                        let message = match message {
                            Ok(Some(m)) => m,
                            // A half-closed approver still watches.
                            Ok(None) => { inbound_open = false; continue; }
                            Err(_) => break,
                        };
                        match message.kind {
                            Some(Kind::Hello(h)) if !h.name.is_empty() => approver = h.name,
                            Some(Kind::Seen(s)) => {
                                let _ = queue.seen(&s.request_id, &ApproverIdentity::unverified(approver.as_str())).await;
                            }
                            Some(Kind::Decide(d)) => {
                                let decided = StreamResolution::from(d);
                                let result = queue.resolve(&decided.request_id, &ApproverIdentity::unverified(approver.as_str()), decided.resolution).await;
                                let ack = pb::DecisionAck {
                                    request_id: decided.request_id,
                                    status: decision_status(&result) as i32,
                                };
                                if tx.send(Ok(event(pb::watch_event::Kind::Ack(ack)))).await.is_err() {
                                    break;
                                }
                            }
                            Some(Kind::Hello(_) | Kind::Heartbeat(_)) | None => {}
                        }
                    }
                    change = sub.events.recv() => {
                        let message = match change {
                            Ok(e) => queue_event_to_pb(e),
                            Err(broadcast::error::RecvError::Lagged(_)) => pending_set(&queue.pending()),
                            Err(broadcast::error::RecvError::Closed) => break,
                        };
                        if tx.send(Ok(message)).await.is_err() {
                            break;
                        }
                    }
                    _ = ticker.tick() => {
                        let beat = event(pb::watch_event::Kind::Heartbeat(pb::Heartbeat {}));
                        if tx.send(Ok(beat)).await.is_err() {
                            break;
                        }
                    }
                    () = closed(&mut closing) => break,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        let peer = peer(&request);
        let m = request.into_inner();
        let Some(resolution) = m.resolution else {
            return Err(Status::invalid_argument(
                "DecideRequest.resolution is missing",
            ));
        };
        let approver = ApproverIdentity::unverified(if m.approver.is_empty() {
            peer
        } else {
            m.approver
        });
        let decided = StreamResolution::from(resolution);
        let result = self
            .queue
            .resolve(&decided.request_id, &approver, decided.resolution)
            .await;
        Ok(Response::new(pb::DecideResponse {
            status: decision_status(&result) as i32,
        }))
    }
}
