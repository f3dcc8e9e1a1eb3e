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
//! | 1 read | [`Declaration::from_path`] (`parse`) | `unreadable` |
//! | 2 parse | `parse` | `malformed` |
//! | 3–7 as written | [`Declaration::from_json`] (`document`) | `version_unsupported` … `inconsistent` |
//! | 7–10 against the host | [`Declaration::resolve`] (`resolve`, [`Registry`]) | `inconsistent` … `kind_unknown` |
//! | 11 kind resolvers | [`DeclaredHostBuilder::load`] | `binding_rejected` |
//!
//! A host built from a declaration is sealed (its builder has no setter
//! for anything the document decides) and stamps
//! `declaration: "agent-hooks-declaration/1.0"` on every record.

mod builder;
mod document;
mod grpc;
mod kind;
mod limits;
mod load;
mod members;
mod names;
mod parse;
mod registry;
mod resolve;
mod resolved;
mod surface;

#[cfg(test)]
mod tests;

pub use crate::refusal::{Finding, Refusal, RefusalClass};
pub use builder::{DeclarationBuilder, DeclaredBinding};
pub use grpc::{ALLOW_KIND, GRPC_KIND};
pub use kind::{BindingContext, KindResolver};
pub use limits::{
    DECLARATION_VERSION, MAX_BINDINGS, MAX_DEPTH, MAX_DETAIL_CHARS, MAX_DOCUMENT_BYTES,
    MAX_ID_CHARS, MAX_KIND_CHARS, MAX_TIMEOUT_MS, SUPPORTED_DECLARATION_VERSIONS,
};
pub use load::{Declaration, DeclaredHostBuilder};
pub use registry::Registry;
pub use resolved::{DEFAULT_INTERCEPTOR_MS, HostInfo, ResolvedBinding, ResolvedDeclaration};
pub use surface::{CAPABILITIES, FLOOR_POINTS, HostSurface, KnobSupport, Posture, ResolvedSurface};
