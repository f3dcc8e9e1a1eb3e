//! The multiplexed transport to one endpoint: the emissions of every
//! session over one long-lived `Multiplex` stream (a hookwire extension),
//! used when the service's manifest declares it and the unary RPCs
//! otherwise.
//!
//! - **Choice** (`choice`): the stream when the service's `Describe`
//!   manifest declares it, found out by a probe no emission waits long
//!   for. A stream the service refuses as `UNIMPLEMENTED` before carrying
//!   anything sends the endpoint back to unary calls for a while, and the
//!   emissions it refused are sent again as unary calls: nothing was
//!   decided on it. Until the stream is accepted, each emission sent on it
//!   keeps a copy of its request for that.
//! - **Per emission, as unary.** Each emission gets an id on the stream,
//!   carries its own timeout, and waits under the same local deadline as a
//!   unary call; a deadline that passes (or a caller that goes away)
//!   cancels it on the stream. Its answer is the unary RPC's response or
//!   error status, mapped to a failure by the same `attempt` rules, so
//!   every failure is that emission's `host_error:*` deny.
//! - **A broken stream** (transport error, the service going away, a
//!   stream the service ends) fails every emission in flight on it at
//!   once with `interceptor_failed`; the next emission opens a new stream.
//! - **A lying service** — an answer for an id not in flight (never sent,
//!   or already answered), an answer without an outcome, a message over
//!   the decoding limit — breaks the stream the same way: nothing it says
//!   afterwards is trusted.
//! - **Lanes.** The endpoint keeps one stream per core of the host (at
//!   most [`MAX_LANES`]) on its one connection, and a session's emissions
//!   always take the same one (by a hash of the session id), so the
//!   service still sees each session's emissions in order while the
//!   stream's work (the host's reader and writer, the service's stream
//!   task) is spread over the cores. One stream kept every emission of the
//!   host on one task of the service: under 64 sessions on two cores a
//!   quarter of the CPU stayed idle (BENCHMARKS.md).
//! - **Bounded.** At most [`MAX_IN_FLIGHT`] emissions (the bound the
//!   service holds too) are in flight per stream and at most [`QUEUE`] requests wait to be written; an emission
//!   beyond that waits for room inside its own deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookwire::InterceptorResponse;
use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::pb::multiplex_response::Outcome;
use hookwire::wire::PointRequest;
use hookwire::wire::multiplex::MAX_IN_FLIGHT;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use super::attempt::{AttemptFailure, Reach, decoded, reach_of, status_failure, within};
use super::choice::Choice;
/// Requests waiting to be written to the stream.
pub(crate) const QUEUE: usize = 256;
/// Most streams one endpoint keeps open (one per core of the host below
/// that).
pub(crate) const MAX_LANES: usize = 4;

/// A stream in use: its emissions in flight, and the queue to its writer.
type OpenStream = (Arc<Link>, mpsc::Sender<pb::MultiplexRequest>);

/// The multiplexed transport of one endpoint: the transport choice and
/// the current streams, shared by every call.
#[derive(Debug)]
pub(crate) struct Multiplexer {
    channel: Channel,
    metadata: Arc<MetadataMap>,
    /// Stream or unary; shared with the streams' readers, which fall back
    /// to unary when a stream is refused as `UNIMPLEMENTED`.
    choice: Choice,
    /// The streams in use, each replaced once it breaks; a session's
    /// emissions always take the same one.
    lanes: Box<[Mutex<Option<OpenStream>>]>,
}

/// What a call over the stream came to.
// The large variant is the answer of nearly every call, moved once;
// boxing it would allocate on every emission.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Called {
    /// The service's answer, or how the attempt failed.
    Done(Result<InterceptorResponse, AttemptFailure>),
    /// The service refused the stream (`UNIMPLEMENTED`) before it carried
    /// anything: the endpoint fell back to unary calls, and the request
    /// goes there.
    Refused(Box<PointRequest>),
}

/// How an emission's round trip on the stream ended.
// As for `Called`: the answer is the common case.
#[allow(clippy::large_enum_variant)]
enum Exchanged {
    Answered(Outcome),
    Refused(Box<PointRequest>),
}

impl Multiplexer {
    /// The transport over `channel` to `endpoint`, opening streams with
    /// `metadata`: `streams` of them (`None`: one per core of the host, at
    /// most [`MAX_LANES`]).
    pub(crate) fn new(
        channel: Channel,
        metadata: Arc<MetadataMap>,
        endpoint: &str,
        streams: Option<usize>,
    ) -> Self {
        Self {
            choice: Choice::new(channel.clone(), metadata.clone(), endpoint),
            channel,
            metadata,
            lanes: (0..streams.unwrap_or_else(default_lanes).max(1))
                .map(|_| Mutex::new(None))
                .collect(),
        }
    }

