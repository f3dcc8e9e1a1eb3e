//! Host declaration documents (AGENT-HOOKS-0.1 §7.7): a host configured
//! from one JSON document — mode, composition, identity provider, approval
//! seam, posture, timeouts, record buffering, and the ordered interceptor
//! bindings — instead of code.
//!
//! ```no_run
//! # fn main() -> Result<(), hookwire_client::Error> {
//! use hookwire_client::Host;
//! use hookwire_client::declaration::{Declaration, Registry};
//!
//! let registry = Registry::standard(); // hookwire.grpc, hookwire.allow
//! let declaration = Declaration::from_path("host.declaration.json")?;
//! let host = Host::declared("billing-agent", "hookwire").load(&declaration, &registry)?;
//! assert_eq!(host.declaration(), Some("agent-hooks-declaration/1.0"));
//! # Ok(()) }
//! ```
//!
//! Loading is the §7.7.6 pipeline; each step runs only when the one before
//! passed, so a document yields one refusal class ([`RefusalClass`]):
//!
//! | step | where | class |
//! | --- | --- | --- |
//! | 1 read | [`Declaration::from_path`] | `unreadable` |
//! | 2 parse | [`Declaration::from_json`] | `malformed` |
//! | 3–7 as written | [`Declaration::from_json`] | `version_unsupported` … `inconsistent` |
//! | 7–10 against the host | [`Declaration::resolve`] ([`Registry`], a [`Catalog`]) | `inconsistent` … `kind_unknown` |
//! | 11 kind resolvers | [`DeclaredHostBuilder::load`] | `binding_rejected` |
//!
//! Steps 1 to 10 are pure and live in `hookwire-declaration` (a
//! [`Document`], resolved against a [`Catalog`]); this module holds what
//! needs the host: the [`Registry`] (which is the catalog), the built-in
//! kinds, the kind resolvers of step 11 and the sealed host they build.
//!
//! A host built from a declaration is sealed (its builder has no setter
//! for anything the document decides) and stamps
//! `declaration: "agent-hooks-declaration/1.0"` on every record.

mod builder;
mod grpc;
mod kind;
mod load;
mod registry;

#[cfg(test)]
mod tests;

pub use builder::{DeclarationBuilder, DeclaredBinding};
pub use grpc::{ALLOW_KIND, GRPC_KIND};
/// The pure part of loading (steps 1 to 10), `hookwire-declaration`'s,
/// re-exported so that a host author needs this crate only.
pub use hookwire_declaration::{
    CAPABILITIES, Catalog, DECLARATION_VERSION, DEFAULT_INTERCEPTOR_MS, Document, FLOOR_POINTS,
    Finding, HostInfo, HostSurface, KnobSupport, MAX_BINDINGS, MAX_DEPTH, MAX_DETAIL_CHARS,
    MAX_DOCUMENT_BYTES, MAX_ID_CHARS, MAX_KIND_CHARS, MAX_TIMEOUT_MS, Posture, Refusal,
    RefusalClass, ResolvedBinding, ResolvedDeclaration, ResolvedSurface,
    SUPPORTED_DECLARATION_VERSIONS,
};
pub use kind::{BindingContext, KindResolver};
pub use load::{Declaration, DeclaredHostBuilder};
pub use registry::Registry;
