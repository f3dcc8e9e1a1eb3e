//! The hosts' call: `Resolve`, one long-lived stream per host that
//! carries its approval requests up and the queue's deliveries down.

use hookwire::approval::StreamRequest;
use hookwire::pb;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::edge::{Edge, EventStream, Presented, STREAM_BUFFER, closed, peer_addr, refuse};
use super::wire::{delivery_to_pb, down};
use crate::auth::Denial;
use crate::error::Error;

/// Longest host-chosen request id the service keeps.
const MAX_REQUEST_ID_LEN: usize = 256;

/// Longest host name suffix (from its hello) the service keeps.
const MAX_HELLO_LEN: usize = 64;

/// Cuts `s` to at most `max` characters.
fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

impl Edge {
    /// `Resolve`: attaches the host's stream to the queue (see the
    /// module docs of `grpc`) until it ends, breaks, falls silent or the
    /// service shuts down.
    pub(super) async fn resolve(
        &self,
        request: Request<Streaming<pb::HostMessage>>,
    ) -> Result<Response<EventStream<pb::ServiceMessage>>, Status> {
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
}
