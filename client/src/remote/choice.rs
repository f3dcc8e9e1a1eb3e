//! Which transport one endpoint's calls take: the `Multiplex` stream when
//! the service's `Describe` manifest declares it, the unary RPCs
//! otherwise, and unary again for a service that declares the stream but
//! refuses it.
//!
//! - **The probe** asks `Describe` in a task of its own, bounded by
//!   [`PROBE_TIMEOUT`], so no emission's deadline is what bounds it. While
//!   the answer is unknown (the endpoint's first call) an emission waits
//!   for the probe at most [`PROBE_WAIT`], and never more than a quarter
//!   of its own timeout, counted from the probe's start; then it goes
//!   unary, the probe going on. So a `Describe` that never answers costs
//!   the first emissions at most that wait, never their timeout.
//! - **An unanswered probe** leaves the calls unary and is asked again
//!   after [`PROBE_RETRY`]; until a probe answers, no emission waits for
//!   one (a logged `WARN` says so once).
//! - **No stream declared** (or `Describe` itself `UNIMPLEMENTED`): unary,
//!   asked again after [`PROBE_REFRESH`], so an upgraded service is picked
//!   up.
//! - **A stream refused as `UNIMPLEMENTED`** (the service declares it and
//!   does not serve it, or was replaced by one without it): the endpoint
//!   falls back to unary until [`PROBE_REFRESH`] has passed (a `WARN`
//!   names the fallback), and the emissions the stream refused are sent
//!   again as unary calls within their own deadline (`multiplex`): the
//!   refusal came before the stream carried anything, so nothing was
//!   decided.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::declares_multiplex;
use tokio::sync::Notify;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

/// Longest the `Describe` probe may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest an emission waits for a probe under way (and at most a quarter
/// of its own timeout), from the probe's start.
pub(crate) const PROBE_WAIT: Duration = Duration::from_millis(500);
/// When an unanswered probe is tried again (calls are unary meanwhile).
pub(crate) const PROBE_RETRY: Duration = Duration::from_secs(1);
/// When a service that declared no stream, or refused it, is asked again.
pub(crate) const PROBE_REFRESH: Duration = Duration::from_secs(60);

/// What the endpoint is known to serve.
const UNKNOWN: u8 = 0;
const STREAM: u8 = 1;
const UNARY: u8 = 2;

/// The transport choice of one endpoint, shared by its calls, its stream
/// readers and its probe. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Choice(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    channel: Channel,
    metadata: Arc<MetadataMap>,
    /// For the log lines: the endpoint URL.
    endpoint: String,
    /// [`UNKNOWN`], [`STREAM`] or [`UNARY`]; written under `probe`.
    mode: AtomicU8,
    probe: Mutex<Probe>,
    /// Woken when a probe settles.
    settled: Notify,
}

/// When the next probe is due and whether one is under way.
#[derive(Debug)]
struct Probe {
    /// `None`: now.
    due: Option<Instant>,
    /// When the probe under way started.
    running_since: Option<Instant>,
    /// Whether an emission waits for a probe under way: until a probe
    /// goes unanswered, and again once one answers.
    patient: bool,
}

impl Choice {
    /// The choice of the endpoint at `endpoint`, probed over `channel`
    /// with `metadata`.
    pub(crate) fn new(channel: Channel, metadata: Arc<MetadataMap>, endpoint: &str) -> Self {
        Self(Arc::new(Inner {
            channel,
            metadata,
            endpoint: endpoint.to_owned(),
            mode: AtomicU8::new(UNKNOWN),
            probe: Mutex::new(Probe {
                due: None,
                running_since: None,
                patient: true,
            }),
            settled: Notify::new(),
        }))
    }

    /// Whether a call with `timeout` goes over the stream: known, or
    /// found out by the probe this call starts or finds under way, if it
    /// answers within the call's wait (see the module docs).
    pub(crate) async fn stream(&self, timeout: Option<Duration>) -> bool {
        let inner = &self.0;
        if inner.mode() == STREAM {
            return true;
        }
        // Created before the state is read, so that a probe settling
        // right after still wakes it.
        let settled = inner.settled.notified();
        let until = {
            let mut probe = lock(&inner.probe);
            let mode = inner.mode();
            if mode == STREAM {
                return true;
            }
            let now = Instant::now();
            if probe.running_since.is_none() && probe.due.is_none_or(|at| now >= at) {
                probe.running_since = Some(now);
                tokio::spawn(run_probe(self.0.clone()));
            }
            match probe.running_since {
                Some(since) if probe.patient && mode == UNKNOWN => since + wait_of(timeout),
                _ => return false,
            }
        };
        let _ = tokio::time::timeout_at(until.into(), settled).await;
        inner.mode() == STREAM
    }

