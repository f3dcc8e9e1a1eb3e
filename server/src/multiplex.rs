//! The `Multiplex` stream served (a hookwire extension): the answers of
//! one stream, as a [`Stream`] that reads the host's messages and runs
//! their emissions itself.
//!
//! The response stream is the only task: polling it reads requests (while
//! fewer than [`MULTIPLEX_IN_FLIGHT`] emissions run), drives every running
//! emission (a [`FuturesUnordered`]) and yields each answer as it is ready.
//! No task is spawned and no channel is crossed per emission, so an
//! emission costs one wake-up of this task on arrival and one on its
//! verdict. What each emission gets, as with a unary call:
//!
//! - **its deadline**, from receipt (`timeout_ms`), after which it answers
//!   `DEADLINE_EXCEEDED` and its hook is dropped;
//! - **cancellation**: the host's `cancel` drops its hook and answers
//!   `CANCELLED` at once; every id is answered exactly once;
//! - **no ordering between emissions**: each one's hook starts when its
//!   request is read, so a session's parallel tool calls are decided in
//!   parallel, as the unary RPCs would decide them;
//! - **bounded backpressure**: at most [`MULTIPLEX_IN_FLIGHT`] run at once;
//!   at the bound, cancellations are still read, but an emission read then
//!   waits for room and the stream is not read further until one ends, so
//!   HTTP/2 flow control holds back a host that sends faster than the
//!   policy decides; answers are produced only as fast as the connection
//!   takes them.
//!
//! The host closing its side (or breaking the stream) stops every emission
//! still running; a draining server stops reading and ends the stream once
//! the emissions in flight are answered. Hooks share this task: one that
//! blocks its thread holds up the stream's other emissions (as it would a
//! tokio worker in any case).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use hookwire::pb;
use hookwire::wire::{MultiplexBody, PointRequest};
use tokio::sync::watch;
use tonic::{Status, Streaming};
use tracing::Instrument;

use crate::dispatch::Dispatch;
use crate::peer::Peer;

/// Most emissions one `Multiplex` stream has in flight at once: the bound
/// on what a host can make a service hold for it on one stream, the same
/// number the host keeps to ([`hookwire::wire::multiplex::MAX_IN_FLIGHT`]).
pub const MULTIPLEX_IN_FLIGHT: usize = hookwire::wire::multiplex::MAX_IN_FLIGHT;

/// The outgoing half of a `Multiplex` stream, as tonic sends it.
pub type MultiplexStream =
    Pin<Box<dyn Stream<Item = Result<pb::MultiplexResponse, Status>> + Send + 'static>>;

/// The answers to the requests read from `incoming`, for one stream:
/// each emission answered by `dispatch`, until `drained` turns `true`.
pub(crate) fn answers(
    dispatch: Arc<Dispatch>,
    mut drained: watch::Receiver<bool>,
    peer: Option<Peer>,
    incoming: Streaming<pb::MultiplexRequest>,
) -> MultiplexStream {
    let drain = Box::pin(async move {
        // A dropped sender cannot drain any more: wait forever.
        if drained.wait_for(|d| *d).await.is_err() {
            std::future::pending::<()>().await;
        }
    });
    Box::pin(Answers {
        dispatch,
        peer,
        incoming: Some(incoming),
        drain,
        running: FuturesUnordered::new(),
        cancels: HashMap::new(),
        ready: VecDeque::new(),
        parked: None,
    })
}

/// An emission waiting for room: its id, request, deadline and trace
/// context.
struct Parked(
    u64,
    Box<PointRequest>,
    Option<tokio::time::Instant>,
    HashMap<String, String>,
);

/// One emission being decided: its id and its answer when done.
type Emission = Pin<Box<dyn Future<Output = (u64, pb::MultiplexResponse)> + Send>>;

/// One `Multiplex` stream being served.
struct Answers {
    dispatch: Arc<Dispatch>,
    peer: Option<Peer>,
    /// The host's requests; `None` once reading stopped (the server
    /// drains, or the host closed its side).
    incoming: Option<Streaming<pb::MultiplexRequest>>,
    /// Fires when the server starts draining.
    drain: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// The emissions running, each stoppable through its entry in
    /// `cancels`.
    running: FuturesUnordered<Abortable<Emission>>,
    /// The running emissions by id. An emission's answer is sent by
    /// whoever removes its entry (the emission when done, or its
    /// cancellation), so every id is answered exactly once.
    cancels: HashMap<u64, AbortHandle>,
    /// Answers not from an emission (cancellations, refusals), sent first.
    ready: VecDeque<pb::MultiplexResponse>,
    /// An emission read while [`MULTIPLEX_IN_FLIGHT`] ran, waiting for
    /// room; nothing more is read meanwhile. (Other messages are still
    /// read at the bound, so a host's cancellation frees room.)
    parked: Option<Parked>,
}

