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
use hookwire::path::PathSegment;
use hookwire::wire::PointRequest;
use hookwire::{
    AgentContext, DynInterceptor, HostError, InterceptionPoint, Interceptor, InterceptorResponse,
    Verdict,
};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::call_failure::CallFailure;
use crate::effect::{self, Effect, Effects};
use crate::metrics::BindingInstruments;
use crate::remote::{RemoteInterceptor, ServiceTarget, TlsConfig};
use crate::trace;

/// The §7 recommended default interceptor timeout, for bindings that set
/// none: a declaration's default `timeouts.interceptor_ms`
/// ([`DEFAULT_INTERCEPTOR_MS`](hookwire_declaration::DEFAULT_INTERCEPTOR_MS)),
/// so that a declared and a coded host agree.
pub const DEFAULT_TIMEOUT: Duration =
    Duration::from_millis(hookwire_declaration::DEFAULT_INTERCEPTOR_MS);

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
    /// The optional members it may see (`None`: the whole context).
    pub(crate) visibility: Option<BTreeSet<String>>,
    /// The target paths it may transform (`None`: not declared).
    pub(crate) mutation: Option<Vec<String>>,
    /// The effect kinds it may ask for (`None`: not declared).
    pub(crate) effects: Option<Vec<Effect>>,
    /// A remote-only setting given to an in-process binding (a build
    /// error naming it).
    pub(crate) misplaced: Option<&'static str>,
    /// Whether it sees the gateway's callback token (module `sealed`).
    pub(crate) callback: bool,
}