    /// Whether a call with `timeout` goes over the stream (`choice`).
    pub(crate) async fn available(&self, timeout: Option<Duration>) -> bool {
        self.choice.stream(timeout).await
    }

    /// Sends one emission over the stream and waits for its answer, under
    /// `timeout` like a unary call.
    pub(crate) async fn call(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
    ) -> Called {
        let started = Instant::now();
        let outcome = match within(timeout, self.exchange(request, timeout)).await {
            Ok(Exchanged::Answered(outcome)) => outcome,
            Ok(Exchanged::Refused(request)) => return Called::Refused(request),
            Err(failure) => return Called::Done(Err(failure)),
        };
        Called::Done(match outcome {
            Outcome::Response(response) => decoded(response),
            // As a unary status the service sent.
            Outcome::Error(e) => {
                let status = tonic::Status::new(tonic::Code::from_i32(e.code), e.message);
                Err(status_failure(&status, started.elapsed(), timeout))
            }
        })
    }

    /// The emission's round trip on the current stream (opened if need
    /// be), without the deadline. Handed back when the stream was refused
    /// before it carried anything.
    async fn exchange(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
    ) -> Result<Exchanged, AttemptFailure> {
        let (link, queue) = self.link(self.lane_of(&request));
        let closed = || AttemptFailure::failed("stream closed", Reach::Transport);
        let slot = link
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| closed())?;
        let id = link.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        if let Err(broken) = link.register(id, answer, slot) {
            return match broken.refused {
                true => Ok(Exchanged::Refused(request)),
                false => Err(broken.attempt()),
            };
        }
        let mut flight = InFlight {
            link: &link,
            queue: &queue,
            id,
            sent: false,
            answered: false,
        };
        // Until the service accepts the stream, a refusal may still send
        // this emission to the unary RPCs: keep a copy of the request.
        let spare = (!link.accepted.load(Ordering::Acquire)).then(|| request.clone());
        let trace = crate::trace::context_map(&tracing::Span::current());
        let message = (*request).into_multiplex(id, timeout, trace);
        flight.sent = queue.send(message).await.is_ok();
        if !flight.sent && spare.is_none() {
            return Err(closed());
        }
        // Sent, or refused by a stream never accepted, which its reader
        // is failing: the answer, or why the stream broke.
        let answer = answered.await;
        flight.answered = true;
        match answer {
            Ok(Ok(outcome)) => Ok(Exchanged::Answered(outcome)),
            Ok(Err(broken)) => match spare {
                Some(request) if broken.refused => Ok(Exchanged::Refused(request)),
                _ => Err(broken.attempt()),
            },
            Err(_) => Err(closed()),
        }
    }

    /// The lane of `request`'s session (the first for a request without
    /// one).
    fn lane_of(&self, request: &PointRequest) -> usize {
        if self.lanes.len() == 1 {
            return 0;
        }
        let Some(session) = request.session_id() else {
            return 0;
        };
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(session, &mut hasher);
        (std::hash::Hasher::finish(&hasher) % self.lanes.len() as u64) as usize
    }

    /// The open stream of `lane`, or a new one.
    fn link(&self, lane: usize) -> (Arc<Link>, mpsc::Sender<pb::MultiplexRequest>) {
        let mut current = lock(&self.lanes[lane]);
        if let Some((link, queue)) = current.as_ref()
            && link.is_open()
        {
            return (link.clone(), queue.clone());
        }
        let (queue, requests) = mpsc::channel(QUEUE);
        let link = Arc::new(Link::new(MAX_IN_FLIGHT));
        // Responses up to hookwire's wire bound (above the §12.3 context
        // bound), as on the unary path.
        let mut client = InterceptorClient::new(self.channel.clone())
            .max_decoding_message_size(hookwire::WIRE_RESPONSE_MAX_BYTES);
        let mut request = tonic::Request::new(ReceiverStream::new(requests));
        *request.metadata_mut() = (*self.metadata).clone();
        let driven = link.clone();
        let choice = self.choice.clone();
        tokio::spawn(async move {
            let opened = client.multiplex(request).await;
            let mut answers = match opened {
                Ok(answers) => {
                    driven.accepted.store(true, Ordering::Release);
                    answers.into_inner()
                }
                Err(status) => {
                    let refused = status.code() == tonic::Code::Unimplemented;
                    if refused {
                        choice.refused();
                    }
                    return driven.fail(Broken {
                        kind: format!("stream refused: {:?}", status.code()),
                        reach: reach_of(&status),
                        refused,
                    });
                }
            };
            loop {
                let broken = match answers.message().await {
                    Ok(Some(answer)) => match driven.deliver(answer) {
                        Ok(()) => continue,
                        Err(lie) => {
                            tracing::warn!(
                                problem = lie,
                                "interceptor service broke the stream protocol"
                            );
                            format!("stream protocol broken: {lie}")
                        }
                    },
                    Ok(None) => "stream ended".to_owned(),
                    Err(status) => format!("stream broken: {:?}", status.code()),
                };
                return driven.fail(Broken {
                    kind: broken,
                    reach: Reach::Transport,
                    refused: false,
                });
            }
        });
        *current = Some((link.clone(), queue.clone()));
        (link, queue)
    }
}

