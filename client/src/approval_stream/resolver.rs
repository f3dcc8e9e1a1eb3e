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
//!   exponential backoff whenever the stream ends, so a restarted service
//!   is picked up without rebuilding the host;
//! - when the stream ends, breaks, or falls silent for three heartbeats,
//!   every request in flight fails **at once** (the seam denies it with
//!   `host_error:approval_resolver_failed`); none waits for its deadline;
//! - a request made while no stream is up triggers a connection attempt
//!   and fails as soon as that attempt fails, or after
//!   [`StreamResolverBuilder::connect_wait`] without a stream.
//!
//! Each request is bounded by the resolver's own deadline
//! ([`StreamResolverBuilder::deadline`], [`DEFAULT_APPROVAL_DEADLINE`]
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire::wire::approval::{request_to_pb, resolution_from_pb};
use tokio::sync::{Notify, broadcast, mpsc, oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::Endpoint;

use crate::approval::{ApprovalResolver, DEFAULT_APPROVAL_DEADLINE};
use crate::error::Error;
use crate::interceptor::{BoxError, BoxFuture};

/// The longest any duration setting may be (longer ones are cut to it):
/// 30 days, far beyond any human's answer and far from timer overflow.
pub const MAX_SETTING: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Why the stream could not carry a request. Each one is, to the seam, a
/// failed resolver: `host_error:approval_resolver_failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamFailure {
    /// No stream to the service came up in time.
    Unavailable,
    /// The stream ended or broke while the request was pending.
    Lost,
    /// No resolution arrived within the resolver's deadline.
    Deadline,
    /// The service refused or gave up on the request; the reason is the
    /// service's.
    Refused(String),
    /// The resolver was built outside a tokio runtime.
    NoRuntime,
}

impl std::fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable => f.write_str("no stream to the approval service"),
            Self::Lost => f.write_str("the approval stream dropped while the request was pending"),
            Self::Deadline => f.write_str("no resolution within the approval deadline"),
            Self::Refused(reason) => write!(f, "the approval service gave up: {reason}"),
            Self::NoRuntime => {
                f.write_str("a stream resolver must be built within a tokio runtime")
            }
        }
    }
}

/// An approver is looking at one of this host's pending requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenEvent {
    /// The resolver's id of the request.
    pub request_id: String,
    /// Who is looking, as the service names them.
    pub approver: String,
    /// The point of the emission waiting.
    pub interception_point: InterceptionPoint,
    /// The session waiting.
    pub session_id: String,
}

/// Settings of a [`StreamResolver`]; start from [`StreamResolver::builder`].
#[derive(Debug, Clone)]
pub struct StreamResolverBuilder {
    endpoint: String,
    deadline: Duration,
    host_name: String,
    connect_timeout: Duration,
    connect_wait: Duration,
    backoff_min: Duration,
    backoff_max: Duration,
    heartbeat: Duration,
}

impl StreamResolverBuilder {
    /// How long each request may wait for a resolution (and what the
    /// service is told). Default [`DEFAULT_APPROVAL_DEADLINE`]: humans
    /// take minutes. Unrelated to interceptor timeouts.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline.min(MAX_SETTING);
        self
    }

    /// The name approvers see for this host. Default `hookwire-host`.
    #[must_use]
    pub fn host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = name.into();
        self
    }

    /// Bound on one connection attempt. Default 5 s.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout.min(MAX_SETTING);
        self
    }

    /// How long a request made while no stream is up waits for one before
    /// failing (it fails sooner when the attempt it triggers fails).
    /// Default 5 s.
    #[must_use]
    pub fn connect_wait(mut self, wait: Duration) -> Self {
        self.connect_wait = wait.min(MAX_SETTING);
        self
    }

    /// The delay between reconnection attempts: `min` after a stream ends,
    /// doubling up to `max` while attempts fail. Default 100 ms to 5 s. A
    /// request made while disconnected triggers an attempt at once.
    #[must_use]
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min.clamp(Duration::from_millis(1), MAX_SETTING);
        self.backoff_max = max.clamp(self.backoff_min, MAX_SETTING);
        self
    }

    /// The heartbeat interval used until the service announces its own
    /// (it does so first thing on every stream). Default 5 s.
    #[must_use]
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat = interval.min(MAX_SETTING);
        self
    }

    /// Validates the endpoint and starts the background task that keeps
    /// the stream up. Must be called within a tokio runtime.
    pub fn build(self) -> Result<StreamResolver, Error> {
        let invalid = |reason: String| Error::InvalidEndpoint {
            name: "approval".into(),
            endpoint: self.endpoint.clone(),
            reason,
        };
        let keepalive = self.heartbeat.max(Duration::from_secs(1));
        let endpoint = Endpoint::from_shared(self.endpoint.clone())
            .map_err(|e| invalid(e.to_string()))?
            .tcp_nodelay(true)
            .connect_timeout(self.connect_timeout)
            .http2_keep_alive_interval(keepalive)
            .keep_alive_timeout(keepalive.saturating_mul(3))
            .keep_alive_while_idle(true);
        if endpoint.uri().scheme_str().is_none() || endpoint.uri().host().is_none() {
            return Err(invalid(
                "expected an absolute http:// or https:// URL".into(),
            ));
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::ApprovalStream(StreamFailure::NoRuntime))?;
        let (connected, _) = watch::channel(false);
        let (failures, _) = watch::channel(0);
        let (seen, _) = broadcast::channel(256);
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(LinkState::default()),
            connected,
            failures,
            wake: Notify::new(),
            seen,
            next_id: AtomicU64::new(1),
            settings: self,
        });
        runtime.spawn(drive(Arc::clone(&shared), endpoint, stopped));
        Ok(StreamResolver {
            shared,
            _stop: Arc::new(StopOnDrop(stop)),
        })
    }
}

