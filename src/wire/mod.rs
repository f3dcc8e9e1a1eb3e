//! Conversions between the domain types and the generated wire messages:
//! the only place where `pb` and the domain meet.
//!
//! - [`json`]: JSON text for `JsonValue` fields, parsed exactly (integers
//!   beyond the 64-bit range are refused, never rounded).
//! - [`context`]: [`AgentContext`] ⇄ the eight per-point request messages.
//! - [`verdict`]: [`Verdict`] / [`InterceptorResponse`] ⇄ `pb::Verdict` /
//!   `pb::InterceptorResponse`, and the manifest.
//! - [`approval`]: the §9 approval request and resolution ⇄ the messages of
//!   the approval service's streams.
//!
//! Direction matters for failure: a context that cannot be encoded or
//! decoded is `host_error:context_invalid`; a verdict that cannot be
//! decoded is `host_error:verdict_invalid`.

pub mod approval;
pub mod context;
pub mod json;
pub mod verdict;

pub use approval::{InvalidApprovalRequest, StreamRequest, StreamResolution};
pub use context::{PointRequest, context_from_request, context_to_request};
pub use json::InvalidJson;
pub use verdict::{
    InterceptorResponse, InvalidManifest, Manifest, RESPONSE_EXTENSIONS_MAX_BYTES, UnspecifiedPoint,
};

#[cfg(doc)]
use crate::{AgentContext, Verdict};