/// One stream: the emissions in flight on it and the bound on them.
#[derive(Debug)]
struct Link {
    pending: Mutex<Pending>,
    /// The next request id (ids start at 1 and are never reused).
    next_id: AtomicU64,
    /// One permit per emission in flight ([`MAX_IN_FLIGHT`]).
    slots: Arc<Semaphore>,
    /// Whether the service accepted the stream (its response headers
    /// came): from then on no refusal can send an emission to unary.
    accepted: AtomicBool,
}

#[derive(Debug)]
struct Pending {
    /// Why the stream broke, once it did: nothing more is registered.
    failed: Option<Broken>,
    slots: HashMap<u64, Slot>,
}

/// An emission in flight. Its permit is held until the service answers
/// (or the stream breaks), even when its caller gave up, so a service that
/// never answers cancelled emissions runs out of room, not the host.
#[derive(Debug)]
enum Slot {
    Waiting(
        oneshot::Sender<Result<Outcome, Broken>>,
        OwnedSemaphorePermit,
    ),
    Abandoned(OwnedSemaphorePermit),
}

/// Why a stream stopped carrying emissions, and how far the emissions in
/// flight on it got.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Broken {
    /// What the record says: `stream broken: Unavailable`, ...
    kind: String,
    /// [`Reach::NeverReached`] only when the stream was refused before
    /// any handler saw it.
    reach: Reach,
    /// The service refused the stream as `UNIMPLEMENTED` before it
    /// carried anything: its emissions may be sent as unary calls.
    refused: bool,
}

impl Broken {
    fn attempt(self) -> AttemptFailure {
        AttemptFailure::failed(self.kind, self.reach)
    }
}

impl Link {
    /// A stream not yet opened, taking at most `in_flight` emissions.
    fn new(in_flight: usize) -> Self {
        Self {
            pending: Mutex::new(Pending {
                failed: None,
                slots: HashMap::new(),
            }),
            next_id: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(in_flight)),
            accepted: AtomicBool::new(false),
        }
    }

    fn is_open(&self) -> bool {
        lock(&self.pending).failed.is_none()
    }

    /// Puts an emission in flight; refused once the stream broke, with
    /// why.
    fn register(
        &self,
        id: u64,
        answer: oneshot::Sender<Result<Outcome, Broken>>,
        slot: OwnedSemaphorePermit,
    ) -> Result<(), Broken> {
        let mut pending = lock(&self.pending);
        if let Some(broken) = &pending.failed {
            return Err(broken.clone());
        }
        pending.slots.insert(id, Slot::Waiting(answer, slot));
        Ok(())
    }

    /// Hands an answer to its emission. An answer the protocol does not
    /// allow is an error: the stream is then broken.
    fn deliver(&self, answer: pb::MultiplexResponse) -> Result<(), &'static str> {
        let mut pending = lock(&self.pending);
        let slot = pending.slots.remove(&answer.id);
        let Some(outcome) = answer.outcome else {
            return Err("an answer without an outcome");
        };
        match slot {
            Some(Slot::Waiting(waiting, _slot)) => {
                let _ = waiting.send(Ok(outcome));
                Ok(())
            }
            Some(Slot::Abandoned(_slot)) => Ok(()),
            None => Err("an answer for a request id not in flight"),
        }
    }

    /// Fails every emission in flight and closes the stream to new ones.
    fn fail(&self, broken: Broken) {
        let mut pending = lock(&self.pending);
        pending.failed = Some(broken.clone());
        for (_, slot) in pending.slots.drain() {
            if let Slot::Waiting(waiting, _) = slot {
                let _ = waiting.send(Err(broken.clone()));
            }
        }
    }

    /// The caller of `id` went away (deadline, cancellation): a sent
    /// emission waits for its answer abandoned; one never sent is dropped.
    fn abandon(&self, id: u64, sent: bool) {
        let mut pending = lock(&self.pending);
        if let Some(Slot::Waiting(_, slot)) = pending.slots.remove(&id)
            && sent
        {
            pending.slots.insert(id, Slot::Abandoned(slot));
        }
    }
}

