//! Interceptor bindings: a named interceptor (in-process or remote), its
//! timeout, and the points it is bound at; plus the dispatch of one context
//! to one binding with every failure mapped to its §6.3 slot deny.
//!
//! An in-process interceptor and a remote service answer through the same
//! funnel: a response that arrived (decoded and validated by the wire, or
//! validated here with the same [`InterceptorResponse::validate`]) or a
//! [`CallFailure`], which becomes the reserved deny of the binding's slot.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use hookwire::wire::PointRequest;
use hookwire::{
    AgentContext, DynInterceptor, HostError, InterceptionPoint, Interceptor, InterceptorResponse,
    Verdict,
};
use serde_json::{Map, Value};

use crate::metrics::BindingInstruments;
use crate::remote::{CallFailure, RemoteInterceptor, TlsConfig};

/// The §7 recommended default interceptor timeout, for bindings that set
/// none; a declaration's default `timeouts.interceptor_ms` is the same
/// value.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// How to register one interceptor with a host: what it is, what it is
/// called, how long it may take, and where it is bound.
pub struct InterceptorBinding {
    pub(crate) name: String,
    pub(crate) location: Location,
    pub(crate) timeout: TimeoutSetting,
    pub(crate) points: Option<BTreeSet<InterceptionPoint>>,
    /// Static gRPC metadata for every call (remote bindings only).
    pub(crate) metadata: Vec<(String, String)>,
    /// TLS settings for an `https://` endpoint (remote bindings only).
    pub(crate) tls: Option<TlsConfig>,
}

/// Where a registered interceptor runs: in the host's process, or as a
/// service at an endpoint URL (connected when the host is built).
pub(crate) enum Location {
    InProcess(Arc<dyn DynInterceptor>),
    Service(String),
}

/// A binding's bound: the host default, an explicit one, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeoutSetting {
    Default,
    Bounded(Duration),
    Unbounded,
}

impl InterceptorBinding {
    /// An in-process interceptor: any policy, the same type a server
    /// serves over gRPC. To keep a handle on it, pass an `Arc` of it (an
    /// `Arc` of an interceptor is an interceptor).
    pub fn local(name: impl Into<String>, interceptor: impl Interceptor) -> Self {
        Self {
            name: name.into(),
            location: Location::InProcess(Arc::new(interceptor)),
            timeout: TimeoutSetting::Default,
            points: None,
            metadata: Vec::new(),
            tls: None,
        }
    }

    /// An interceptor service at `endpoint`, e.g. `http://127.0.0.1:50051`.
    pub fn remote(name: impl Into<String>, endpoint: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            location: Location::Service(endpoint.into()),
            timeout: TimeoutSetting::Default,
            points: None,
            metadata: Vec::new(),
            tls: None,
        }
    }

    /// Bounds each call (default 5000 ms); a breach is
    /// `host_error:interceptor_timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = TimeoutSetting::Bounded(timeout);
        self
    }

    /// Lets each call run as long as it takes (a declaration's
    /// `timeout_ms: null`). A hung interceptor then hangs its emission:
    /// prefer a bound.
    pub fn unbounded(mut self) -> Self {
        self.timeout = TimeoutSetting::Unbounded;
        self
    }

    /// Sends the gRPC metadata `key: value` on every call to a remote
    /// service (an `authorization` token, a tenant header). The value is
    /// marked sensitive so it never appears in debug output. Checked when
    /// the host is built: the key must be a lowercase ASCII header name
    /// not reserved by gRPC and not ending in `-bin`, the value visible
    /// ASCII; on an in-process binding it is a build error.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.push((key.into(), value.into()));
        self
    }

    /// Verifies the service's certificate with `tls` instead of the public
    /// roots (remote `https://` bindings only; a build error otherwise).
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Binds the interceptor at these points only (default: all eight).
    pub fn at(mut self, points: impl IntoIterator<Item = InterceptionPoint>) -> Self {
        self.points = Some(points.into_iter().collect());
        self
    }
}