/// Where a registered interceptor runs: in the host's process, or as a
/// service at one or more endpoint URLs (connected when the host is
/// built).
pub(crate) enum Location {
    InProcess(Arc<dyn DynInterceptor>),
    Service(ServiceTarget),
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
            visibility: None,
            mutation: None,
            effects: None,
            misplaced: None,
            callback: false,
        }
    }

    /// An interceptor service at `endpoint`, e.g. `http://127.0.0.1:50051`.
    pub fn remote(name: impl Into<String>, endpoint: impl Into<String>) -> Self {
        Self::remote_replicas(name, [endpoint])
    }

    /// An interceptor service run as several replicas, one per endpoint:
    /// each call goes to one admitted replica, chosen by power of two
    /// choices on latency and outstanding calls; unhealthy replicas are
    /// ejected and re-admitted when they recover; with none admitted an
    /// emission is denied at once (`host_error:interceptor_failed`). A
    /// call is retried on another replica only when it provably never
    /// reached a handler. Replicas must be stateless or share their state:
    /// any of them may take any call. Metadata and TLS settings apply to
    /// every replica. Checked when the host is built: at least one
    /// endpoint, none listed twice, each a valid URL.
    pub fn remote_replicas<S: Into<String>>(
        name: impl Into<String>,
        endpoints: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            name: name.into(),
            location: Location::Service(ServiceTarget {
                endpoints: endpoints.into_iter().map(Into::into).collect(),
                resolve_every: None,
                streams: None,
            }),
            timeout: TimeoutSetting::Default,
            points: None,
            metadata: Vec::new(),
            tls: None,
            visibility: None,
            mutation: None,
            effects: None,
            misplaced: None,
            callback: false,
        }
    }

    /// Adds one more replica of a remote service at `endpoint` (see
    /// [`InterceptorBinding::remote_replicas`]); a build error on an
    /// in-process binding.
    pub fn replica(mut self, endpoint: impl Into<String>) -> Self {
        match &mut self.location {
            Location::Service(target) => target.endpoints.push(endpoint.into()),
            Location::InProcess(_) => self.misplaced = Some("replicas"),
        }
        self
    }

    /// Re-resolves the endpoints' host names every `period` (and before
    /// the first call), with one replica per address found: a service
    /// behind a DNS name whose addresses change as it scales. A failed
    /// resolution keeps the replicas it had. An `https://` replica is
    /// verified against the name. A build error on an in-process binding
    /// or with a zero period.
    pub fn resolve_every(mut self, period: Duration) -> Self {
        match &mut self.location {
            Location::Service(target) => target.resolve_every = Some(period),
            Location::InProcess(_) => self.misplaced = Some("DNS resolution"),
        }
        self
    }

    /// Keeps `n` `Multiplex` streams to each replica of a service that
    /// declares the stream (default: one per core of the host, at most 4).
    /// A session's emissions always take the same stream, so the service
    /// sees them in order whatever `n` is; more streams spread the stream
    /// work of a busy host over more cores. A build error on an in-process
    /// binding or with `n` = 0.
    pub fn multiplex_streams(mut self, n: usize) -> Self {
        match &mut self.location {
            Location::Service(target) => target.streams = Some(n),
            Location::InProcess(_) => self.misplaced = Some("Multiplex streams"),
        }
        self
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

    /// Shows the interceptor only these optional top-level members of each
    /// context (e.g. `actor`, `tenant`, `messages`, `extensions`); the
    /// others are withheld: absent from what it receives, in-process or
    /// over gRPC, and named per binding under the record's
    /// `extensions.hookwire.visibility`. The required core (§4.1) and the
    /// point's conditional members (§4.2, the target's among them) are
    /// always sent, so what it receives is a valid §4 context. Default:
    /// the whole context. Names are checked when the host is built
    /// (`^[a-z][a-z0-9_]*$`).
    pub fn visible<S: Into<String>>(mut self, members: impl IntoIterator<Item = S>) -> Self {
        self.visibility = Some(members.into_iter().map(Into::into).collect());
        self
    }

    /// Lets the interceptor see the callback token a model gateway puts
    /// in its contexts (`extensions.hookwire.callback`), for an
    /// interceptor whose own model calls go back through the gateway (an
    /// LLM judge): the token lets those calls skip the chain, so no other
    /// binding, no approval service and no approver ever receives it.
    /// Default: withheld.
    pub fn receives_callback(mut self) -> Self {
        self.callback = true;
        self
    }

    /// Lets the interceptor transform only these target paths and what
    /// lies below them (`$target.content` grants `$target.content` and
    /// `$target.content.text`, not `$target.contents`; `$target` grants
    /// every path); an empty grant makes it read-only. A transform outside
    /// its grant takes its slot as `host_error:verdict_invalid`, and the
    /// record lists the binding under `extensions.hookwire.mutation_refused`.
    /// Paths are checked when the host is built.
    ///
    /// A binding that declares no grant may transform any target path
    /// (§5.2) and ask for every [`Effect`]; one that declares a grant holds
    /// exactly what it declares, so transform paths alone grant no effect
    /// (add [`InterceptorBinding::may_effect`]).
    pub fn may_transform<S: Into<String>>(mut self, paths: impl IntoIterator<Item = S>) -> Self {
        self.mutation = Some(paths.into_iter().map(Into::into).collect());
        self
    }

    /// Lets the interceptor ask for only these effect kinds in the
    /// `hookwire` namespace of its response extensions (routing a tool
    /// call, model-parameter overrides, upstream headers, the credential,
    /// the upstream body); an empty grant lets it ask for none. An answer
    /// that asks for a kind outside its grant takes its slot as
    /// `host_error:verdict_invalid`, in either mode, and the record lists
    /// the binding under `extensions.hookwire.mutation_refused` and its
    /// asks under `extensions.hookwire.effects`. A granted ask acts only in
    /// `enforce` mode, when the binding's own verdict permitted and the
    /// action runs (see [`Emission::response_extensions`](crate::Emission::response_extensions)).
    ///
    /// Like [`InterceptorBinding::may_transform`], a declared grant is the
    /// whole grant: effect kinds alone make the binding read-only for
    /// transforms unless it is also given paths.
    pub fn may_effect(mut self, kinds: impl IntoIterator<Item = Effect>) -> Self {
        self.effects = Some(kinds.into_iter().collect());
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
    /// The optional members it may see (`None`: the whole context).
    pub(crate) visibility: Option<BTreeSet<String>>,
    /// Whether it sees the gateway's callback token (module `sealed`).
    pub(crate) callback: bool,
    /// The target paths it may transform and the effects it may ask for
    /// (`None`: any path and every effect).
    pub(crate) mutation: Option<MutationGrant>,
    /// Call counters and latency, when the host has metrics.
    pub(crate) metrics: Option<BindingInstruments>,
}

/// What a binding that declared a grant may change, parsed once at
/// build: target paths and effect kinds, each empty unless declared.
pub(crate) struct MutationGrant {
    /// The paths as configured, for findings.
    written: Vec<String>,
    /// Their segments; a transform path is granted when one is its prefix.
    parsed: Vec<Vec<PathSegment>>,
    /// The effect kinds it may ask for.
    effects: Effects,
}

impl MutationGrant {
    /// The grant of a binding that declared `paths` and `effects` (`None`
    /// for each it did not declare); `Ok(None)` when it declared neither.
    /// Parses every path (rooted at `$target`, §5.2 grammar); the error
    /// names the rule and the position, never the path.
    pub(crate) fn of(
        paths: Option<Vec<String>>,
        effects: Option<Vec<Effect>>,
    ) -> Result<Option<Self>, String> {
        if paths.is_none() && effects.is_none() {
            return Ok(None);
        }
        let paths = paths.unwrap_or_default();
        let parsed = paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                hookwire::path::parse(p).map_err(|e| format!("transform grant #{i}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(Self {
            written: paths,
            parsed,
            effects: Effects::of(effects.unwrap_or_default()),
        }))
    }

    /// Whether a transform at `path` stays within the grant. A path that
    /// does not parse is not judged here: composition refuses it with its
    /// own §5.2 reason.
    fn permits(&self, path: &str) -> bool {
        match hookwire::path::parse(path) {
            Ok(segments) => self.parsed.iter().any(|g| segments.starts_with(g)),
            Err(_) => true,
        }
    }

    fn describe(&self) -> String {
        if self.written.is_empty() {
            "none".to_owned()
        } else {
            self.written.join(", ")
        }
    }
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
    /// The effect kinds its extensions ask for.
    pub(crate) asked: Effects,
    /// The verdict was a transform, or its extensions asked for an
    /// effect, outside the binding's mutation grant.
    pub(crate) outside_grant: bool,
    /// The effect kinds refused at the grant.
    pub(crate) refused: Effects,
}