/// An [`ApprovalResolver`] served by an approval service over one gRPC
/// stream (see the module docs). Cheap to clone; clones share the stream,
/// which closes when the last clone is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), hookwire_client::Error> {
/// use std::time::Duration;
/// use hookwire_client::{Host, StreamResolver};
///
/// let deadline = Duration::from_secs(120);
/// let resolver = StreamResolver::builder("http://127.0.0.1:50061")
///     .deadline(deadline)
///     .host_name("billing-agent")
///     .build()?;
/// let mut seen = resolver.subscribe_seen();
/// tokio::spawn(async move {
///     while let Ok(s) = seen.recv().await {
///         println!("{} is looking at {} ({})", s.approver, s.session_id, s.interception_point);
///     }
/// });
/// let host = Host::builder("billing-agent", "hookwire")
///     .remote("policy", "http://127.0.0.1:50051")
///     .approval_resolver(resolver)
///     .approval_deadline(deadline)
///     .build()?;
/// # let _ = host;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct StreamResolver {
    shared: Arc<Shared>,
    _stop: Arc<StopOnDrop>,
}

impl std::fmt::Debug for StreamResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResolver")
            .field("endpoint", &self.shared.settings.endpoint)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl StreamResolver {
    /// Settings for a resolver of the service at `endpoint` (e.g.
    /// `http://127.0.0.1:50061`).
    pub fn builder(endpoint: impl Into<String>) -> StreamResolverBuilder {
        StreamResolverBuilder {
            endpoint: endpoint.into(),
            deadline: DEFAULT_APPROVAL_DEADLINE,
            host_name: "hookwire-host".into(),
            connect_timeout: Duration::from_secs(5),
            connect_wait: Duration::from_secs(5),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            heartbeat: Duration::from_secs(5),
        }
    }

    /// A resolver with default settings. Must be called within a tokio
    /// runtime.
    pub fn connect(endpoint: impl Into<String>) -> Result<Self, Error> {
        Self::builder(endpoint).build()
    }

    /// Whether a stream to the service is up now.
    pub fn is_connected(&self) -> bool {
        *self.shared.connected.borrow()
    }

    /// Waits up to `timeout` for a stream to be up; `true` if one is.
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        let mut rx = self.shared.connected.subscribe();
        self.shared.wake.notify_one();
        tokio::time::timeout(timeout, rx.wait_for(|c| *c))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits up to `wait` for a stream, asking for an attempt at once;
    /// gives up early when that attempt fails (the service is down: fail
    /// now rather than hang).
    async fn await_stream(&self, wait: Duration) -> bool {
        let mut connected = self.shared.connected.subscribe();
        let mut failures = self.shared.failures.subscribe();
        failures.borrow_and_update();
        self.shared.wake.notify_one();
        tokio::select! {
            up = connected.wait_for(|c| *c) => up.is_ok(),
            _ = failures.changed() => *self.shared.connected.borrow(),
            () = tokio::time::sleep(wait) => *self.shared.connected.borrow(),
        }
    }

    /// Requests waiting for a resolution now.
    pub fn pending(&self) -> usize {
        self.shared.state().pending.len()
    }

    /// The per-request deadline.
    pub fn deadline(&self) -> Duration {
        self.shared.settings.deadline
    }

    /// Every "an approver is looking" notice from now on, for logs and
    /// dashboards. A slow receiver misses notices (they are informational).
    pub fn subscribe_seen(&self) -> broadcast::Receiver<SeenEvent> {
        self.shared.seen.subscribe()
    }

    async fn resolve_one(
        &self,
        request: &ApprovalRequest,
    ) -> Result<ApprovalResolution, StreamFailure> {
        let shared = &self.shared;
        let deadline = Instant::now() + shared.settings.deadline;
        if !self.is_connected() {
            let wait = shared
                .settings
                .connect_wait
                .min(deadline.saturating_duration_since(Instant::now()));
            if !self.await_stream(wait).await {
                return Err(StreamFailure::Unavailable);
            }
        }
        let id = format!("r-{}", shared.next_id.fetch_add(1, Ordering::Relaxed));
        let (reply, answer) = oneshot::channel();
        {
            let mut state = shared.state();
            let Some(outbound) = state.outbound.clone() else {
                return Err(StreamFailure::Unavailable);
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            let message = pb::HostMessage {
                kind: Some(pb::host_message::Kind::Request(request_to_pb(
                    &id, request, remaining,
                ))),
            };
            if outbound.send(message).is_err() {
                return Err(StreamFailure::Lost);
            }
            state.pending.insert(
                id.clone(),
                Slot {
                    reply,
                    point: request.interception_point,
                    session_id: request.context.session_id().to_owned(),
                },
            );
        }
        let mut guard = Withdraw {
            shared,
            id: Some(id),
        };
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(answered) => {
                guard.id = None;
                answered.unwrap_or(Err(StreamFailure::Lost))
            }
            // Dropping the guard withdraws the request.
            Err(_) => Err(StreamFailure::Deadline),
        }
    }
}