/// An emission between registration and answer; dropped early (its
/// deadline passed or its caller went away), it cancels on the stream.
struct InFlight<'a> {
    link: &'a Link,
    queue: &'a mpsc::Sender<pb::MultiplexRequest>,
    id: u64,
    sent: bool,
    answered: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.link.abandon(self.id, self.sent);
        if self.sent {
            // Best effort: with the queue full the service still stops at
            // the emission's own timeout, and answers it then.
            let _ = self.queue.try_send(PointRequest::multiplex_cancel(self.id));
        }
    }
}

/// How many streams an endpoint keeps: the host's cores, at most
/// [`MAX_LANES`].
fn default_lanes() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_LANES)
}

/// A lock whose holders cannot panic half-way.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link::new(2)
    }

    fn answer(id: u64) -> pb::MultiplexResponse {
        pb::MultiplexResponse {
            id,
            outcome: Some(Outcome::Error(pb::MultiplexError {
                code: 13,
                message: String::new(),
            })),
        }
    }

    #[tokio::test]
    async fn each_id_is_answered_once_and_abandoned_ones_free_their_slot_on_answer() {
        let l = link();
        let (tx, rx) = oneshot::channel();
        l.register(1, tx, l.slots.clone().try_acquire_owned().unwrap())
            .unwrap();
        l.deliver(answer(1)).unwrap();
        assert!(matches!(rx.await, Ok(Ok(Outcome::Error(_)))));
        assert!(l.deliver(answer(1)).is_err(), "a duplicate answer");
        assert!(l.deliver(answer(9)).is_err(), "an id never sent");
        assert!(
            l.deliver(pb::MultiplexResponse {
                id: 1,
                outcome: None
            })
            .is_err()
        );

        let (tx, _rx) = oneshot::channel();
        l.register(2, tx, l.slots.clone().try_acquire_owned().unwrap())
            .unwrap();
        l.abandon(2, true);
        assert_eq!(l.slots.available_permits(), 1, "held until answered");
        l.deliver(answer(2)).unwrap();
        assert_eq!(l.slots.available_permits(), 2);

        let (tx, _rx) = oneshot::channel();
        l.register(3, tx, l.slots.clone().try_acquire_owned().unwrap())
            .unwrap();
        l.abandon(3, false);
        assert_eq!(l.slots.available_permits(), 2, "never sent: dropped");
    }

    fn request_of(session: &str) -> PointRequest {
        PointRequest::PreToolCall(pb::PreToolCallRequest {
            core: Some(pb::ContextCore {
                session: Some(pb::Session {
                    id: session.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn a_session_always_takes_the_same_stream_and_sessions_spread() {
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
        let m = Multiplexer::new(channel, Arc::new(MetadataMap::new()), "test", Some(4));
        let mut used = [0usize; 4];
        for i in 0..64 {
            let session = format!("s-{i}");
            let lane = m.lane_of(&request_of(&session));
            assert_eq!(lane, m.lane_of(&request_of(&session)), "stable");
            used[lane] += 1;
        }
        assert!(used.iter().all(|n| *n > 0), "every stream used: {used:?}");
        let without_session = PointRequest::PreToolCall(pb::PreToolCallRequest::default());
        assert_eq!(m.lane_of(&without_session), 0);
        let one = Multiplexer::new(
            tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy(),
            Arc::new(MetadataMap::new()),
            "test",
            Some(1),
        );
        assert_eq!(one.lane_of(&request_of("s-1")), 0);
    }

    #[tokio::test]
    async fn a_broken_stream_fails_everything_in_flight_and_takes_nothing_new() {
        let l = link();
        let (tx, rx) = oneshot::channel();
        l.register(1, tx, l.slots.clone().try_acquire_owned().unwrap())
            .unwrap();
        let broken = Broken {
            kind: "stream broken: Unavailable".into(),
            reach: Reach::Transport,
            refused: false,
        };
        l.fail(broken.clone());
        assert_eq!(rx.await.unwrap().unwrap_err(), broken);
        assert!(!l.is_open());
        let (tx, _rx) = oneshot::channel();
        assert!(
            l.register(2, tx, l.slots.clone().try_acquire_owned().unwrap())
                .is_err()
        );
    }
}
