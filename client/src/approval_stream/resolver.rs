//! The host's half of an approval stream: the settings, the
//! [`StreamResolver`] every session consults, and the bookkeeping of one
//! request (its id, its wait, its withdrawal when given up). The stream
//! itself is the background task's, in `link`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hookwire::approval::{ApprovalRequest, StreamRequest};
use hookwire::pb;
use tokio::sync::{broadcast, oneshot};
use tokio::time::Instant;
use tonic::transport::Endpoint;

use super::link::{self, BearerToken, MAX_SETTING, SeenEvent, Settings, Shared, Slot, StopOnDrop};
use crate::approval::{ApprovalAnswer, ApprovalResolver, DEFAULT_APPROVAL_DEADLINE};
use crate::error::{Error, StreamFailure};
use crate::interceptor::{BoxError, BoxFuture};
use crate::remote::{TlsConfig, secured};

/// Settings of a [`StreamResolver`]; start from [`StreamResolver::builder`].
#[derive(Debug, Clone)]
pub struct StreamResolverBuilder {
    settings: Settings,
    tls: Option<TlsConfig>,
}

impl StreamResolverBuilder {
    /// The longest any duration setting may be (longer ones are cut to
    /// it): 30 days, far beyond any human's answer and far from timer
    /// overflow.
    pub const MAX_SETTING: Duration = MAX_SETTING;

    /// How long each request may wait for a resolution (and what the
    /// service is told). Default [`DEFAULT_APPROVAL_DEADLINE`]: humans
    /// take minutes. Unrelated to interceptor timeouts.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.settings.deadline = deadline.min(MAX_SETTING);
        self
    }

    /// The name approvers see for this host. Default `hookwire-host`.
    #[must_use]
    pub fn host_name(mut self, name: impl Into<String>) -> Self {
        self.settings.host_name = name.into();
        self
    }

    /// Bound on one connection attempt. Default 5 s.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout.min(MAX_SETTING);
        self
    }

    /// How long a request made while no stream is up waits for one before
    /// failing (it fails sooner when the attempt it triggers fails).
    /// Default 5 s.
    #[must_use]
    pub fn connect_wait(mut self, wait: Duration) -> Self {
        self.settings.connect_wait = wait.min(MAX_SETTING);
        self
    }

    /// The delay between reconnection attempts: up to `min` after a stream
    /// ends, the bound doubling up to `max` while attempts fail. Each delay
    /// is drawn at random below its bound (full jitter), so the hosts of a
    /// restarted service reconnect spread out, not all at once. Default
    /// 100 ms to 5 s. A request made while disconnected triggers an attempt
    /// at once.
    #[must_use]
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.settings.backoff_min = min.clamp(Duration::from_millis(1), MAX_SETTING);
        self.settings.backoff_max = max.clamp(self.settings.backoff_min, MAX_SETTING);
        self
    }

    /// The heartbeat interval used until the service announces its own
    /// (it does so first thing on every stream). Default 5 s.
    #[must_use]
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.settings.heartbeat = interval.min(MAX_SETTING);
        self
    }

    /// How the service is verified on an `https://` endpoint: its
    /// authority (instead of the public roots), the name its certificate
    /// must carry, and the client certificate the host presents when the
    /// service authenticates hosts by mutual TLS. A service whose
    /// certificate does not verify is never reached: every request fails
    /// closed.
    #[must_use]
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The bearer token the operator issued this host: sent as
    /// `authorization: Bearer <token>` when the stream opens, marked
    /// sensitive, never logged or shown by `Debug`. Use it over
    /// `https://` only.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.settings.token = Some(BearerToken(token.into()));
        self
    }

    /// Keeps requests pending when their stream ends (the service went
    /// away) for up to `grace`, and sends them again on the next stream:
    /// a service sharing its queue with others (PostgreSQL) re-attaches
    /// each one with its queue id and original deadline, and delivers a
    /// decision taken meanwhile; any other queues it anew with what is
    /// left of the host's deadline. Each request still ends at its own
    /// deadline. Off by default: a request fails the moment its stream
    /// ends.
    #[must_use]
    pub fn reattach_grace(mut self, grace: Duration) -> Self {
        self.settings.reattach_grace = Some(grace.min(MAX_SETTING));
        self
    }

    /// More instances of the same service (sharing one queue, e.g. on one
    /// PostgreSQL database), tried in turn after the builder's endpoint:
    /// whenever a stream ends or an attempt fails, the next attempt goes
    /// to the next instance. With [`reattach_grace`](Self::reattach_grace)
    /// a host whose instance dies or shuts down re-attaches its pending
    /// requests on another one. Every URL must differ, and all must share
    /// one scheme (all `http://` or all `https://`, verified alike).
    #[must_use]
    pub fn endpoints<I, S>(mut self, endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.settings
            .endpoints
            .extend(endpoints.into_iter().map(Into::into));
        self
    }

    /// Validates the endpoints and starts the background task that keeps
    /// the stream up. Must be called within a tokio runtime.
    pub fn build(self) -> Result<StreamResolver, Error> {
        let mut endpoints = Vec::with_capacity(self.settings.endpoints.len());
        for (n, url) in self.settings.endpoints.iter().enumerate() {
            let invalid = |reason: String| Error::InvalidEndpoint {
                name: "approval".into(),
                endpoint: url.clone(),
                reason,
            };
            if self.settings.endpoints[..n].contains(url) {
                return Err(invalid("listed twice".into()));
            }
            let endpoint = self.endpoint(url).map_err(invalid)?;
            if let Some(first) = endpoints.first().map(|e: &Endpoint| e.uri().scheme_str())
                && first != endpoint.uri().scheme_str()
            {
                return Err(invalid(
                    "every endpoint must be http://, or every one https://".into(),
                ));
            }
            endpoints.push(endpoint);
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::ApprovalStream(StreamFailure::NoRuntime))?;
        let (shared, stop) = link::spawn(&runtime, self.settings, endpoints);
        Ok(StreamResolver {
            shared,
            deadline: None,
            _stop: Arc::new(stop),
        })
    }

    /// One checked endpoint, or why it is unusable.
    fn endpoint(&self, url: &str) -> Result<Endpoint, String> {
        let keepalive = self.settings.heartbeat.max(Duration::from_secs(1));
        let endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| e.to_string())?
            .tcp_nodelay(true)
            .connect_timeout(self.settings.connect_timeout)
            .http2_keep_alive_interval(keepalive)
            .keep_alive_timeout(keepalive.saturating_mul(3))
            .keep_alive_while_idle(true);
        if endpoint.uri().scheme_str().is_none() || endpoint.uri().host().is_none() {
            return Err("expected an absolute http:// or https:// URL".into());
        }
        secured(endpoint, self.tls.as_ref())
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
    /// This clone's per-request deadline, when it differs from the
    /// builder's ([`StreamResolver::with_deadline`]).
    deadline: Option<Duration>,
    _stop: Arc<StopOnDrop>,
}

