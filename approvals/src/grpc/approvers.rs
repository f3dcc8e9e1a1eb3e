//! The approvers' calls: `Watch`, the stream of the pending set and its
//! changes that also carries `Seen` notices and decisions, and `Decide`,
//! one decision without a stream.

use hookwire::approval::StreamResolution;
use hookwire::pb;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::edge::{Edge, EventStream, Presented, STREAM_BUFFER, closed, peer_addr, refuse};
use super::wire::{decision_status, event, pending_set, queue_event_to_pb};
use crate::auth::Denial;
use crate::decide::may_decide;
use crate::events::QueueEvent;

impl Edge {
    /// `Watch`: the pending set the approver may see, then every change;
    /// its `Seen` notices and decisions, each acknowledged.
    pub(super) async fn watch(
        &self,
        request: Request<Streaming<pb::ApproverMessage>>,
    ) -> Result<Response<EventStream<pb::WatchEvent>>, Status> {
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

    /// `Decide`: one decision without a stream.
    pub(super) async fn decide(
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
