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

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hookwire::approval::{ApprovalResolution, StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_server::{ApprovalService, ApprovalServiceServer};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::auth::{Access, ApproverAccess, Credentials, Denial, bearer};
use super::queue::{
    ApprovalQueue, ApproverIdentity, CloseReason, HostDelivery, PendingApproval, QueueEvent,
};
use crate::error::{Error, Refusal};
use hookwire_server::Peer;

/// Largest message an approval service accepts from a host or an approver
/// (the same bound as an interceptor's request).
pub const MAX_APPROVAL_MESSAGE_BYTES: usize = hookwire_server::DEFAULT_MAX_MESSAGE_BYTES;

/// Largest message it sends: a request it accepted plus what it adds (the
/// host's name, who has seen it). A `PendingSet` larger than this is sent
/// as several messages (one set, then `Added` events).
pub const MAX_APPROVAL_REPLY_BYTES: usize = MAX_APPROVAL_MESSAGE_BYTES + 64 * 1024;

/// Longest host-chosen request id the service keeps.
const MAX_REQUEST_ID_LEN: usize = 256;

/// Longest host name suffix (from its hello) the service keeps.
const MAX_HELLO_LEN: usize = 64;

/// How often each side of a stream sends a heartbeat by default.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);

/// Messages buffered per stream before the sender waits.
const STREAM_BUFFER: usize = 256;

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// `hookwire.v1.ApprovalService` over a shared [`ApprovalQueue`].
#[derive(Debug, Clone)]
pub struct ApprovalGrpc {
    queue: ApprovalQueue,
    access: Access,
    settings: Arc<Settings>,
    closing: watch::Receiver<bool>,
}

#[derive(Debug)]
struct Settings {
    name: String,
    heartbeat: Duration,
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
        Self {
            queue,
            access,
            settings: Arc::new(Settings {
                name: name.into(),
                heartbeat: heartbeat.clamp(Duration::from_millis(10), Duration::from_secs(3600)),
            }),
            closing,
        }
    }

    /// The tonic service to add to a router.
    pub fn into_server(self) -> ApprovalServiceServer<Self> {
        ApprovalServiceServer::new(self)
            .max_decoding_message_size(MAX_APPROVAL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_APPROVAL_REPLY_BYTES)
    }

    /// Who is calling: the bearer token and the verified client
    /// certificate of the request, checked against the access list.
    fn credentials<T>(request: &Request<T>) -> (Option<String>, Option<Peer>) {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .map(str::to_owned);
        let peer = request
            .peer_certs()
            .and_then(|certs| certs.first().and_then(|c| Peer::from_der(c)));
        (token, peer)
    }

    fn host<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let (token, peer) = Self::credentials(request);
        self.access
            .host(Credentials {
                token: token.as_deref(),
                peer: peer.as_ref(),
            })
            .map_err(|d| refuse(d, "Resolve", &peer_addr(request)))
    }

    fn approver<T>(
        &self,
        request: &Request<T>,
        call: &str,
    ) -> Result<(Arc<ApproverAccess>, ApproverIdentity), Status> {
        let (token, peer) = Self::credentials(request);
        let (access, proof) = self
            .access
            .approver(Credentials {
                token: token.as_deref(),
                peer: peer.as_ref(),
            })
            .map_err(|d| refuse(d, call, &peer_addr(request)))?;
        let identity = access.identity(proof.method());
        Ok((access, identity))
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

fn peer_addr<T>(request: &Request<T>) -> String {
    request
        .remote_addr()
        .map_or_else(|| "unknown".to_owned(), |a| a.to_string())
}

/// The credentials a stream opened with, kept (in memory only, never
/// logged: no `Debug`) to authenticate it again when the access list is
/// reloaded.
struct Presented {
    token: Option<String>,
    peer: Option<Peer>,
}

impl Presented {
    fn of<T>(request: &Request<T>) -> Self {
        let (token, peer) = ApprovalGrpc::credentials(request);
        Self { token, peer }
    }

    fn credentials(&self) -> Credentials<'_> {
        Credentials {
            token: self.token.as_deref(),
            peer: self.peer.as_ref(),
        }
    }
}

/// The status for a refused caller; logged by kind and peer, never with
/// the credential.
fn refuse(denial: Denial, call: &str, peer: &str) -> Status {
    tracing::warn!(target: "hookwire::approval::audit", %peer, call, denial = denial.as_str(), "approval call refused");
    if denial.is_unauthenticated() {
        Status::unauthenticated("approval service: authentication required")
    } else {
        Status::permission_denied(format!("approval service: {denial}"))
    }
}

