//! The background half of an approval stream: the task that connects,
//! reconnects with backoff and full jitter (hosts that lost a restarted
//! service come back spread out, not in lockstep), keeps the heartbeat, hands each message from
//! the service to the request waiting for it, and fails every pending
//! request at once when the stream goes; and the state it shares with the
//! resolver.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalResolution, StreamResolution};
use hookwire::backoff::Backoff;
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use tokio::sync::{Notify, broadcast, mpsc, oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::Endpoint;

use crate::error::StreamFailure;

/// Largest message the host accepts from an approval service: a resolution
/// carries at most what an approver could send (the service's 8 MiB bound)
/// plus a small envelope. A larger one breaks the stream and fails every
/// pending request closed, without being read into memory.
pub(super) const MAX_APPROVAL_MESSAGE_BYTES: usize = 8 * 1024 * 1024 + 64 * 1024;

/// Largest message the host sends (a request with its redacted context);
/// a larger request fails closed before it is sent.
pub(super) const MAX_APPROVAL_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// A host's bearer token for the approval service. Its `Debug` output
/// never shows it.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct BearerToken(pub(super) String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The longest any duration setting may be (longer ones are cut to it):
/// 30 days, far beyond any human's answer and far from timer overflow.
pub(super) const MAX_SETTING: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// What the builder configured: read by the resolver and the task alike.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    /// The instances of the service, tried in turn: the builder's
    /// endpoint first, then [`StreamResolverBuilder::endpoints`](super::StreamResolverBuilder::endpoints).
    pub(super) endpoints: Vec<String>,
    pub(super) deadline: Duration,
    pub(super) host_name: String,
    pub(super) connect_timeout: Duration,
    pub(super) connect_wait: Duration,
    pub(super) backoff_min: Duration,
    pub(super) backoff_max: Duration,
    pub(super) heartbeat: Duration,
    pub(super) token: Option<BearerToken>,
    /// How long requests pending when a stream ends wait for the next
    /// stream, where they are sent again (re-attached); `None`: they fail
    /// at once.
    pub(super) reattach_grace: Option<Duration>,
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

/// State shared by the resolver's clones and its background task.
pub(super) struct Shared {
    pub(super) state: Mutex<LinkState>,
    pub(super) connected: watch::Sender<bool>,
    /// Counts failed connection attempts.
    pub(super) failures: watch::Sender<u64>,
    pub(super) wake: Notify,
    pub(super) seen: broadcast::Sender<SeenEvent>,
    pub(super) next_id: AtomicU64,
    /// Starts every request id (`r-<random>-N`): ids of two resolvers
    /// holding one host credential (two processes of one host) never
    /// meet, so one can never re-attach the other's request.
    pub(super) id_prefix: String,
    pub(super) settings: Settings,
}

impl Shared {
    pub(super) fn state(&self) -> MutexGuard<'_, LinkState> {
        // Every update under the lock is a single insert or remove.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the stream. Fails every pending request, unless re-attach
    /// is on and `keep` says so: then they wait for the next stream, at
    /// most the grace.
    fn drop_stream(&self, failure: &StreamFailure, keep: bool) {
        let pending = {
            let mut state = self.state();
            state.outbound = None;
            if keep && self.settings.reattach_grace.is_some() && !state.pending.is_empty() {
                state.lost_at.get_or_insert_with(Instant::now);
                drop(state);
                self.connected.send_replace(false);
                return;
            }
            state.lost_at = None;
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
pub(super) struct LinkState {
    /// The current stream's sending half; `None` while disconnected.
    pub(super) outbound: Option<mpsc::UnboundedSender<pb::HostMessage>>,
    pub(super) pending: HashMap<String, Slot>,
    /// When the stream the pending requests were sent on ended, while
    /// they wait to be re-attached.
    pub(super) lost_at: Option<Instant>,
}

/// A resolution and the approver the service says made it.
pub(super) type Answer = (ApprovalResolution, String);

pub(super) struct Slot {
    pub(super) reply: oneshot::Sender<Result<Answer, StreamFailure>>,
    pub(super) point: InterceptionPoint,
    pub(super) session_id: String,
    /// The request as first sent, to send again on a new stream.
    pub(super) wire: pb::ApprovalRequest,
    /// When the host stops waiting for it.
    pub(super) deadline: Instant,
}

/// Stops the background task when the last resolver clone goes.
pub(super) struct StopOnDrop(watch::Sender<bool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// Starts the background task on `runtime`; it runs until the returned
/// handle is dropped. `endpoints` are the checked forms of
/// `settings.endpoints`, in the same order.
pub(super) fn spawn(
    runtime: &tokio::runtime::Handle,
    settings: Settings,
    endpoints: Vec<Endpoint>,
) -> (Arc<Shared>, StopOnDrop) {
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
        id_prefix: format!("r-{:016x}-", fastrand::u64(..)),
        settings,
    });
    runtime.spawn(drive(Arc::clone(&shared), endpoints, stopped));
    (shared, StopOnDrop(stop))
}

/// The background task: connect, serve the stream until it ends, fail (or,
/// with a re-attach grace, keep) what was pending, back off, repeat; until
/// the resolver is dropped.
///
/// With several endpoints, each attempt goes to the next one in turn: a
/// stream that ended sends the next attempt to the next instance (the one
/// that ended it is likely going away), and a failed attempt moves on to
/// the next at once. Only a whole round of failed attempts counts as a
/// failure (what fails waiting requests early) and backs off.
async fn drive(shared: Arc<Shared>, endpoints: Vec<Endpoint>, mut stop: watch::Receiver<bool>) {
    let settings = &shared.settings;
    let mut backoff = reconnect_backoff(settings);
    let mut at = 0;
    let mut failed_in_a_row = 0;
    loop {
        if *stop.borrow() {
            break;
        }
        let url = &settings.endpoints[at];
        match open(&shared, &endpoints[at], url).await {
            Ok(stream) => {
                backoff.reset();
                failed_in_a_row = 0;
                let ended = serve(&shared, stream, &mut stop).await;
                shared.drop_stream(&StreamFailure::Lost, true);
                tracing::info!(endpoint = %url, why = ended, "approval stream ended");
                at = (at + 1) % endpoints.len();
            }
            Err(why) => {
                let expired = shared.settings.reattach_grace.is_some_and(|grace| {
                    shared.state().lost_at.is_some_and(|t| t.elapsed() >= grace)
                });
                if expired {
                    shared.drop_stream(&StreamFailure::Lost, false);
                }
                tracing::debug!(endpoint = %url, why, "approval service unreachable");
                at = (at + 1) % endpoints.len();
                failed_in_a_row += 1;
                if failed_in_a_row < endpoints.len() {
                    continue;
                }
                failed_in_a_row = 0;
                shared.failures.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.next_delay()) => {}
            () = shared.wake.notified() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    shared.drop_stream(&StreamFailure::Lost, false);
}

/// The delays between reconnection attempts: random up to the configured
/// minimum after a stream ends, the bound doubling to the maximum while
/// attempts fail.
fn reconnect_backoff(settings: &Settings) -> Backoff {
    Backoff::new(settings.backoff_min, settings.backoff_max)
}

/// An open `Resolve` stream.
struct Open {
    outbound: mpsc::UnboundedSender<pb::HostMessage>,
    inbound: tonic::Streaming<pb::ServiceMessage>,
    heartbeat: Duration,
}

/// Opens the stream to `endpoint` (whose URL is `url`) and waits for the
/// service's `ServiceReady`.
async fn open(shared: &Shared, endpoint: &Endpoint, url: &str) -> Result<Open, &'static str> {
    let settings = &shared.settings;
    let bound = settings.connect_timeout;
    let channel = tokio::time::timeout(bound, endpoint.connect())
        .await
        .map_err(|_| "connect timed out")?
        .map_err(|_| "connect failed")?;
    let mut client = ApprovalServiceClient::new(channel)
        .max_decoding_message_size(MAX_APPROVAL_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_APPROVAL_REQUEST_BYTES);
    let (outbound, rx) = mpsc::unbounded_channel();
    let hello = pb::HostMessage {
        kind: Some(pb::host_message::Kind::Hello(pb::HostHello {
            name: settings.host_name.clone(),
        })),
    };
    let _ = outbound.send(hello);
    let mut request = tonic::Request::new(UnboundedReceiverStream::new(rx));
    if let Some(token) = &settings.token {
        let mut value = MetadataValue::try_from(format!("Bearer {}", token.0))
            .map_err(|_| "the bearer token is not a valid header value")?;
        value.set_sensitive(true);
        request.metadata_mut().insert("authorization", value);
    }
    let response = tokio::time::timeout(bound, client.resolve(request))
        .await
        .map_err(|_| "stream open timed out")?
        .map_err(refused)?;
    let mut inbound = response.into_inner();
    let first = tokio::time::timeout(bound, inbound.message())
        .await
        .map_err(|_| "no ready message")?
        .map_err(refused)?;
    let heartbeat = match first.and_then(|m| m.kind) {
        Some(pb::service_message::Kind::Ready(r)) if r.heartbeat_interval_ms > 0 => {
            Duration::from_millis(r.heartbeat_interval_ms)
        }
        Some(pb::service_message::Kind::Ready(_)) => settings.heartbeat,
        _ => return Err("the service did not start with ServiceReady"),
    };
    {
        // Requests left from a stream that ended go again on this one,
        // with what is left of their deadline; the service re-attaches
        // them (same id, original deadline) or queues them anew.
        let mut state = shared.state();
        state.lost_at = None;
        let now = Instant::now();
        for slot in state.pending.values() {
            let mut wire = slot.wire.clone();
            wire.deadline_ms =
                u64::try_from(slot.deadline.saturating_duration_since(now).as_millis())
                    .unwrap_or(u64::MAX);
            let _ = outbound.send(pb::HostMessage {
                kind: Some(pb::host_message::Kind::Request(wire)),
            });
        }
        if !state.pending.is_empty() {
            tracing::info!(
                count = state.pending.len(),
                "approval requests sent again on a new stream"
            );
        }
        state.outbound = Some(outbound.clone());
    }
    shared.connected.send_replace(true);
    tracing::info!(endpoint = %url, "approval stream up");
    Ok(Open {
        outbound,
        inbound,
        heartbeat,
    })
}

/// Why the service refused the stream, for the log (never the token).
fn refused(status: tonic::Status) -> &'static str {
    match status.code() {
        tonic::Code::Unauthenticated => "the service did not accept the host's credential",
        tonic::Code::PermissionDenied => "the host's credential may not submit requests",
        tonic::Code::ResourceExhausted | tonic::Code::OutOfRange => {
            "a message exceeded the size bound"
        }
        _ => "stream refused",
    }
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
                    Err(status) => return match refused(status) {
                        "stream refused" => "broken",
                        why => why,
                    },
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
            let r = StreamResolution::from(r);
            let slot = shared.state().pending.remove(&r.request_id);
            match slot {
                Some(slot) => {
                    tracing::info!(
                        request_id = %r.request_id,
                        approver = %r.approver,
                        outcome = ?r.resolution.outcome,
                        "approval resolution received"
                    );
                    let _ = slot.reply.send(Ok((r.resolution, r.approver)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            endpoints: vec!["http://127.0.0.1:1".into()],
            deadline: Duration::from_secs(60),
            host_name: "h".into(),
            connect_timeout: Duration::from_secs(1),
            connect_wait: Duration::from_secs(1),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            heartbeat: Duration::from_secs(5),
            token: None,
            reattach_grace: None,
        }
    }

    #[test]
    fn two_links_reconnect_at_different_moments_within_the_jittered_range() {
        let settings = settings();
        let (mut a, mut b) = (reconnect_backoff(&settings), reconnect_backoff(&settings));
        let mut bound = settings.backoff_min;
        let mut theirs = Vec::new();
        let mut ours = Vec::new();
        for _ in 0..8 {
            let (da, db) = (a.next_delay(), b.next_delay());
            assert!(
                da < bound && db < bound,
                "{da:?}, {db:?} not below {bound:?}"
            );
            ours.push(da);
            theirs.push(db);
            bound = (bound * 2).min(settings.backoff_max);
        }
        assert_ne!(ours, theirs, "two hosts back off in lockstep");
        a.reset();
        assert!(
            a.next_delay() < settings.backoff_min,
            "a stream that came up resets"
        );
    }
}