impl Binding {
    pub(crate) fn is_bound_at(&self, point: InterceptionPoint) -> bool {
        self.points.as_ref().is_none_or(|p| p.contains(&point))
    }

    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.callee, Callee::Service(_))
    }

    /// Whether the binding sees the whole of `ctx`, so a remote one can
    /// share the emission's encoded request.
    pub(crate) fn sees_whole(&self, ctx: &AgentContext) -> bool {
        self.visibility.is_none() && !crate::sealed::carries_callback(ctx)
    }

    /// The copy of `ctx` this binding may see and the members withheld
    /// from it (a callback token it is not granted is removed, unnamed; a
    /// granted one is replaced by the token derived for this binding);
    /// `None` when it sees the whole context.
    pub(crate) fn view(&self, ctx: &AgentContext) -> Option<(AgentContext, Vec<String>)> {
        let carries = crate::sealed::carries_callback(ctx);
        let seal = |view: &mut AgentContext| {
            if self.callback {
                crate::sealed::derive_in_place(view, &self.name);
            } else {
                crate::sealed::strip_callback(view);
            }
        };
        match &self.visibility {
            None if !carries => None,
            None if self.callback => {
                Some((crate::sealed::for_binding(ctx, &self.name), Vec::new()))
            }
            None => Some((crate::sealed::without_callback(ctx), Vec::new())),
            Some(granted) => {
                let (mut view, withheld) = ctx.restricted(|member| granted.contains(member));
                if carries {
                    seal(&mut view);
                }
                Some((view, withheld))
            }
        }
    }

    /// Sends `ctx` (pre-encoded as `request` for a remote) and returns the
    /// validated answer, inside a `hookwire.dispatch` span that records
    /// the outcome. Never fails: failures become slot denies (§6.3).
    pub(crate) async fn dispatch(
        &self,
        ctx: &AgentContext,
        request: Option<Result<Box<PointRequest>, HostError>>,
    ) -> Dispatched {
        let endpoint = match &self.callee {
            Callee::Service(remote) => Some(remote.endpoint()),
            Callee::InProcess(_) => None,
        };
        let span = trace::dispatch_span(&self.name, endpoint);
        // Boxed: the call's state machine (balancer, transport) is
        // kilobytes, which the span wrapper would otherwise copy.
        let d = Box::pin(self.call(ctx, request))
            .instrument(span.clone())
            .await;
        trace::record_dispatch(&span, &d.verdict);
        d
    }

    /// [`Binding::dispatch`] without its span.
    async fn call(
        &self,
        ctx: &AgentContext,
        request: Option<Result<Box<PointRequest>, HostError>>,
    ) -> Dispatched {
        let started = self.metrics.as_ref().map(|_| std::time::Instant::now());
        let outcome = match &self.callee {
            Callee::InProcess(interceptor) => self.call_local(interceptor.as_ref(), ctx).await,
            Callee::Service(remote) => match request {
                Some(Ok(req)) => remote.call(req, self.timeout, self.metrics.as_ref()).await,
                Some(Err(e)) => return self.failed(e, "the context could not be encoded"),
                None => return self.failed(HostError::InterceptorFailed, "no request"),
            },
        };
        if let (Some(m), Some(t)) = (&self.metrics, started) {
            m.called(&outcome, t.elapsed());
        }
        match outcome {
            Ok(response) => self.granted(ctx, response),
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

    /// A response that arrived, held to the binding's mutation grant: a
    /// transform outside its paths, or extensions asking for an effect
    /// outside its kinds, take its slot as `host_error:verdict_invalid`.
    fn granted(&self, ctx: &AgentContext, response: InterceptorResponse) -> Dispatched {
        let asked = if response.extensions.is_empty() {
            Effects::NONE
        } else {
            effect::asked(&response.extensions)
        };
        let Some(grant) = &self.mutation else {
            return Dispatched {
                verdict: response.verdict,
                extensions: response.extensions,
                asked,
                outside_grant: false,
                refused: Effects::NONE,
            };
        };
        let refused = effect::outside_grant(Some(grant.effects), asked);
        // Where the point forbids transforms, §4.3's own reason
        // (`transform_target_forbidden`) says it better.
        if let Some(t) = &response.verdict.transform
            && ctx.point().permits_transform()
            && !grant.permits(&t.path)
        {
            let detail = format!(
                "transform path outside the binding's mutation grant ({}); a granted path covers itself and what lies below it",
                grant.describe()
            );
            return Dispatched {
                outside_grant: true,
                refused,
                ..self.failed(HostError::VerdictInvalid, &detail)
            };
        }
        if !refused.is_empty() {
            let detail = format!(
                "response extensions ask for effects outside the binding's grant ({}); granted effects: {}",
                refused.describe(),
                grant.effects.describe()
            );
            return Dispatched {
                outside_grant: true,
                refused,
                ..self.failed(HostError::VerdictInvalid, &detail)
            };
        }
        Dispatched {
            verdict: response.verdict,
            extensions: response.extensions,
            asked,
            outside_grant: false,
            refused: Effects::NONE,
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
            asked: Effects::NONE,
            outside_grant: false,
            refused: Effects::NONE,
        }
    }
}
