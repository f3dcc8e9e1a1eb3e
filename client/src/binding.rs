//! Interceptor bindings: a named interceptor (in-process or remote), its
//! timeout, and the points it is bound at; plus the dispatch of one context
//! to one binding with every failure mapped to its §6.3 slot deny.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use hookwire::canonical::canonical_len;
use hookwire::context::is_namespace;
use hookwire::wire::{InterceptorResponse, PointRequest, RESPONSE_EXTENSIONS_MAX_BYTES};
use hookwire::{AgentContext, HostError, InterceptionPoint, InvalidVerdict, Verdict};
use serde_json::{Map, Value};

use crate::interceptor::Interceptor;
use crate::remote::{CallFailure, RemoteInterceptor};

/// The §7 recommended default interceptor timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// How to register one interceptor with a host: what it is, what it is
/// called, how long it may take, and where it is bound.
pub struct InterceptorBinding {
    pub(crate) name: String,
    pub(crate) kind: BindingKind,
    pub(crate) timeout: TimeoutSetting,
    pub(crate) points: Option<BTreeSet<InterceptionPoint>>,
    /// Static gRPC metadata for every call (remote bindings only).
    pub(crate) metadata: Vec<(String, String)>,
    /// TLS settings for an `https://` endpoint (remote bindings only).
    pub(crate) tls: Option<TlsConfig>,
}

/// How a host verifies an interceptor service reached over `https://`.
/// Without one, an `https://` endpoint is verified against the public Web
/// PKI roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM certificate(s) of the authority that signs the service's
    /// certificate; replaces the public roots when set.
    pub ca_pem: Option<Vec<u8>>,
    /// The name the service's certificate must carry, when it differs from
    /// the endpoint's host (e.g. an IP endpoint with a named certificate).
    pub domain_name: Option<String>,
}

pub(crate) enum BindingKind {
    Local(Arc<dyn Interceptor>),
    Remote(String),
}

/// A binding's bound: the host default, an explicit one, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeoutSetting {
    Default,
    Bounded(Duration),
    Unbounded,
}

impl InterceptorBinding {
    /// An in-process interceptor.
    pub fn local(name: impl Into<String>, interceptor: impl Interceptor) -> Self {
        Self::local_shared(name, Arc::new(interceptor))
    }

    /// An in-process interceptor shared with other owners.
    pub fn local_shared(name: impl Into<String>, interceptor: Arc<dyn Interceptor>) -> Self {
        Self {
            name: name.into(),
            kind: BindingKind::Local(interceptor),
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
            kind: BindingKind::Remote(endpoint.into()),
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
    pub(crate) target: Target,
    /// `None`: unbounded.
    pub(crate) timeout: Option<Duration>,
    pub(crate) points: Option<BTreeSet<InterceptionPoint>>,
}

pub(crate) enum Target {
    Local(Arc<dyn Interceptor>),
    Remote(RemoteInterceptor),
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
        matches!(self.target, Target::Remote(_))
    }

    /// Sends `ctx` (pre-encoded as `request` for a remote) and validates the
    /// answer. Never fails: failures become slot denies (§6.3).
    pub(crate) async fn dispatch(
        &self,
        ctx: &AgentContext,
        request: Option<Result<PointRequest, HostError>>,
    ) -> Dispatched {
        let outcome = match &self.target {
            Target::Local(interceptor) => self.call_local(interceptor.as_ref(), ctx).await,
            Target::Remote(remote) => match request {
                Some(Ok(req)) => remote.call(req, self.timeout).await,
                Some(Err(e)) => return self.failed(e, "the context could not be encoded"),
                None => return self.failed(HostError::InterceptorFailed, "no request"),
            },
        };
        match outcome.and_then(|r| check_response(r).map_err(CallFailure::Invalid)) {
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

    async fn call_local(
        &self,
        interceptor: &dyn Interceptor,
        ctx: &AgentContext,
    ) -> Result<InterceptorResponse, CallFailure> {
        let guarded = AssertUnwindSafe(interceptor.intercept(ctx)).catch_unwind();
        let outcome = match self.timeout {
            Some(t) => match tokio::time::timeout(t, guarded).await {
                Err(_) => return Err(CallFailure::TimedOut),
                Ok(outcome) => outcome,
            },
            None => guarded.await,
        };
        match outcome {
            Err(_panic) => Err(CallFailure::Failed("panic".into())),
            Ok(Err(_error)) => Err(CallFailure::Failed("error".into())),
            Ok(Ok(response)) => Ok(response),
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

/// §5 validation of the verdict and the §5.5 rules on response extensions.
fn check_response(r: InterceptorResponse) -> Result<InterceptorResponse, InvalidVerdict> {
    r.verdict.validate()?;
    if !r.extensions.is_empty() {
        if !r.extensions.keys().all(|k| is_namespace(k)) {
            return Err(InvalidVerdict::Domain(
                "response extension namespace does not match ^[a-z][a-z0-9_]*$".into(),
            ));
        }
        let size = canonical_len(&Value::Object(r.extensions.clone()))
            .map_err(|e| InvalidVerdict::Domain(e.to_string()))?;
        if size > RESPONSE_EXTENSIONS_MAX_BYTES {
            return Err(InvalidVerdict::Domain(format!(
                "response extensions exceed {RESPONSE_EXTENSIONS_MAX_BYTES} canonical bytes"
            )));
        }
    }
    Ok(r)
}