impl ApprovalResolver for StreamResolver {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalResolution, BoxError>> {
        Box::pin(async move {
            self.resolve_one(request).await.map_err(|f| {
                tracing::info!(failure = %f, "approval request failed");
                Box::new(Error::ApprovalStream(f)) as BoxError
            })
        })
    }
}

/// State shared by the resolver's clones and its background task.
struct Shared {
    state: Mutex<LinkState>,
    connected: watch::Sender<bool>,
    /// Counts failed connection attempts.
    failures: watch::Sender<u64>,
    wake: Notify,
    seen: broadcast::Sender<SeenEvent>,
    next_id: AtomicU64,
    settings: StreamResolverBuilder,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, LinkState> {
        // Every update under the lock is a single insert or remove.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails every pending request and forgets the stream.
    fn drop_stream(&self, failure: &StreamFailure) {
        let pending = {
            let mut state = self.state();
            state.outbound = None;
            std::mem::take(&mut state.pending)
        };
        self.connected.send_replace(false);
        if !pending.is_empty() {
            tracing::warn!(
                count = pending.len(),
                "approval stream lost; failing pending requests"
            );
        }
        for (_, slot) in pending {
            let _ = slot.reply.send(Err(failure.clone()));
        }
    }
}

#[derive(Default)]
struct LinkState {
    /// The current stream's sending half; `None` while disconnected.
    outbound: Option<mpsc::UnboundedSender<pb::HostMessage>>,
    pending: HashMap<String, Slot>,
}

struct Slot {
    reply: oneshot::Sender<Result<ApprovalResolution, StreamFailure>>,
    point: InterceptionPoint,
    session_id: String,
}

/// Withdraws a request that is given up on before its answer arrived.
struct Withdraw<'a> {
    shared: &'a Shared,
    id: Option<String>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut state = self.shared.state();
        if state.pending.remove(&id).is_some()
            && let Some(outbound) = &state.outbound
        {
            let _ = outbound.send(pb::HostMessage {
                kind: Some(pb::host_message::Kind::Cancel(pb::Cancel {
                    request_id: id,
                })),
            });
        }
    }
}

