//! The three load paths and the declared host: a [`Declaration`] read from
//! a file, JSON text or a value (the builder's path serializes to text),
//! then resolved against a [`Registry`], its kind resolvers run (step 11)
//! and a sealed [`Host`] built from the result.
//!
//! Every path funnels into the same text checks, so the same document
//! yields the same refusal class, or the same resolved form and the same
//! records, whichever way it arrived (§7.7.7).

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Duration;

use hookwire::RecordSink;
use serde_json::Value;

use hookwire_declaration::{Document, Refusal, RefusalClass, ResolvedDeclaration};

use super::grpc::GRPC_KIND;
use super::kind::BindingContext;
use super::registry::Registry;
use crate::binding::{InterceptorBinding, TimeoutSetting};
use crate::error::Error;
use crate::host::Host;
use crate::host_builder::HostBuilder;
use crate::host_state::HostState;
use crate::sink::RecordLog;

/// A declaration document that passed steps 1 to 7 as written: parsed
/// under the bounds, of an accepted version, closed, well-typed and
/// consistent in what it states. Not yet checked against any host: see
/// [`Declaration::resolve`] and [`DeclaredHostBuilder::load`].
///
/// The checks are `hookwire-declaration`'s [`Document`]; this is that
/// document on the host's side, its refusals carried in the host's
/// [`Error`] (`Error::Declaration`).
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    document: Document,
}

impl Declaration {
    /// Step 1, then [`Declaration::from_json`]: a regular file of at most
    /// 1 MiB, strict UTF-8 without a byte-order mark.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, Error> {
        Ok(Document::from_path(path)?.into())
    }

    /// Steps 2 to 7 over JSON text.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        Ok(Document::from_json(text)?.into())
    }

    /// A value built in code: serialized, then [`Declaration::from_json`],
    /// so it meets exactly the checks a file meets. (Duplicate keys cannot
    /// be seen here: a `Value` already collapsed them.)
    pub fn from_value(value: &Value) -> Result<Self, Error> {
        Ok(Document::from_value(value)?.into())
    }

    /// The checked document.
    pub fn document(&self) -> &Document {
        &self.document
    }

    /// The document's contract version, e.g. `agent-hooks-declaration/1.0`.
    pub fn version(&self) -> &str {
        self.document.version()
    }

    /// The document's operator label, if any.
    pub fn id(&self) -> Option<&str> {
        self.document.id()
    }

    /// The document as validated (`$schema` included).
    pub fn to_value(&self) -> Value {
        self.document.to_value()
    }

    /// The `jcs-sha256` digest of the document as written, what §7.7.8
    /// asks a host to log at load ([`Document::digest`]).
    pub fn digest(&self) -> String {
        self.document.digest()
    }

    /// Steps 7 to 10: fills every default from the registry's surface and
    /// checks the result against the host's code and registered names.
    /// Runs no kind resolver.
    pub fn resolve(&self, registry: &Registry) -> Result<ResolvedDeclaration, Error> {
        Ok(self.document.resolve(registry)?)
    }
}

/// A document checked by `hookwire-declaration`, on the host's side.
impl From<Document> for Declaration {
    fn from(document: Document) -> Self {
        Self { document }
    }
}

impl Host {
    /// Starts a host whose configuration comes from a declaration document
    /// (§7.7). Only the agent's identity and where records go can be set
    /// here: everything else is the document's, and the host it builds is
    /// sealed — no setter reconfigures it.
    ///
    /// ```compile_fail
    /// # use hookwire_client::Host;
    /// // A declared host's mode comes from its document, never from code.
    /// let _ = Host::declared("agent", "hookwire").mode(hookwire::Mode::EvaluateOnly);
    /// ```
    pub fn declared(
        agent_id: impl Into<String>,
        framework: impl Into<String>,
    ) -> DeclaredHostBuilder {
        DeclaredHostBuilder {
            builder: Host::builder(agent_id, framework),
            has_sink: false,
        }
    }
}

/// Builds a sealed [`Host`] from a declaration; see [`Host::declared`].
#[must_use = "a builder does nothing until load() or connect() is called"]
pub struct DeclaredHostBuilder {
    builder: HostBuilder,
    has_sink: bool,
}