impl Stream for Answers {
    type Item = Result<pb::MultiplexResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(answer) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(answer)));
            }
            if let Poll::Ready(Some(done)) = this.running.poll_next_unpin(cx) {
                // An aborted emission was answered by its cancellation.
                if let Ok((id, answer)) = done
                    && this.cancels.remove(&id).is_some()
                {
                    return Poll::Ready(Some(Ok(answer)));
                }
                continue;
            }
            if this.running.len() < MULTIPLEX_IN_FLIGHT
                && let Some(Parked(id, request, deadline, trace)) = this.parked.take()
            {
                this.start(id, request, deadline, &trace);
                continue;
            }
            if this.poll_read(cx).is_ready() {
                continue;
            }
            if this.incoming.is_none() && this.running.is_empty() && this.parked.is_none() {
                return Poll::Ready(None);
            }
            return Poll::Pending;
        }
    }
}

impl Answers {
    /// Reads one request and acts on it, unless an emission waits for
    /// room; ready when something changed (a request was taken or reading
    /// stopped).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.parked.is_some() {
            // Not read further until it starts (woken when an emission
            // ends): HTTP/2 flow control holds the host back.
            return Poll::Pending;
        }
        let Some(incoming) = self.incoming.as_mut() else {
            return Poll::Pending;
        };
        if self.drain.as_mut().poll(cx).is_ready() {
            // Emissions in flight still answer; nothing new is taken.
            self.incoming = None;
            return Poll::Ready(());
        }
        match incoming.poll_next_unpin(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(message))) => {
                self.take(message);
                Poll::Ready(())
            }
            Poll::Ready(Some(Err(_)) | None) => {
                // The host closed its side or the stream broke: nobody
                // waits for the emissions still running.
                self.incoming = None;
                self.running.clear();
                self.cancels.clear();
                Poll::Ready(())
            }
        }
    }

    /// Acts on one message of the host.
    fn take(&mut self, message: pb::MultiplexRequest) {
        let id = message.id;
        match MultiplexBody::from(message.body) {
            MultiplexBody::Emission(request) => {
                if self.cancels.contains_key(&id) {
                    let status =
                        Status::already_exists("request id already in flight on this stream");
                    self.ready.push_back(error_answer(id, &status));
                    return;
                }
                // The deadline runs from receipt, waiting for room included.
                let deadline = (message.timeout_ms > 0).then(|| {
                    tokio::time::Instant::now() + Duration::from_millis(message.timeout_ms)
                });
                if self.running.len() >= MULTIPLEX_IN_FLIGHT {
                    let trace = message.trace_context;
                    self.parked = Some(Parked(id, Box::new(request), deadline, trace));
                    return;
                }
                self.start(id, Box::new(request), deadline, &message.trace_context);
            }
            MultiplexBody::Cancel => {
                if let Some(emission) = self.cancels.remove(&id) {
                    emission.abort();
                    let status = Status::cancelled("cancelled by the host");
                    self.ready.push_back(error_answer(id, &status));
                }
            }
            MultiplexBody::Empty => {
                let status = Status::invalid_argument("a stream message without a body");
                self.ready.push_back(error_answer(id, &status));
            }
        }
    }

    /// Starts one emission: its hook runs from now, beside the others.
    fn start(
        &mut self,
        id: u64,
        request: Box<PointRequest>,
        deadline: Option<tokio::time::Instant>,
        trace_context: &HashMap<String, String>,
    ) {
        let span = crate::trace::handler_span(trace_context, "Multiplex");
        span.record("hookwire.point", request.point().as_str());
        let (dispatch, peer) = (self.dispatch.clone(), self.peer.clone());
        let emission = async move {
            let decided = dispatch.answer(peer, request);
            let outcome = match deadline {
                Some(d) => tokio::time::timeout_at(d, decided)
                    .await
                    .unwrap_or_else(|_| Err(Status::deadline_exceeded("deadline exceeded"))),
                None => decided.await,
            };
            crate::trace::record_handled(&tracing::Span::current(), outcome.is_ok());
            let answer = match outcome {
                Ok(response) => pb::MultiplexResponse {
                    id,
                    outcome: Some(pb::multiplex_response::Outcome::Response(response)),
                },
                Err(status) => error_answer(id, &status),
            };
            (id, answer)
        }
        .instrument(span);
        let (handle, registration) = AbortHandle::new_pair();
        // Boxed: the set then holds a pointer, not the emission's state.
        let emission: Emission = Box::pin(emission);
        self.running.push(Abortable::new(emission, registration));
        self.cancels.insert(id, handle);
    }
}

/// The stream's answer for an emission that got no verdict.
fn error_answer(id: u64, status: &Status) -> pb::MultiplexResponse {
    pb::MultiplexResponse {
        id,
        outcome: Some(pb::multiplex_response::Outcome::Error(pb::MultiplexError {
            code: status.code() as i32,
            message: status.message().to_owned(),
        })),
    }
}
