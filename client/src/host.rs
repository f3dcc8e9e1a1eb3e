//! The host: built once from its configuration (interceptor chain, mode,
//! composition, identity provider, approval seam, record sink, limits),
//! then shared by every session of the agent.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use hookwire::{AgentContext, Composition, ContextLimits, InterceptionPoint, Mode};
use serde_json::{Map, Value};

use crate::approval::{
    ApprovalRedactor, ApprovalResolver, ApprovalSeam, DEFAULT_APPROVAL_DEADLINE,
};
use crate::binding::{
    Binding, BindingKind, DEFAULT_TIMEOUT, InterceptorBinding, Target, TimeoutSetting,
};
use crate::error::Error;
use crate::identity::IdentityProvider;
use crate::interceptor::Interceptor;
use crate::remote::RemoteInterceptor;
use crate::session::Session;
use crate::sink::{RecordLog, RecordSink};

/// The agent-side host. Cheap to clone; every clone shares one
/// configuration and one set of connections.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<HostInner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.inner;
        f.debug_struct("Host")
            .field("agent", &i.agent)
            .field("mode", &i.mode)
            .field("composition", &i.composition)
            .field("identity", &i.identity)
            .field(
                "bindings",
                &i.bindings
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("declaration", &i.declaration)
            .finish_non_exhaustive()
    }
}

pub(crate) struct HostInner {
    pub(crate) agent: Map<String, Value>,
    pub(crate) mode: Mode,
    pub(crate) composition: Composition,
    pub(crate) identity: IdentityProvider,
    pub(crate) limits: ContextLimits,
    pub(crate) approval: Option<ApprovalSeam>,
    pub(crate) sinks: Vec<Arc<dyn RecordSink>>,
    pub(crate) bindings: Vec<Arc<Binding>>,
    /// The chain bound at each point, in registration order, indexed by
    /// the point's position in [`InterceptionPoint::ALL`].
    pub(crate) chains: [Vec<Arc<Binding>>; 8],
    /// The declaration contract version the host was built from (§7.7.8);
    /// `None` for a host configured in code.
    pub(crate) declaration: Option<String>,
    /// A declared host's in-memory record buffer.
    pub(crate) record_buffer: Option<RecordLog>,
}

impl HostInner {
    pub(crate) fn chain(&self, point: InterceptionPoint) -> &[Arc<Binding>] {
        &self.chains[point_index(point)]
    }
}

/// The chain bound at each point, in registration order.
fn chains_of(bindings: &[Arc<Binding>]) -> [Vec<Arc<Binding>>; 8] {
    InterceptionPoint::ALL.map(|p| {
        bindings
            .iter()
            .filter(|b| b.is_bound_at(p))
            .cloned()
            .collect()
    })
}

