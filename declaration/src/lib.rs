//! hookwire-declaration: host declaration documents (AGENT-HOOKS-0.1
//! §7.7) read and validated into domain types, with no host in sight.
//!
//! A declaration configures a host from one JSON document — mode,
//! composition, identity provider, approval seam, posture, timeouts,
//! record buffering and the ordered interceptor bindings — instead of
//! code. This crate is the pure part of loading one: steps 1 to 10 of the
//! §7.7.6 pipeline, from the bytes of a file to a [`ResolvedDeclaration`]
//! checked against what a host says it has ([`Catalog`]). It opens no
//! connection and builds no interceptor.
//!
//! Building a host from the result (step 11, the kind resolvers, and the
//! sealed host) is `hookwire-client`'s, which depends on this crate and
//! re-exports its public items at `hookwire_client::declaration`: a host
//! author adds `hookwire-client` only.
//!
//! ```
//! use hookwire_declaration::{Document, RefusalClass};
//!
//! let refused = Document::from_json(r#"{"declaration": "agent-hooks-declaration/9.0"}"#);
//! assert_eq!(refused.unwrap_err().class, RefusalClass::VersionUnsupported);
//! ```
//!
//! | module | role |
//! | --- | --- |
//! | `refusal` | [`Refusal`], the crate's one error: a class (§7.7.6) and its findings |
//! | `limits`, `names` | the fixed versions and bounds; the name patterns a document and a registry share |
//! | `parse` | steps 1 and 2: the file read and the bounded, exact JSON parse |
//! | `document` | steps 3 to 7 as written; [`Document`], a document that passed them |
//! | `consistency` | the internal consistency rules, run on the surface a document states (step 7) and on the filled one (step 9) |
//! | `members` | reading members of the untyped document |
//! | `surface` | [`HostSurface`], what a host's code can do, and the surface a document states |
//! | `resolve` | steps 7 to 10 against a [`Catalog`] |
//! | `resolved` | [`ResolvedDeclaration`], the §7.7.3 resolved form |

mod consistency;
mod document;
mod limits;
mod members;
mod names;
mod parse;
mod refusal;
mod resolve;
mod resolved;
mod surface;

#[cfg(test)]
mod tests;

pub use document::Document;
pub use limits::{
    DECLARATION_VERSION, MAX_BINDINGS, MAX_DEPTH, MAX_DETAIL_CHARS, MAX_DOCUMENT_BYTES,
    MAX_ID_CHARS, MAX_KIND_CHARS, MAX_TIMEOUT_MS, SUPPORTED_DECLARATION_VERSIONS,
};
pub use names::{JCS_SHA256, is_custom_provider, is_kind, is_reference};
pub use refusal::{Finding, Refusal, RefusalClass};
pub use resolve::Catalog;
pub use resolved::{DEFAULT_INTERCEPTOR_MS, HostInfo, ResolvedBinding, ResolvedDeclaration};
pub use surface::{CAPABILITIES, FLOOR_POINTS, HostSurface, KnobSupport, Posture, ResolvedSurface};