/// Whether `approver` may make `resolution` on request `id`. An id that
/// is not pending passes (the queue refuses it by name). A refusal is
/// kept in the queue's audit log and logged; the queue does not change.
pub(crate) async fn may_decide(
    queue: &ApprovalQueue,
    approver: &ApproverAccess,
    identity: &ApproverIdentity,
    id: &str,
    resolution: &ApprovalResolution,
) -> Result<(), Denial> {
    let Some(pending) = queue.get(id) else {
        return Ok(());
    };
    let Err(rule) = approver.rules.check(&pending) else {
        return Ok(());
    };
    tracing::warn!(
        target: "hookwire::approval::audit",
        approver = %approver.name,
        request_id = id,
        rule,
        "decision refused: outside the approver's rules"
    );
    if let Err(e) = queue.audit_forbidden(id, identity, resolution).await {
        tracing::error!(request_id = id, error = %e, "could not audit a forbidden decision");
    }
    Err(Denial::OutsideRules)
}

/// Cuts `s` to at most `max` characters.
fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
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

/// The pending requests `approver` may see, as one `PendingSet` and, when
/// it would not fit in one message, `Added` events for the rest.
fn pending_set(pending: &[PendingApproval], approver: &ApproverAccess) -> Vec<pb::WatchEvent> {
    use prost::Message as _;
    let budget = MAX_APPROVAL_MESSAGE_BYTES / 2;
    let mut set = Vec::new();
    let mut size = 0;
    let mut rest = Vec::new();
    for p in pending.iter().filter(|p| approver.rules.permits(p)) {
        let wire = pending_to_pb(p);
        let len = wire.encoded_len();
        if rest.is_empty() && (set.is_empty() || size + len <= budget) {
            size += len;
            set.push(wire);
        } else {
            rest.push(event(pb::watch_event::Kind::Added(wire)));
        }
    }
    let mut events = vec![event(pb::watch_event::Kind::Pending(pb::PendingSet {
        requests: set,
    }))];
    events.extend(rest);
    events
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
pub(crate) fn decision_status(result: &Result<(), Error>) -> pb::DecisionStatus {
    match result {
        Ok(()) => pb::DecisionStatus::Accepted,
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
        let mut generation = self.access.generation();
        let host = self.host(&request)?;
        let presented = Presented::of(&request);
        let access = self.access.clone();
        let peer = peer_addr(&request);
        let mut inbound = request.into_inner();
        let (link, mut deliveries) = self.queue.connect_host(host.clone());
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let ready = down(pb::service_message::Kind::Ready(self.ready()));
        let _ = tx.send(Ok(ready)).await;
        let mut ticker = self.ticker();
        let silence = self.settings.heartbeat * 3;
        let mut closing = self.closing.clone();
        let detach_on_shutdown = self.queue.is_shared();
        tokio::spawn(async move {
            use pb::host_message::Kind;
            let mut heard = Instant::now();
            let mut shutting_down = false;
            tracing::info!(%peer, %host, "approval host connected");
            loop {
                // A reloaded access list applies to open streams too: the
                // host's credential must still name it (checked at least
                // every heartbeat), or the stream ends and its requests
                // are withdrawn.
                if access.generation() != generation {
                    generation = access.generation();
                    let still = access.host(presented.credentials());
                    if still.as_ref() != Ok(&host) {
                        let status = refuse(
                            still.err().unwrap_or(Denial::WrongPrincipal),
                            "Resolve",
                            &peer,
                        );
                        let _ = tx.send(Err(status)).await;
                        break;
                    }
                }
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
                            // The host's name is its credential's: a hello
                            // is logged, never shown as the name.
                            Some(Kind::Hello(h)) => {
                                let hello = bounded(h.name.trim(), MAX_HELLO_LEN);
                                tracing::debug!(%peer, %host, %hello, "approval host hello");
                            }
                            Some(Kind::Request(r)) if r.request_id.len() > MAX_REQUEST_ID_LEN => {
                                let failed = pb::RequestFailed {
                                    request_id: bounded(&r.request_id, MAX_REQUEST_ID_LEN),
                                    reason: "request id too long".into(),
                                };
                                let _ = tx.send(Ok(down(pb::service_message::Kind::Failed(failed)))).await;
                            }
                            Some(Kind::Request(r)) => {
                                let request_id = r.request_id.clone();
                                let span = crate::trace::approval_span(&r.trace_context, &request_id, &peer);
                                // A request this host submitted on a stream that
                                // went away (with its instance) is taken back, with
                                // its queue id and original deadline; any other is
                                // queued.
                                let submitted = match StreamRequest::try_from(r).map_err(Error::from) {
                                    Err(e) => Err(e),
                                    Ok(r) => match link.reattach(&r.request_id, &r.request).await {
                                        Ok(back) => {
                                            tracing::info!(parent: &span, %peer, id = %back.id, "approval request re-attached");
                                            Ok(())
                                        }
                                        Err(_) => span.in_scope(|| {
                                            link.submit(r.request_id, r.request, r.deadline).map(|_| ())
                                        }),
                                    },
                                }
                                .inspect_err(|e| tracing::info!(%peer, error = %e, "refused an approval request"));
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
                    () = closed(&mut closing) => {
                        shutting_down = true;
                        break;
                    }
                }
            }
            if shutting_down && detach_on_shutdown {
                // This instance is going away, not the host: with a shared
                // queue another instance can serve it, so its requests stay
                // pending for it to re-attach there (within the grace).
                tracing::info!(%peer, "approval host detached: the service is shutting down");
                link.detach();
            } else {
                tracing::info!(%peer, "approval host disconnected");
                // Dropping the link withdraws what is still pending
                // (everywhere, when the queue is shared): the host went
                // away, or nobody else could serve it.
                drop(link);
            }
            // Dropping `tx` ends the response stream.
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn watch(
        &self,
        request: Request<Streaming<pb::ApproverMessage>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut generation = self.access.generation();
        let (mut approver, identity) = self.approver(&request, "Watch")?;
        let presented = Presented::of(&request);
        let access = self.access.clone();
        let peer = peer_addr(&request);
        let mut inbound = request.into_inner();
        let queue = self.queue.clone();
        let mut sub = queue.subscribe();
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        for e in pending_set(&sub.pending, &approver) {
            let _ = tx.send(Ok(e)).await;
        }
        let _ = tx
            .send(Ok(event(pb::watch_event::Kind::Ready(self.ready()))))
            .await;
        let mut ticker = self.ticker();
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            use pb::approver_message::Kind;
            let mut inbound_open = true;
            loop {
                // A reloaded access list applies to open streams too: the
                // credential must still name this approver (checked at
                // least every heartbeat), whose rules may have changed.
                if access.generation() != generation {
                    generation = access.generation();
                    match access.approver(presented.credentials()) {
                        Ok((fresh, _)) if fresh.name == approver.name => approver = fresh,
                        still => {
                            let denial = still.err().unwrap_or(Denial::WrongPrincipal);
                            let _ = tx.send(Err(refuse(denial, "Watch", &peer))).await;
                            break;
                        }
                    }
                }
                tokio::select! {
                    message = inbound.message(), if inbound_open => {
                        let message = match message {
                            Ok(Some(m)) => m,
                            // A half-closed approver still watches.
                            Ok(None) => { inbound_open = false; continue; }
                            Err(_) => break,
                        };
                        match message.kind {
                            Some(Kind::Seen(s)) => {
                                if queue.get(&s.request_id).is_some_and(|p| approver.rules.permits(&p)) {
                                    let _ = queue.seen(&s.request_id, &identity).await;
                                }
                            }
                            Some(Kind::Decide(d)) => {
                                let decided = StreamResolution::from(d);
                                if let Err(denial) = may_decide(&queue, &approver, &identity, &decided.request_id, &decided.resolution).await {
                                    let _ = tx.send(Err(Status::permission_denied(format!("approval service: {denial}")))).await;
                                    break;
                                }
                                let result = queue.resolve(&decided.request_id, &identity, decided.resolution).await.map(|_| ());
                                let ack = pb::DecisionAck {
                                    request_id: decided.request_id,
                                    status: decision_status(&result) as i32,
                                };
                                if tx.send(Ok(event(pb::watch_event::Kind::Ack(ack)))).await.is_err() {
                                    break;
                                }
                            }
                            // The approver's name is its credential's.
                            Some(Kind::Hello(_) | Kind::Heartbeat(_)) | None => {}
                        }
                    }
                    change = sub.events.recv() => {
                        let messages = match change {
                            Ok(QueueEvent::Added(p)) if !approver.rules.permits(&p) => continue,
                            Ok(e) => vec![queue_event_to_pb(e)],
                            Err(broadcast::error::RecvError::Lagged(_)) => pending_set(&queue.pending(), &approver),
                            Err(broadcast::error::RecvError::Closed) => break,
                        };
                        let mut sent = true;
                        for m in messages {
                            sent = sent && tx.send(Ok(m)).await.is_ok();
                        }
                        if !sent {
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
        let (approver, identity) = self.approver(&request, "Decide")?;
        let m = request.into_inner();
        let Some(resolution) = m.resolution else {
            return Err(Status::invalid_argument(
                "DecideRequest.resolution is missing",
            ));
        };
        // `m.approver` is ignored: the name is the credential's.
        let decided = StreamResolution::from(resolution);
        may_decide(
            &self.queue,
            &approver,
            &identity,
            &decided.request_id,
            &decided.resolution,
        )
        .await
        .map_err(|d| Status::permission_denied(format!("approval service: {d}")))?;
        let result = self
            .queue
            .resolve(&decided.request_id, &identity, decided.resolution)
            .await
            .map(|_| ());
        Ok(Response::new(pb::DecideResponse {
            status: decision_status(&result) as i32,
        }))
    }
}