/// A built binding, shared by every emission.
pub(crate) struct Binding {
    pub(crate) name: String,
    pub(crate) callee: Callee,
    /// `None`: unbounded.
    pub(crate) timeout: Option<Duration>,
    pub(crate) points: Option<BTreeSet<InterceptionPoint>>,
    /// Call counters and latency, when the host has metrics.
    pub(crate) metrics: Option<BindingInstruments>,
}

/// What a built binding calls: the interceptor itself, or the client of
/// its service.
pub(crate) enum Callee {
    InProcess(Arc<dyn DynInterceptor>),
    Service(RemoteInterceptor),
}

/// One binding's answer: a verdict that passed validation, or the reserved
/// deny that takes its slot.
pub(crate) struct Dispatched {
    pub(crate) verdict: Verdict,
    pub(crate) extensions: Map<String, Value>,
}

impl Binding {
    pub(crate) fn is_bound_at(&self, point: InterceptionPoint) -> bool {
        self.points.as_ref().is_none_or(|p| p.contains(&point))
    }

    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.callee, Callee::Service(_))
    }

    /// Sends `ctx` (pre-encoded as `request` for a remote) and returns the
    /// validated answer. Never fails: failures become slot denies (§6.3).
    pub(crate) async fn dispatch(
        &self,
        ctx: &AgentContext,
        request: Option<Result<PointRequest, HostError>>,
    ) -> Dispatched {
        let started = self.metrics.as_ref().map(|_| std::time::Instant::now());
        let outcome = match &self.callee {
            Callee::InProcess(interceptor) => self.call_local(interceptor.as_ref(), ctx).await,
            Callee::Service(remote) => match request {
                Some(Ok(req)) => remote.call(req, self.timeout).await,
                Some(Err(e)) => return self.failed(e, "the context could not be encoded"),
                None => return self.failed(HostError::InterceptorFailed, "no request"),
            },
        };
        if let (Some(m), Some(t)) = (&self.metrics, started) {
            m.called(&outcome, t.elapsed());
        }
        match outcome {
            Ok(response) => Dispatched {
                verdict: response.verdict,
                extensions: response.extensions,
            },
            Err(failure) => {
                let detail = match &failure {
                    CallFailure::Failed(kind) => format!("call failed ({kind})"),
                    CallFailure::TimedOut => match self.timeout {
                        Some(t) => format!("no verdict within {} ms", t.as_millis()),
                        None => "deadline exceeded".to_owned(),
                    },
                    CallFailure::Invalid(e) => e.to_string(),
                };
                self.failed(failure.host_error(), &detail)
            }
        }
    }

    /// Calls an in-process interceptor under the binding's timeout, with
    /// panics caught, and validates its response the way the wire
    /// validates a remote one.
    async fn call_local(
        &self,
        interceptor: &dyn DynInterceptor,
        ctx: &AgentContext,
    ) -> Result<InterceptorResponse, CallFailure> {
        let guarded = AssertUnwindSafe(interceptor.decide(ctx)).catch_unwind();
        let outcome = match self.timeout {
            Some(t) => match tokio::time::timeout(t, guarded).await {
                Err(_) => return Err(CallFailure::TimedOut),
                Ok(outcome) => outcome,
            },
            None => guarded.await,
        };
        match outcome {
            Err(_panic) => Err(CallFailure::Failed("panic".into())),
            Ok(Err(error)) => {
                // The record says only `call failed (error)`; what the error
                // says is for the operator's log.
                tracing::debug!(interceptor = %self.name, %error, "in-process interceptor failed");
                Err(CallFailure::Failed("error".into()))
            }
            Ok(Ok(response)) => match response.validate() {
                Ok(()) => Ok(response),
                Err(invalid) => Err(CallFailure::Invalid(invalid)),
            },
        }
    }

    /// The reserved deny for a failure, with a message naming the binding
    /// and the failure kind only (§6.3, §14).
    fn failed(&self, error: HostError, detail: &str) -> Dispatched {
        Dispatched {
            verdict: Verdict::host_error(error)
                .with_message(format!("interceptor {:?}: {detail}", self.name)),
            extensions: Map::new(),
        }
    }
}
