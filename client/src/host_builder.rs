//! Configuring a host in code: [`Host::builder`] and the [`HostBuilder`]
//! it returns, which checks the configuration and builds the shared
//! [`HostState`] behind a [`Host`]. `connect` also binds each remote
//! service where its `Describe` manifest says it has something to say.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use hookwire::{AgentContext, Composition, ContextLimits, Mode, RecordSink, is_namespace};
use serde_json::{Map, Value};

use crate::approval::{
    ApprovalRedactor, ApprovalResolver, ApprovalSeam, DEFAULT_APPROVAL_DEADLINE,
};
use crate::binding::{
    Binding, Callee, DEFAULT_TIMEOUT, InterceptorBinding, Location, MutationGrant, TimeoutSetting,
};
use crate::error::Error;
use crate::host::Host;
use crate::host_state::{HostParts, HostState};
use crate::identity::IdentityProvider;
use crate::interceptor::Interceptor;
use crate::metrics::HostMetrics;
use crate::remote::RemoteInterceptor;
use crate::sink::RecordLog;

impl Host {
    /// Starts configuring a host for the agent `agent_id` running on the
    /// framework `framework` (`^[a-z0-9_-]+$`, e.g. `hookwire`).
    pub fn builder(agent_id: impl Into<String>, framework: impl Into<String>) -> HostBuilder {
        HostBuilder {
            agent_id: agent_id.into(),
            framework: framework.into(),
            agent_extra: Map::new(),
            mode: Mode::Enforce,
            composition: Composition::default(),
            identity: IdentityProvider::default(),
            limits: ContextLimits::default(),
            default_timeout: DEFAULT_TIMEOUT,
            resolver: None,
            redactor: None,
            approval_deadline: Some(DEFAULT_APPROVAL_DEADLINE),
            declaration: None,
            record_buffer: None,
            sinks: Vec::new(),
            bindings: Vec::new(),
            metrics: None,
            trace_payloads: false,
        }
    }
}

/// Configures a [`Host`]; consumed by [`HostBuilder::build`].
#[must_use = "a builder does nothing until build() is called"]
pub struct HostBuilder {
    agent_id: String,
    framework: String,
    agent_extra: Map<String, Value>,
    mode: Mode,
    composition: Composition,
    identity: IdentityProvider,
    limits: ContextLimits,
    default_timeout: Duration,
    resolver: Option<Arc<dyn ApprovalResolver>>,
    redactor: Option<Arc<ApprovalRedactor>>,
    approval_deadline: Option<Duration>,
    sinks: Vec<Arc<dyn RecordSink>>,
    bindings: Vec<InterceptorBinding>,
    declaration: Option<String>,
    record_buffer: Option<RecordLog>,
    metrics: Option<HostMetrics>,
    trace_payloads: bool,
}