    /// The service refused the stream as `UNIMPLEMENTED`: calls go unary
    /// until [`PROBE_REFRESH`] has passed.
    pub(crate) fn refused(&self) {
        let inner = &self.0;
        {
            let mut probe = lock(&inner.probe);
            if inner.mode() != STREAM {
                return;
            }
            probe.due = Some(Instant::now() + PROBE_REFRESH);
            inner.mode.store(UNARY, Ordering::Release);
        }
        tracing::warn!(
            endpoint = %inner.endpoint,
            retry_in = ?PROBE_REFRESH,
            "interceptor service declares the Multiplex stream but refused it as UNIMPLEMENTED: falling back to unary calls; the refused emissions are sent again as unary calls"
        );
    }
}

impl Inner {
    fn mode(&self) -> u8 {
        self.mode.load(Ordering::Acquire)
    }

    /// Asks `Describe` whether the service declares the stream; `None`
    /// when it did not answer within [`PROBE_TIMEOUT`].
    async fn describe(&self) -> Option<bool> {
        let mut client = InterceptorClient::new(self.channel.clone());
        let mut request = tonic::Request::new(pb::DescribeRequest {});
        *request.metadata_mut() = (*self.metadata).clone();
        request.set_timeout(PROBE_TIMEOUT);
        match tokio::time::timeout(PROBE_TIMEOUT, client.describe(request)).await {
            Ok(Ok(manifest)) => Some(declares_multiplex(manifest.get_ref())),
            // A service without `Describe` serves no stream either.
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => Some(false),
            _ => None,
        }
    }
}

/// One probe: asks, settles the choice, wakes the emissions waiting.
async fn run_probe(inner: Arc<Inner>) {
    let answer = inner.describe().await;
    let lost_patience = {
        let mut probe = lock(&inner.probe);
        let now = Instant::now();
        let (mode, due) = match answer {
            Some(true) => (STREAM, None),
            Some(false) => (UNARY, Some(now + PROBE_REFRESH)),
            None => (UNKNOWN, Some(now + PROBE_RETRY)),
        };
        let lost_patience = probe.patient && answer.is_none();
        probe.patient = answer.is_some();
        probe.running_since = None;
        probe.due = due;
        inner.mode.store(mode, Ordering::Release);
        lost_patience
    };
    inner.settled.notify_waiters();
    if lost_patience {
        tracing::warn!(
            endpoint = %inner.endpoint,
            bound = ?PROBE_TIMEOUT,
            "interceptor service did not answer Describe in time: calls go unary, and none waits for Describe until it answers"
        );
    }
}

/// How long a call with `timeout` waits for a probe under way, from its
/// start: [`PROBE_WAIT`], at most a quarter of the call's timeout.
fn wait_of(timeout: Option<Duration>) -> Duration {
    timeout.map_or(PROBE_WAIT, |t| PROBE_WAIT.min(t / 4))
}

/// A lock whose holders cannot panic half-way.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_waits_at_most_a_quarter_of_its_timeout() {
        assert_eq!(wait_of(None), PROBE_WAIT);
        assert_eq!(wait_of(Some(Duration::from_secs(10))), PROBE_WAIT);
        assert_eq!(
            wait_of(Some(Duration::from_millis(400))),
            Duration::from_millis(100)
        );
        assert_eq!(wait_of(Some(Duration::ZERO)), Duration::ZERO);
    }

    #[tokio::test]
    async fn an_unreachable_service_is_unary_and_the_retry_waits_for_no_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let channel = tonic::transport::Endpoint::from_shared(endpoint.clone())
            .unwrap()
            .connect_lazy();
        let choice = Choice::new(channel, Arc::new(MetadataMap::new()), &endpoint);
        assert!(!choice.stream(Some(Duration::from_secs(8))).await);
        let waited = Instant::now();
        while lock(&choice.0.probe).running_since.is_some() {
            assert!(waited.elapsed() < Duration::from_secs(10), "never settled");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let probe = lock(&choice.0.probe);
        assert!(!probe.patient, "no emission waits for the next probe");
        assert!(probe.running_since.is_none());
        assert!(probe.due.is_some(), "retried later");
        drop(probe);
        // A refusal of a stream never chosen changes nothing.
        choice.refused();
        assert_eq!(choice.0.mode(), UNKNOWN);
    }
}