/// Stops the background task when the last resolver clone goes.
struct StopOnDrop(watch::Sender<bool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// The background task: connect, serve the stream until it ends, fail what
/// was pending, back off, repeat; until the resolver is dropped.
async fn drive(shared: Arc<Shared>, endpoint: Endpoint, mut stop: watch::Receiver<bool>) {
    let settings = &shared.settings;
    let mut backoff = settings.backoff_min;
    loop {
        if *stop.borrow() {
            break;
        }
        match open(&shared, &endpoint).await {
            Ok(stream) => {
                backoff = settings.backoff_min;
                let ended = serve(&shared, stream, &mut stop).await;
                shared.drop_stream(&StreamFailure::Lost);
                tracing::info!(endpoint = %settings.endpoint, why = ended, "approval stream ended");
            }
            Err(why) => {
                shared.failures.send_modify(|n| *n = n.wrapping_add(1));
                tracing::debug!(endpoint = %settings.endpoint, why, "approval service unreachable");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = shared.wake.notified() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        backoff = backoff.saturating_mul(2).min(settings.backoff_max);
    }
    shared.drop_stream(&StreamFailure::Lost);
}

/// An open `Resolve` stream.
struct Open {
    outbound: mpsc::UnboundedSender<pb::HostMessage>,
    inbound: tonic::Streaming<pb::ServiceMessage>,
    heartbeat: Duration,
}

/// Opens the stream and waits for the service's `ServiceReady`.
async fn open(shared: &Shared, endpoint: &Endpoint) -> Result<Open, &'static str> {
    let settings = &shared.settings;
    let bound = settings.connect_timeout;
    let channel = tokio::time::timeout(bound, endpoint.connect())
        .await
        .map_err(|_| "connect timed out")?
        .map_err(|_| "connect failed")?;
    let mut client = ApprovalServiceClient::new(channel)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);
    let (outbound, rx) = mpsc::unbounded_channel();
    let hello = pb::HostMessage {
        kind: Some(pb::host_message::Kind::Hello(pb::HostHello {
            name: settings.host_name.clone(),
        })),
    };
    let _ = outbound.send(hello);
    let response = tokio::time::timeout(bound, client.resolve(UnboundedReceiverStream::new(rx)))
        .await
        .map_err(|_| "stream open timed out")?
        .map_err(|_| "stream refused")?;
    let mut inbound = response.into_inner();
    let first = tokio::time::timeout(bound, inbound.message())
        .await
        .map_err(|_| "no ready message")?
        .map_err(|_| "stream broke before ready")?;
    let heartbeat = match first.and_then(|m| m.kind) {
        Some(pb::service_message::Kind::Ready(r)) if r.heartbeat_interval_ms > 0 => {
            Duration::from_millis(r.heartbeat_interval_ms)
        }
        Some(pb::service_message::Kind::Ready(_)) => settings.heartbeat,
        _ => return Err("the service did not start with ServiceReady"),
    };
    shared.state().outbound = Some(outbound.clone());
    shared.connected.send_replace(true);
    tracing::info!(endpoint = %settings.endpoint, "approval stream up");
    Ok(Open {
        outbound,
        inbound,
        heartbeat,
    })
}

/// Serves one stream until it ends; returns why it ended.
async fn serve(shared: &Shared, mut open: Open, stop: &mut watch::Receiver<bool>) -> &'static str {
    let period = open.heartbeat.clamp(Duration::from_millis(10), MAX_SETTING);
    let silence = period * 3;
    let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut heard = Instant::now();
    loop {
        tokio::select! {
            message = open.inbound.message() => {
                let message = match message {
                    Ok(Some(m)) => m,
                    Ok(None) => return "closed by the service",
                    Err(_) => return "broken",
                };
                heard = Instant::now();
                deliver(shared, message);
            }
            _ = ticker.tick() => {
                if heard.elapsed() > silence {
                    return "silent for three heartbeats";
                }
                let beat = pb::HostMessage { kind: Some(pb::host_message::Kind::Heartbeat(pb::Heartbeat {})) };
                if open.outbound.send(beat).is_err() {
                    return "closed";
                }
            }
            _ = stop.wait_for(|s| *s) => return "resolver dropped",
        }
    }
}

/// Hands one message from the service to whoever waits for it.
fn deliver(shared: &Shared, message: pb::ServiceMessage) {
    use pb::service_message::Kind;
    match message.kind {
        Some(Kind::Resolution(r)) => {
            let r = resolution_from_pb(r);
            let slot = shared.state().pending.remove(&r.request_id);
            match slot {
                Some(slot) => {
                    tracing::info!(
                        request_id = %r.request_id,
                        approver = %r.approver,
                        outcome = ?r.resolution.outcome,
                        "approval resolution received"
                    );
                    let _ = slot.reply.send(Ok(r.resolution));
                }
                None => {
                    tracing::debug!(request_id = %r.request_id, "resolution for an unknown request ignored")
                }
            }
        }
        Some(Kind::Failed(f)) => {
            if let Some(slot) = shared.state().pending.remove(&f.request_id) {
                let _ = slot.reply.send(Err(StreamFailure::Refused(f.reason)));
            }
        }
        Some(Kind::Seen(s)) => {
            let event = shared
                .state()
                .pending
                .get(&s.request_id)
                .map(|slot| SeenEvent {
                    request_id: s.request_id.clone(),
                    approver: s.approver.clone(),
                    interception_point: slot.point,
                    session_id: slot.session_id.clone(),
                });
            if let Some(event) = event {
                tracing::info!(
                    approver = %event.approver,
                    session = %event.session_id,
                    point = %event.interception_point,
                    "an approver is looking"
                );
                let _ = shared.seen.send(event);
            }
        }
        Some(Kind::Ready(_) | Kind::Heartbeat(_)) | None => {}
    }
}