fn point_index(point: InterceptionPoint) -> usize {
    InterceptionPoint::ALL
        .iter()
        .position(|p| *p == point)
        .unwrap_or_default()
}

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
        }
    }

    /// Opens a session with a fresh id.
    pub fn session(&self, session_id: impl Into<String>) -> Result<Session, Error> {
        self.session_with(session_id, Map::new())
    }

    /// Opens a session whose contexts all carry `members` (well-known
    /// optional fields such as `trace`, `tenant`, `actor`, and
    /// `extensions`, §4.5–§4.6).
    pub fn session_with(
        &self,
        session_id: impl Into<String>,
        members: Map<String, Value>,
    ) -> Result<Session, Error> {
        let id = session_id.into();
        if id.is_empty() {
            return Err(Error::EmptySessionId);
        }
        Ok(Session::new(self.inner.clone(), id, members))
    }

    /// The mode in effect.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The composition in effect (resolved).
    pub fn composition(&self) -> Composition {
        self.inner.composition.resolved()
    }

    /// The names of the interceptors bound at `point`, in order.
    pub fn chain(&self, point: InterceptionPoint) -> Vec<String> {
        self.inner
            .chain(point)
            .iter()
            .map(|b| b.name.clone())
            .collect()
    }

    /// Asks every remote interceptor service for its manifest, in
    /// registration order: what `hookwire check` prints, and how an operator
    /// verifies the chain before traffic flows.
    pub async fn describe_remotes(
        &self,
        timeout: Duration,
    ) -> Vec<(String, Result<hookwire::wire::Manifest, Error>)> {
        let calls = self.inner.bindings.iter().filter_map(|b| match &b.target {
            Target::Remote(r) => Some(async move {
                let result = r.describe(timeout).await.map_err(|reason| Error::Describe {
                    name: b.name.clone(),
                    reason,
                });
                (b.name.clone(), result)
            }),
            Target::Local(_) => None,
        });
        futures::future::join_all(calls).await
    }

    /// The declaration contract version this host was built from
    /// (`agent-hooks-declaration/1.0`), stamped on every record; `None` for
    /// a host configured in code. A declared host is sealed: nothing about
    /// its configuration can change after load (§7.7.7).
    pub fn declaration(&self) -> Option<&str> {
        self.inner.declaration.as_deref()
    }

    /// A declared host's in-memory record buffer: where its records go
    /// when no record sink was attached, bounded by the document's
    /// `records.max_buffered` (oldest dropped first). `None` for a host
    /// configured in code or one with sinks.
    pub fn record_buffer(&self) -> Option<&RecordLog> {
        self.inner.record_buffer.as_ref()
    }

    /// The bound of each interceptor bound at `point`, in chain order
    /// (`None`: unbounded).
    pub fn timeouts(&self, point: InterceptionPoint) -> Vec<Option<Duration>> {
        self.inner.chain(point).iter().map(|b| b.timeout).collect()
    }

    /// Asks every remote interceptor service's `grpc.health.v1` service for
    /// the status of `hookwire.v1.Interceptor`, in registration order, with
    /// each binding's metadata: `Ok("SERVING")` when all is well.
    pub async fn health_remotes(&self, timeout: Duration) -> Vec<(String, Result<String, Error>)> {
        let calls = self.inner.bindings.iter().filter_map(|b| match &b.target {
            Target::Remote(r) => Some(async move {
                let result = r.health(timeout).await.map_err(|reason| Error::Describe {
                    name: b.name.clone(),
                    reason: format!("health: {reason}"),
                });
                (b.name.clone(), result)
            }),
            Target::Local(_) => None,
        });
        futures::future::join_all(calls).await
    }

    /// The remote endpoints, by interceptor name.
    pub fn remote_endpoints(&self) -> Vec<(String, String)> {
        self.inner
            .bindings
            .iter()
            .filter_map(|b| match &b.target {
                Target::Remote(r) => Some((b.name.clone(), r.endpoint().to_owned())),
                Target::Local(_) => None,
            })
            .collect()
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

    /// Timeout for bindings that set none (default 5000 ms).
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
        let host = self.build()?;
        let Ok(mut inner) = Arc::try_unwrap(host.inner) else {
            return Err(Error::Describe {
                name: String::new(),
                reason: "host shared before it was connected".into(),
            });
        };
        let mut bindings = Vec::with_capacity(inner.bindings.len());
        for binding in std::mem::take(&mut inner.bindings) {
            let describe = match (&binding.target, &binding.points) {
                (Target::Remote(remote), None) => Some(remote.clone()),
                _ => None,
            };
            let Some(remote) = describe else {
                bindings.push(binding);
                continue;
            };
            let manifest =
                remote
                    .describe(describe_timeout)
                    .await
                    .map_err(|reason| Error::Describe {
                        name: binding.name.clone(),
                        reason,
                    })?;
            let points =
                (!manifest.points.is_empty()).then(|| manifest.points.into_iter().collect());
            bindings.push(Arc::new(Binding {
                name: binding.name.clone(),
                target: Target::Remote(remote),
                timeout: binding.timeout,
                points,
            }));
        }
        inner.chains = chains_of(&bindings);
        inner.bindings = bindings;
        Ok(Host {
            inner: Arc::new(inner),
        })
    }

    /// Validates the configuration and builds the host. Remote channels
    /// connect lazily: an unreachable service fails its calls closed, not
    /// the build.
    pub fn build(self) -> Result<Host, Error> {
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
            let target = match b.kind {
                BindingKind::Local(_) if b.tls.is_some() => {
                    return Err(Error::InvalidEndpoint {
                        name: b.name,
                        endpoint: String::new(),
                        reason: "TLS settings apply to remote bindings only".into(),
                    });
                }
                BindingKind::Local(_) if !b.metadata.is_empty() => {
                    return Err(Error::InvalidMetadata {
                        name: b.name,
                        key: b.metadata[0].0.clone(),
                        reason: "metadata applies to remote bindings only".into(),
                    });
                }
                BindingKind::Local(i) => Target::Local(i),
                BindingKind::Remote(url) => Target::Remote(RemoteInterceptor::new(
                    &b.name,
                    &url,
                    &b.metadata,
                    b.tls.as_ref(),
                )?),
            };
            bindings.push(Arc::new(Binding {
                name: b.name,
                target,
                timeout,
                points: b.points,
            }));
        }
        let chains = chains_of(&bindings);
        let mut agent = self.agent_extra;
        agent.insert("id".into(), Value::String(self.agent_id));
        agent.insert("framework".into(), Value::String(self.framework));
        let approval = self.resolver.map(|resolver| ApprovalSeam {
            resolver,
            redactor: self.redactor,
            deadline: self.approval_deadline,
        });
        Ok(Host {
            inner: Arc::new(HostInner {
                agent,
                mode: self.mode,
                composition: self.composition.resolved(),
                identity: self.identity,
                limits: self.limits,
                approval,
                sinks: self.sinks,
                bindings,
                chains,
                declaration: self.declaration,
                record_buffer: self.record_buffer,
            }),
        })
    }
}