impl std::fmt::Debug for StreamResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResolver")
            .field("endpoints", &self.shared.settings.endpoints)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl StreamResolver {
    /// Settings for a resolver of the service at `endpoint` (e.g.
    /// `http://127.0.0.1:50061`); more instances of it can follow
    /// ([`StreamResolverBuilder::endpoints`]).
    pub fn builder(endpoint: impl Into<String>) -> StreamResolverBuilder {
        StreamResolverBuilder {
            settings: Settings {
                endpoints: vec![endpoint.into()],
                deadline: DEFAULT_APPROVAL_DEADLINE,
                host_name: "hookwire-host".into(),
                connect_timeout: Duration::from_secs(5),
                connect_wait: Duration::from_secs(5),
                backoff_min: Duration::from_millis(100),
                backoff_max: Duration::from_secs(5),
                heartbeat: Duration::from_secs(5),
                token: None,
                reattach_grace: None,
            },
            tls: None,
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
        self.deadline.unwrap_or(self.shared.settings.deadline)
    }

    /// A clone sharing this resolver's stream whose requests wait
    /// `deadline` (cut to [`StreamResolverBuilder::MAX_SETTING`]) and tell
    /// the service so: how a declaration's `approval_resolver_ms` reaches
    /// the approvers' countdown.
    #[must_use]
    pub fn with_deadline(&self, deadline: Duration) -> Self {
        Self {
            deadline: Some(deadline.min(MAX_SETTING)),
            ..self.clone()
        }
    }

    /// Every "an approver is looking" notice from now on, for logs and
    /// dashboards. A slow receiver misses notices (they are informational).
    pub fn subscribe_seen(&self) -> broadcast::Receiver<SeenEvent> {
        self.shared.seen.subscribe()
    }

    async fn resolve_one(
        &self,
        request: &ApprovalRequest,
    ) -> Result<ApprovalAnswer, StreamFailure> {
        let shared = &self.shared;
        // A request too large for the stream fails alone, before it is
        // sent (the encoder's bound would break the whole stream). The
        // context's JSON text is nearly all of the message.
        if request.context.to_json().to_string().len() + 64 * 1024
            > super::link::MAX_APPROVAL_REQUEST_BYTES
        {
            return Err(StreamFailure::Refused(
                "the request exceeds the size bound".into(),
            ));
        }
        let deadline = Instant::now() + self.deadline();
        if !self.is_connected() {
            let wait = shared
                .settings
                .connect_wait
                .min(deadline.saturating_duration_since(Instant::now()));
            if !self.await_stream(wait).await {
                return Err(StreamFailure::Unavailable);
            }
        }
        let id = format!(
            "{}{}",
            shared.id_prefix,
            shared.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (reply, answer) = oneshot::channel();
        {
            let mut state = shared.state();
            let Some(outbound) = state.outbound.clone() else {
                return Err(StreamFailure::Unavailable);
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            let outgoing = StreamRequest {
                request_id: id.clone(),
                request: request.clone(),
                deadline: remaining,
            };
            let mut wire = pb::ApprovalRequest::from(&outgoing);
            // The stream is shared: the emission's trace context travels
            // in the request itself.
            wire.trace_context = crate::trace::context_map(&tracing::Span::current());
            let message = pb::HostMessage {
                kind: Some(pb::host_message::Kind::Request(wire.clone())),
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
                    wire,
                    deadline,
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
                let (resolution, approver) = answered.unwrap_or(Err(StreamFailure::Lost))?;
                // The service names the approver it authenticated; the
                // host's record carries it (payload-free).
                Ok(ApprovalAnswer::from(resolution).by(approver))
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
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        Box::pin(async move {
            self.resolve_one(request).await.map_err(|f| {
                tracing::info!(failure = %f, "approval request failed");
                Box::new(Error::ApprovalStream(f)) as BoxError
            })
        })
    }
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
