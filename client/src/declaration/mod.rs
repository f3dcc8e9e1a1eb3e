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
mod load;
mod parse;
mod refusal;
mod registry;
mod resolve;
mod surface;

#[cfg(test)]
mod tests;

pub use builder::{DeclarationBuilder, DeclaredBinding};
pub use grpc::{ALLOW_KIND, GRPC_KIND};
pub use load::{Declaration, DeclaredHostBuilder};
pub use refusal::{Finding, Refusal, RefusalClass};
pub use registry::{BindingContext, KindResolver, Registry};
pub use resolve::{DEFAULT_INTERCEPTOR_MS, HostInfo, ResolvedBinding, ResolvedDeclaration};
pub use surface::{CAPABILITIES, FLOOR_POINTS, HostSurface, KnobSupport, Posture, ResolvedSurface};

/// The declaration contract version this loader writes.
pub const DECLARATION_VERSION: &str = "agent-hooks-declaration/1.0";

/// Every `declaration` value this loader accepts (§7.7.2).
pub const SUPPORTED_DECLARATION_VERSIONS: &[&str] = &[DECLARATION_VERSION];

/// Largest document, in bytes of text.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// Deepest nesting (the root object is level 1).
pub const MAX_DEPTH: usize = 32;
/// Most bindings one document carries.
pub const MAX_BINDINGS: usize = 256;
/// Longest id or registered name.
pub const MAX_ID_CHARS: usize = 64;
/// Longest binding kind.
pub const MAX_KIND_CHARS: usize = 128;
/// Longest `exposure_bound` and refusal detail.
pub const MAX_DETAIL_CHARS: usize = 512;
/// Largest timeout, in milliseconds (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