impl DeclaredHostBuilder {
    /// `agent.name` and `agent.version` (§4.5).
    pub fn agent_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.builder = self.builder.agent_name(name, version);
        self
    }

    /// Adds a record sink. Where records go is delivery, not configuration,
    /// so it stays the host's choice (§7.7.7). With no sink, records are
    /// kept in [`Host::record_buffer`], bounded by `records.max_buffered`.
    pub fn record_sink(mut self, sink: impl RecordSink) -> Self {
        self.builder = self.builder.record_sink(sink);
        self.has_sink = true;
        self
    }

    /// Counts the host's emissions, calls, approvals and sink deliveries
    /// in `metrics`. Like record sinks, metrics are delivery, not
    /// configuration, so they stay the host's choice.
    pub fn metrics(mut self, metrics: crate::metrics::HostMetrics) -> Self {
        self.builder = self.builder.metrics(metrics);
        self
    }

    /// Resolves `declaration` against `registry`, runs every binding's
    /// kind resolver in array order (step 11), and builds the sealed host.
    /// Bindings run at their `at` points, or at every surface point when
    /// the document states none.
    pub fn load(self, declaration: &Declaration, registry: &Registry) -> Result<Host, Error> {
        let resolved = declaration.resolve(registry)?;
        let bindings = run_resolvers(&resolved, registry)?;
        let state = self.into_state(&resolved, registry, bindings)?;
        Ok(built(declaration, &resolved, state))
    }

    /// [`Declaration::from_path`], then [`DeclaredHostBuilder::load`].
    pub fn load_path(self, path: impl AsRef<Path>, registry: &Registry) -> Result<Host, Error> {
        self.load(&Declaration::from_path(path)?, registry)
    }

    /// Like [`DeclaredHostBuilder::load`], but a `hookwire.grpc` binding
    /// whose document states no `at` is bound where its service's
    /// `Describe` manifest says it has something to say (within the
    /// surface; an empty manifest list means every surface point).
    ///
    /// Precedence: `at` in the document wins; then the manifest (this
    /// method only); then every surface point. Note that the manifest
    /// narrows what the resolved form says, so a point no binding covers
    /// any more denies `host_error:no_interceptor` in `enforce` mode. A
    /// service that does not answer within `describe_timeout` refuses the
    /// load as `binding_rejected`, before the host exists.
    pub async fn connect(
        self,
        declaration: &Declaration,
        registry: &Registry,
        describe_timeout: Duration,
    ) -> Result<Host, Error> {
        let resolved = declaration.resolve(registry)?;
        let bindings = run_resolvers(&resolved, registry)?;
        let mut state = self.into_state(&resolved, registry, bindings)?;
        let narrowable = |i: usize| {
            resolved
                .bindings
                .get(i)
                .is_some_and(|b| !b.at_stated && b.kind == GRPC_KIND)
        };
        state
            .narrow_to_manifests(
                describe_timeout,
                Some(&resolved.surface.interception_points),
                |i, _| narrowable(i),
            )
            .await
            .map_err(|f| {
                let (id, kind) = resolved
                    .bindings
                    .get(f.index)
                    .map_or((f.name.as_str(), ""), |b| (b.id.as_str(), b.kind.as_str()));
                Refusal::one(
                    RefusalClass::BindingRejected,
                    format!("/bindings/{}", f.index),
                    format!(
                        "binding {id:?} (kind {kind:?}) rejected: its service did not answer Describe"
                    ),
                )
            })?;
        Ok(built(declaration, &resolved, state))
    }

    /// The host's state as the resolved document configures it, with the
    /// bindings the kind resolvers built; not yet shared.
    fn into_state(
        self,
        resolved: &ResolvedDeclaration,
        registry: &Registry,
        bindings: Vec<InterceptorBinding>,
    ) -> Result<HostState, Error> {
        let mut builder = self
            .builder
            .mode(resolved.mode)
            .composition(resolved.composition)
            .identity_provider(registry.identity(resolved.identity_provider.as_deref()));
        if let Some(resolver) = registry.resolver(
            resolved.approval_resolver.as_deref(),
            resolved.approval_resolver_ms.map(Duration::from_millis),
        ) {
            builder = builder.approval_resolver_shared(resolver);
        }
        if let Some(redactor) = registry.redactor(resolved.approval_redactor.as_deref()) {
            builder = builder.approval_redactor_shared(redactor);
        }
        let buffer = (!self.has_sink).then(|| match resolved.max_buffered {
            Some(n) => RecordLog::bounded(usize::try_from(n).unwrap_or(usize::MAX)),
            None => RecordLog::new(),
        });
        let approval_deadline = resolved.approval_resolver_ms.map(Duration::from_millis);
        builder = builder.declared(resolved.declaration.clone(), approval_deadline, buffer);
        let names: Vec<String> = bindings.iter().map(|b| b.name.clone()).collect();
        for binding in bindings {
            builder = builder.bind(binding);
        }
        builder.into_state().map_err(|e| {
            // A resolver handed back something the host cannot build. Name
            // the binding and the rule; never the endpoint or a value.
            let (name, detail) = match &e {
                Error::InvalidEndpoint { name, .. } => {
                    (name.clone(), "an invalid endpoint".to_owned())
                }
                Error::InvalidMetadata { name, reason, .. } => (name.clone(), reason.clone()),
                Error::ZeroTimeout(name) => (name.clone(), "a zero timeout".to_owned()),
                _ => return e,
            };
            let i = names.iter().position(|n| *n == name).unwrap_or_default();
            let b = &resolved.bindings[i.min(resolved.bindings.len().saturating_sub(1))];
            Refusal::one(
                RefusalClass::BindingRejected,
                format!("/bindings/{i}"),
                format!("binding {:?} (kind {:?}) rejected: {detail}", b.id, b.kind),
            )
            .into()
        })
    }
}

