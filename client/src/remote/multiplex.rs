//! The multiplexed transport to one endpoint: the emissions of every
//! session over one long-lived `Multiplex` stream (a hookwire extension),
//! used when the service's manifest declares it and the unary RPCs
//! otherwise.
//!
//! - **Choice.** Before its first call the endpoint asks `Describe` once
//!   (bounded by the call's timeout and [`PROBE_TIMEOUT`]); a manifest
//!   whose `hookwire` extension declares the stream switches the endpoint
//!   to it. An unanswered probe leaves the call unary and is retried after
//!   [`PROBE_RETRY`]; a service without the stream is asked again after
//!   [`PROBE_REFRESH`], so an upgraded service is picked up; a stream
//!   refused as `UNIMPLEMENTED` (the service was replaced by one without
//!   it) sends the next emission back to the probe.
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
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookwire::InterceptorResponse;
use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::pb::multiplex_response::Outcome;
use hookwire::wire::multiplex::MAX_IN_FLIGHT;
use hookwire::wire::{PointRequest, declares_multiplex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use super::attempt::{AttemptFailure, Reach, decoded, reach_of, status_failure, within};
/// Requests waiting to be written to the stream.
pub(crate) const QUEUE: usize = 256;
/// Most streams one endpoint keeps open (one per core of the host below
/// that).
pub(crate) const MAX_LANES: usize = 4;
/// Longest the `Describe` probe may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// When an unanswered probe is tried again (calls are unary meanwhile).
pub(crate) const PROBE_RETRY: Duration = Duration::from_secs(1);
/// When a service that declared no stream is asked again.
pub(crate) const PROBE_REFRESH: Duration = Duration::from_secs(60);

/// A stream in use: its emissions in flight, and the queue to its writer.
type OpenStream = (Arc<Link>, mpsc::Sender<pb::MultiplexRequest>);

/// What the endpoint is known to serve.
const UNKNOWN: u8 = 0;
const STREAM: u8 = 1;
const UNARY: u8 = 2;

/// The multiplexed transport of one endpoint: the probe's result and the
/// current stream, shared by every call.
#[derive(Debug)]
pub(crate) struct Multiplexer {
    channel: Channel,
    metadata: Arc<MetadataMap>,
    /// [`UNKNOWN`], [`STREAM`] or [`UNARY`]; shared with the stream's
    /// reader, which forgets [`STREAM`] when a stream is refused as
    /// `UNIMPLEMENTED` (the service was replaced by one without it).
    mode: Arc<AtomicU8>,
    /// When the next probe is due (`None`: now); held while probing, so
    /// concurrent first calls wait for one probe.
    probe: tokio::sync::Mutex<Option<Instant>>,
    /// The streams in use, each replaced once it breaks; a session's
    /// emissions always take the same one.
    lanes: Box<[Mutex<Option<OpenStream>>]>,
}

impl Multiplexer {
    /// The transport over `channel`, opening streams with `metadata`:
    /// `streams` of them (`None`: one per core of the host, at most
    /// [`MAX_LANES`]).
    pub(crate) fn new(
        channel: Channel,
        metadata: Arc<MetadataMap>,
        streams: Option<usize>,
    ) -> Self {
        Self {
            channel,
            metadata,
            mode: Arc::new(AtomicU8::new(UNKNOWN)),
            probe: tokio::sync::Mutex::new(None),
            lanes: (0..streams.unwrap_or_else(default_lanes).max(1))
                .map(|_| Mutex::new(None))
                .collect(),
        }
    }

    /// Whether calls go over the stream: known, or found out now by a
    /// `Describe` probe bounded by `timeout` (and [`PROBE_TIMEOUT`]).
    pub(crate) async fn available(&self, timeout: Option<Duration>) -> bool {
        match self.mode.load(Ordering::Acquire) {
            STREAM => return true,
            _ if !self.probe_due() => return false,
            _ => {}
        }
        let mut due = self.probe.lock().await;
        if self.mode.load(Ordering::Acquire) == STREAM {
            return true;
        }
        if due.is_some_and(|at| Instant::now() < at) {
            return false;
        }
        let bound = timeout.map_or(PROBE_TIMEOUT, |t| t.min(PROBE_TIMEOUT));
        let (mode, next) = match self.describe(bound).await {
            Some(true) => (STREAM, None),
            Some(false) => (UNARY, Some(Instant::now() + PROBE_REFRESH)),
            None => (UNKNOWN, Some(Instant::now() + PROBE_RETRY)),
        };
        *due = next;
        self.mode.store(mode, Ordering::Release);
        mode == STREAM
    }

    /// Whether a probe is due, without waiting for one in progress.
    fn probe_due(&self) -> bool {
        match self.probe.try_lock() {
            Ok(due) => due.is_none_or(|at| Instant::now() >= at),
            // A probe is running: whoever waits for it decides then.
            Err(_) => true,
        }
    }

    /// Asks `Describe` whether the service declares the stream; `None`
    /// when it did not answer.
    async fn describe(&self, bound: Duration) -> Option<bool> {
        let mut client = InterceptorClient::new(self.channel.clone());
        let mut request = tonic::Request::new(pb::DescribeRequest {});
        *request.metadata_mut() = (*self.metadata).clone();
        request.set_timeout(bound);
        match tokio::time::timeout(bound, client.describe(request)).await {
            Ok(Ok(manifest)) => Some(declares_multiplex(manifest.get_ref())),
            // A service without `Describe` serves no stream either.
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => Some(false),
            _ => None,
        }
    }

    /// Sends one emission over the stream and waits for its answer, under
    /// `timeout` like a unary call.
    pub(crate) async fn call(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
    ) -> Result<InterceptorResponse, AttemptFailure> {
        let started = Instant::now();
        match within(timeout, self.exchange(request, timeout)).await? {
            Outcome::Response(response) => decoded(response),
            // As a unary status the service sent.
            Outcome::Error(e) => {
                let status = tonic::Status::new(tonic::Code::from_i32(e.code), e.message);
                Err(status_failure(&status, started.elapsed(), timeout))
            }
        }
    }

    /// The emission's round trip on the current stream (opened if need
    /// be), without the deadline.
    async fn exchange(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
    ) -> Result<Outcome, AttemptFailure> {
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
        link.register(id, answer, slot)
            .map_err(|broken| broken.attempt())?;
        let mut flight = InFlight {
            link: &link,
            queue: &queue,
            id,
            sent: false,
            answered: false,
        };
        let trace = crate::trace::context_map(&tracing::Span::current());
        let message = (*request).into_multiplex(id, timeout, trace);
        queue.send(message).await.map_err(|_| closed())?;
        flight.sent = true;
        let answer = answered.await;
        flight.answered = true;
        match answer {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(broken)) => Err(broken.attempt()),
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
        let link = Arc::new(Link {
            pending: Mutex::new(Pending {
                open: true,
                slots: HashMap::new(),
            }),
            next_id: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        });
        // Responses up to hookwire's wire bound (above the §12.3 context
        // bound), as on the unary path.
        let mut client = InterceptorClient::new(self.channel.clone())
            .max_decoding_message_size(hookwire::WIRE_RESPONSE_MAX_BYTES);
        let mut request = tonic::Request::new(ReceiverStream::new(requests));
        *request.metadata_mut() = (*self.metadata).clone();
        let driven = link.clone();
        let mode = self.mode.clone();
        tokio::spawn(async move {
            let opened = client.multiplex(request).await;
            let mut answers = match opened {
                Ok(answers) => answers.into_inner(),
                Err(status) => {
                    if status.code() == tonic::Code::Unimplemented {
                        // Ask `Describe` again before the next emission.
                        let _ = mode.compare_exchange(
                            STREAM,
                            UNKNOWN,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
                    }
                    return driven.fail(Broken {
                        kind: format!("stream refused: {:?}", status.code()),
                        reach: reach_of(&status),
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
}

#[derive(Debug)]
struct Pending {
    /// False once the stream broke: nothing more is registered.
    open: bool,
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
}

impl Broken {
    fn closed() -> Self {
        Self {
            kind: "stream closed".into(),
            reach: Reach::Transport,
        }
    }

    fn attempt(self) -> AttemptFailure {
        AttemptFailure::failed(self.kind, self.reach)
    }
}

impl Link {
    fn is_open(&self) -> bool {
        lock(&self.pending).open
    }

    /// Puts an emission in flight; refused once the stream broke.
    fn register(
        &self,
        id: u64,
        answer: oneshot::Sender<Result<Outcome, Broken>>,
        slot: OwnedSemaphorePermit,
    ) -> Result<(), Broken> {
        let mut pending = lock(&self.pending);
        if !pending.open {
            return Err(Broken::closed());
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
        pending.open = false;
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
        Link {
            pending: Mutex::new(Pending {
                open: true,
                slots: HashMap::new(),
            }),
            next_id: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(2)),
        }
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
        let m = Multiplexer::new(channel, Arc::new(MetadataMap::new()), Some(4));
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
