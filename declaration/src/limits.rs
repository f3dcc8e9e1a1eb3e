//! The declaration loader's fixed numbers: the contract versions it reads
//! and writes, and the bounds every document is held to.

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
/// Longest `exposure_bound` and refusal detail (the refusal's own bound).
pub use crate::refusal::MAX_DETAIL_CHARS;
/// Largest timeout, in milliseconds (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