/// The sealed host of a loaded declaration, logged once (§7.7.8) with the
/// document's version, id and `jcs-sha256` digest, so an operator can
/// match it to the document pushed, and the resolved form's digest (the
/// §7.7.7 equivalence oracle: equal for documents that load alike).
fn built(declaration: &Declaration, resolved: &ResolvedDeclaration, state: HostState) -> Host {
    tracing::info!(
        declaration = %resolved.declaration,
        id = resolved.id.as_deref().unwrap_or("-"),
        document_digest = %declaration.digest(),
        resolved_digest = %resolved.digest(),
        "host built from a declaration"
    );
    Host::from_state(state)
}

/// Step 11: every binding's kind resolver, in array order; the first
/// error or panic refuses the document and discards all work.
fn run_resolvers(
    resolved: &ResolvedDeclaration,
    registry: &Registry,
) -> Result<Vec<InterceptorBinding>, Refusal> {
    let mut out = Vec::with_capacity(resolved.bindings.len());
    for (i, b) in resolved.bindings.iter().enumerate() {
        let rejected = |detail: String| {
            Refusal::one(
                RefusalClass::BindingRejected,
                format!("/bindings/{i}"),
                format!("binding {:?} (kind {:?}) rejected: {detail}", b.id, b.kind),
            )
        };
        let Some(resolver) = registry.kind_resolver(&b.kind) else {
            return Err(Refusal::one(
                RefusalClass::KindUnknown,
                format!("/bindings/{i}/kind"),
                format!("no resolver is registered for kind {:?}", b.kind),
            ));
        };
        let ctx = BindingContext {
            id: &b.id,
            kind: &b.kind,
            at: &b.at,
            timeout: b.timeout(),
            host: resolved.host.as_ref(),
            declaration_version: &resolved.declaration,
        };
        let built = std::panic::catch_unwind(AssertUnwindSafe(|| resolver(&b.config, &ctx)));
        let mut binding = match built {
            Ok(Ok(binding)) => binding,
            Ok(Err(message)) => return Err(rejected(message)),
            Err(_) => return Err(rejected("the kind resolver panicked".into())),
        };
        binding.name = b.id.clone();
        binding.points = Some(b.at.clone());
        binding.timeout = match b.timeout() {
            Some(t) => TimeoutSetting::Bounded(t),
            None => TimeoutSetting::Unbounded,
        };
        out.push(binding);
    }
    Ok(out)
}