impl HostBuilder {
    /// `agent.name` and `agent.version` (§4.5).
    pub fn agent_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.agent_extra
            .insert("name".into(), Value::String(name.into()));
        self.agent_extra
            .insert("version".into(), Value::String(version.into()));
        self
    }

    /// `enforce` (default) or `evaluate_only` (§8).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The composition profile and knobs (default `sequential/first_deny`).
    pub fn composition(mut self, composition: Composition) -> Self {
        self.composition = composition;
        self
    }

    /// The identity provider (default `jcs-sha256`).
    pub fn identity_provider(mut self, provider: IdentityProvider) -> Self {
        self.identity = provider;
        self
    }

    /// Resource bounds on every context (§12.3).
    pub fn limits(mut self, limits: ContextLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Timeout for bindings that set none (default
    /// [`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT), 5000 ms).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Registers the approval resolver (§9).
    pub fn approval_resolver(mut self, resolver: impl ApprovalResolver) -> Self {
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// Registers an approval resolver shared with other owners.
    pub fn approval_resolver_shared(mut self, resolver: Arc<dyn ApprovalResolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Registers the approval redactor (§9): the context an approver sees.
    pub fn approval_redactor(
        mut self,
        redactor: impl Fn(&AgentContext) -> AgentContext + Send + Sync + 'static,
    ) -> Self {
        self.redactor = Some(Arc::new(redactor));
        self
    }

    /// Registers an approval redactor shared with other owners.
    pub fn approval_redactor_shared(mut self, redactor: Arc<ApprovalRedactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// How long the resolver may take (default 5 minutes).
    pub fn approval_deadline(mut self, deadline: Duration) -> Self {
        self.approval_deadline = Some(deadline);
        self
    }

    /// What the declaration loader sets and nothing else may: the contract
    /// version, an unbounded resolver deadline, the record buffer.
    pub(crate) fn declared(
        mut self,
        version: String,
        approval_deadline: Option<Duration>,
        record_buffer: Option<RecordLog>,
    ) -> Self {
        self.declaration = Some(version);
        self.approval_deadline = approval_deadline;
        if let Some(buffer) = &record_buffer {
            self.sinks.push(Arc::new(buffer.clone()));
        }
        self.record_buffer = record_buffer;
        self
    }

    /// Adds a record sink; every record goes to every sink.
    pub fn record_sink(mut self, sink: impl RecordSink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Counts this host's emissions, calls, approvals and sink deliveries
    /// in `metrics` (see [`HostMetrics::register`]).
    pub fn metrics(mut self, metrics: HostMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Lets each `hookwire.emission` span carry the whole context as its
    /// `hookwire.context` attribute (tool arguments, messages, ...).
    /// Default off: spans carry no payload, since they leave the process
    /// for a trace backend the agent's data may not be meant for.
    pub fn trace_payloads(mut self, enabled: bool) -> Self {
        self.trace_payloads = enabled;
        self
    }

    /// Appends an interceptor binding to the chain.
    pub fn bind(mut self, binding: InterceptorBinding) -> Self {
        self.bindings.push(binding);
        self
    }

    /// Appends an in-process interceptor bound at every point.
    pub fn interceptor(self, name: impl Into<String>, interceptor: impl Interceptor) -> Self {
        self.bind(InterceptorBinding::local(name, interceptor))
    }

    /// Appends a remote interceptor service bound at every point.
    pub fn remote(self, name: impl Into<String>, endpoint: impl Into<String>) -> Self {
        self.bind(InterceptorBinding::remote(name, endpoint))
    }

    /// Builds the host like [`HostBuilder::build`], then binds every remote
    /// service registered without an explicit [`InterceptorBinding::at`] at
    /// the points its `Describe` manifest declares (an empty list means all
    /// eight), so it is never called where it has nothing to say.
    ///
    /// Precedence: explicit `at(...)` wins; otherwise the manifest; a
    /// binding added with `build()` instead of `connect()` is bound at every
    /// point. A service that does not answer `Describe` within
    /// `describe_timeout` fails the build: the operator learns at startup,
    /// not at the first emission.
    pub async fn connect(self, describe_timeout: Duration) -> Result<Host, Error> {
        let mut state = self.into_state()?;
        state
            .narrow_to_manifests(describe_timeout, None, |_, b| b.points.is_none())
            .await
            .map_err(|f| Error::Describe {
                name: f.name,
                reason: f.reason,
            })?;
        Ok(Host::from_state(state))
    }

    /// Validates the configuration and builds the host. Remote channels
    /// connect lazily: an unreachable service fails its calls closed, not
    /// the build.
    pub fn build(self) -> Result<Host, Error> {
        Ok(Host::from_state(self.into_state()?))
    }

    /// Validates the configuration and builds the state a host shares,
    /// not yet shared: what `build` wraps and `connect` narrows first.
    pub(crate) fn into_state(self) -> Result<HostState, Error> {
        if self.agent_id.is_empty() {
            return Err(Error::InvalidAgent("agent id must be non-empty".into()));
        }
        let framework_ok = !self.framework.is_empty()
            && self
                .framework
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !framework_ok {
            return Err(Error::InvalidAgent(format!(
                "framework {:?} must match ^[a-z0-9_-]+$",
                self.framework
            )));
        }
        let instruments = self.metrics.as_ref().map(HostMetrics::instruments);
        let mut seen = HashSet::new();
        let mut bindings = Vec::with_capacity(self.bindings.len());
        for b in self.bindings {
            if b.name.is_empty() {
                return Err(Error::EmptyInterceptorName);
            }
            if !seen.insert(b.name.clone()) {
                return Err(Error::DuplicateInterceptor(b.name));
            }
            let timeout = match b.timeout {
                TimeoutSetting::Default => Some(self.default_timeout),
                TimeoutSetting::Bounded(t) => Some(t),
                TimeoutSetting::Unbounded => None,
            };
            if timeout.is_some_and(|t| t.is_zero()) {
                return Err(Error::ZeroTimeout(b.name));
            }
            let callee = match b.location {
                Location::InProcess(_) if b.tls.is_some() => {
                    return Err(Error::InvalidEndpoint {
                        name: b.name,
                        endpoint: String::new(),
                        reason: "TLS settings apply to remote bindings only".into(),
                    });
                }
                Location::InProcess(_) if b.misplaced.is_some() => {
                    return Err(Error::InvalidEndpoint {
                        name: b.name,
                        endpoint: String::new(),
                        reason: format!(
                            "{} apply to remote bindings only",
                            b.misplaced.unwrap_or_default()
                        ),
                    });
                }
                Location::InProcess(_) if !b.metadata.is_empty() => {
                    return Err(Error::InvalidMetadata {
                        name: b.name,
                        key: b.metadata[0].0.clone(),
                        reason: "metadata applies to remote bindings only".into(),
                    });
                }
                Location::InProcess(i) => Callee::InProcess(i),
                Location::Service(url) => Callee::Service(RemoteInterceptor::new(
                    &b.name,
                    &url,
                    &b.metadata,
                    b.tls.as_ref(),
                )?),
            };
            if let Some(bad) = b.visibility.iter().flatten().position(|m| !is_namespace(m)) {
                return Err(Error::InvalidGrant {
                    name: b.name,
                    reason: format!(
                        "visible member #{bad} is not a top-level member name (^[a-z][a-z0-9_]*$)"
                    ),
                });
            }
            let mutation =
                MutationGrant::of(b.mutation, b.effects).map_err(|reason| Error::InvalidGrant {
                    name: b.name.clone(),
                    reason,
                })?;
            bindings.push(Arc::new(Binding {
                metrics: instruments.as_ref().map(|m| m.binding(&b.name)),
                name: b.name,
                callee,
                timeout,
                points: b.points,
                visibility: b.visibility,
                callback: b.callback,
                mutation,
            }));
        }
        let mut agent = self.agent_extra;
        agent.insert("id".into(), Value::String(self.agent_id));
        agent.insert("framework".into(), Value::String(self.framework));
        let approval = self.resolver.map(|resolver| ApprovalSeam {
            resolver,
            redactor: self.redactor,
            deadline: self.approval_deadline,
        });
        Ok(HostState::new(HostParts {
            agent,
            mode: self.mode,
            composition: self.composition.resolved(),
            identity: self.identity,
            limits: self.limits,
            approval,
            sinks: self.sinks,
            bindings,
            declaration: self.declaration,
            record_buffer: self.record_buffer,
            metrics: instruments,
            trace_payloads: self.trace_payloads,
        }))
    }
}
