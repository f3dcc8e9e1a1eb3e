//! The host registry (§7.7.5): what a host registers in code for its
//! declarations to name — its code surface, kind resolvers, custom
//! identity providers, approval resolvers and approval redactors — and
//! the [`Catalog`] that steps 9 and 10 of the load pipeline
//! (`hookwire-declaration`) look those names up in.
//!
//! A kind is a lookup key and nothing more: the loader never interprets it
//! as a path, a URL or a module. Each resolver (see `kind`) turns one
//! binding's `config` into an [`InterceptorBinding`] (in-process or
//! remote) or refuses it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hookwire::AgentContext;
use hookwire_declaration::{
    Catalog, HostSurface, MAX_TIMEOUT_MS, is_custom_provider, is_kind, is_reference,
};
use serde_json::Value;

use super::grpc::{ALLOW_KIND, GRPC_KIND, resolve_allow, resolve_grpc};
use super::kind::{BindingContext, KindResolver};
use crate::approval::{ApprovalRedactor, ApprovalResolver};
use crate::approval_stream::{StreamResolver, StreamResolverBuilder};
use crate::binding::InterceptorBinding;
use crate::error::Error;
use crate::identity::{IdentityProvider, JCS_SHA256};

/// The registry a declaration is resolved against.
#[derive(Clone)]
pub struct Registry {
    surface: HostSurface,
    conformance: bool,
    kinds: BTreeMap<String, Arc<KindResolver>>,
    identity_providers: BTreeMap<String, IdentityProvider>,
    approval_resolvers: BTreeMap<String, Arc<dyn ApprovalResolver>>,
    /// The resolvers registered with [`Registry::approval_stream`], by
    /// name, so that each document's `approval_resolver_ms` becomes the
    /// deadline the service is told (and the approvers count down).
    approval_streams: BTreeMap<String, StreamResolver>,
    approval_redactors: BTreeMap<String, Arc<ApprovalRedactor>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("surface", &self.surface)
            .field("kinds", &self.kinds.keys().collect::<Vec<_>>())
            .field(
                "identity_providers",
                &self.identity_providers.keys().collect::<Vec<_>>(),
            )
            .field(
                "approval_resolvers",
                &self.approval_resolvers.keys().collect::<Vec<_>>(),
            )
            .field(
                "approval_redactors",
                &self.approval_redactors.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// The kind segments no host may register (§7.7.5): the specification's
/// and the conformance kit's.
const RESERVED_SEGMENTS: [&str; 2] = ["agent_hooks", "ctk"];

impl Registry {
    /// An empty registry over hookwire's own surface
    /// ([`HostSurface::hookwire`]): no kinds, no custom names.
    pub fn new() -> Self {
        Self::with_surface(HostSurface::hookwire())
    }

    /// An empty registry over `surface`, for a host whose code does less
    /// (or more) than hookwire's defaults: an agent loop that never calls
    /// tools, a terminate posture, an incremental output path.
    pub fn with_surface(surface: HostSurface) -> Self {
        Self {
            surface,
            conformance: false,
            kinds: BTreeMap::new(),
            identity_providers: BTreeMap::new(),
            approval_resolvers: BTreeMap::new(),
            approval_streams: BTreeMap::new(),
            approval_redactors: BTreeMap::new(),
        }
    }

    /// A registry with hookwire's built-in kinds: `hookwire.grpc` (an
    /// interceptor service over gRPC) and `hookwire.allow` (the explicit
    /// allow-all passthrough §7 asks a host to opt into).
    pub fn standard() -> Self {
        Self::new().with_standard_kinds()
    }

    /// Adds the built-in kinds of [`Registry::standard`].
    pub fn with_standard_kinds(mut self) -> Self {
        self.kinds.insert(GRPC_KIND.into(), Arc::new(resolve_grpc));
        self.kinds
            .insert(ALLOW_KIND.into(), Arc::new(resolve_allow));
        self
    }

    /// Lets kinds under the conformance kit's reserved `ctk` segment be
    /// registered. Only a conformance harness calls this.
    pub fn for_conformance_kit(mut self) -> Self {
        self.conformance = true;
        self
    }

    /// The code surface declarations are resolved against.
    pub fn surface(&self) -> &HostSurface {
        &self.surface
    }

    /// The registered kinds, sorted.
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }

    /// Registers a kind resolver under `kind` (dot-separated lowercase
    /// segments, at least two; the first segment not `agent_hooks` or
    /// `ctk`).
    pub fn kind<F>(mut self, kind: &str, resolver: F) -> Result<Self, Error>
    where
        F: Fn(&Value, &BindingContext<'_>) -> Result<InterceptorBinding, String>
            + Send
            + Sync
            + 'static,
    {
        if !is_kind(kind) {
            return Err(Error::Registry(format!(
                "kind {kind:?} must match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$ (at most 128 characters)"
            )));
        }
        let head = kind.split('.').next().unwrap_or_default();
        if RESERVED_SEGMENTS.contains(&head) && !(self.conformance && head == "ctk") {
            return Err(Error::Registry(format!(
                "kind {kind:?} uses the reserved segment {head:?} (§7.7.5)"
            )));
        }
        if self.kinds.contains_key(kind) {
            return Err(Error::Registry(format!(
                "kind {kind:?} is registered twice"
            )));
        }
        self.kinds.insert(kind.to_owned(), Arc::new(resolver));
        Ok(self)
    }

    /// Registers a custom identity provider (§10.1 name rules, at most 64
    /// characters).
    pub fn identity_provider<F>(mut self, name: &str, f: F) -> Result<Self, Error>
    where
        F: Fn(&AgentContext) -> Result<String, String> + Send + Sync + 'static,
    {
        if !is_custom_provider(name) {
            return Err(Error::InvalidIdentityProviderName(name.to_owned()));
        }
        if self.identity_providers.contains_key(name) {
            return Err(Error::Registry(format!(
                "identity provider {name:?} is registered twice"
            )));
        }
        let provider = IdentityProvider::custom(name, f)?;
        self.identity_providers.insert(name.to_owned(), provider);
        Ok(self)
    }

    /// Registers an approval resolver under `name`
    /// (`^[a-z][a-z0-9_-]{0,63}$`).
    pub fn approval_resolver(
        self,
        name: &str,
        resolver: impl ApprovalResolver,
    ) -> Result<Self, Error> {
        self.approval_resolver_shared(name, Arc::new(resolver))
    }

    /// Registers an approval resolver shared with other owners.
    pub fn approval_resolver_shared(
        mut self,
        name: &str,
        resolver: Arc<dyn ApprovalResolver>,
    ) -> Result<Self, Error> {
        check_name(
            name,
            "approval resolver",
            self.approval_resolvers.contains_key(name),
        )?;
        self.approval_resolvers.insert(name.to_owned(), resolver);
        Ok(self)
    }

    /// Registers, under `name`, the approval resolver served by the
    /// `hookwire.v1.ApprovalService` at `endpoint`: a
    /// [`StreamResolver`] keeping one stream open
    /// to it (it starts connecting now, so call this inside a tokio
    /// runtime). A document selects it with
    /// `"approval": {"resolver": "<name>"}` and bounds each consultation
    /// with `timeouts.approval_resolver_ms`.
    ///
    /// The endpoint is given here, in code (or on the `hookwire` command
    /// line), not in the document: a declaration names a resolver by a
    /// registered name only and carries no configuration for it (§7.7.3),
    /// and the loader never reads `extensions`.
    ///
    /// Each request tells the service the document's
    /// `approval_resolver_ms` as its deadline (the most a document may
    /// declare when it declares `null`), so approvers see the host's real
    /// remaining time.
    pub fn approval_stream(self, name: &str, endpoint: &str) -> Result<Self, Error> {
        self.approval_stream_with(name, StreamResolver::builder(endpoint))
    }

    /// [`approval_stream`](Self::approval_stream) with the resolver's
    /// settings: TLS (the service's authority, a client certificate), the
    /// host's bearer token, more instances of the service tried in turn
    /// and the re-attach grace that lets pending requests move to them
    /// when an instance dies or shuts down, e.g.
    /// `StreamResolver::builder("https://approvals-1:50061").endpoints(["https://approvals-2:50061"]).reattach_grace(grace).tls(tls).bearer_token(token)`.
    pub fn approval_stream_with(
        mut self,
        name: &str,
        builder: StreamResolverBuilder,
    ) -> Result<Self, Error> {
        let resolver = builder
            .deadline(Duration::from_millis(MAX_TIMEOUT_MS))
            .build()?;
        self = self.approval_resolver(name, resolver.clone())?;
        self.approval_streams.insert(name.to_owned(), resolver);
        Ok(self)
    }

    /// Registers an approval redactor under `name`.
    pub fn approval_redactor<F>(mut self, name: &str, redactor: F) -> Result<Self, Error>
    where
        F: Fn(&AgentContext) -> AgentContext + Send + Sync + 'static,
    {
        check_name(
            name,
            "approval redactor",
            self.approval_redactors.contains_key(name),
        )?;
        self.approval_redactors
            .insert(name.to_owned(), Arc::new(redactor));
        Ok(self)
    }

    pub(crate) fn kind_resolver(&self, kind: &str) -> Option<&Arc<KindResolver>> {
        self.kinds.get(kind)
    }

    pub(crate) fn identity(&self, name: Option<&str>) -> IdentityProvider {
        match name {
            None => IdentityProvider::Null,
            Some(JCS_SHA256) => IdentityProvider::JcsSha256,
            // Checked by step 9; a name that vanished cannot happen with an
            // immutable registry borrowed for the whole load.
            Some(n) => self
                .identity_providers
                .get(n)
                .cloned()
                .unwrap_or(IdentityProvider::Null),
        }
    }

    /// The resolver named `name`; a stream resolver waits `deadline` (the
    /// document's `approval_resolver_ms`) per request.
    pub(crate) fn resolver(
        &self,
        name: Option<&str>,
        deadline: Option<Duration>,
    ) -> Option<Arc<dyn ApprovalResolver>> {
        let name = name?;
        if let Some(stream) = self.approval_streams.get(name) {
            let deadline = deadline.unwrap_or(Duration::from_millis(MAX_TIMEOUT_MS));
            return Some(Arc::new(stream.with_deadline(deadline)));
        }
        self.approval_resolvers.get(name).cloned()
    }

    pub(crate) fn redactor(&self, name: Option<&str>) -> Option<Arc<ApprovalRedactor>> {
        self.approval_redactors.get(name?).cloned()
    }
}

/// What steps 8 to 10 look up: the surface, and the names registered.
impl Catalog for Registry {
    fn surface(&self) -> &HostSurface {
        &self.surface
    }

    fn has_identity_provider(&self, name: &str) -> bool {
        self.identity_providers.contains_key(name)
    }

    fn has_approval_resolver(&self, name: &str) -> bool {
        self.approval_resolvers.contains_key(name)
    }

    fn has_approval_redactor(&self, name: &str) -> bool {
        self.approval_redactors.contains_key(name)
    }

    fn has_kind(&self, kind: &str) -> bool {
        self.kinds.contains_key(kind)
    }
}

fn check_name(name: &str, what: &str, taken: bool) -> Result<(), Error> {
    if !is_reference(name) {
        return Err(Error::Registry(format!(
            "{what} name {name:?} must match ^[a-z][a-z0-9_-]{{0,63}}$"
        )));
    }
    if taken {
        return Err(Error::Registry(format!(
            "{what} {name:?} is registered twice"
        )));
    }
    Ok(())
}
