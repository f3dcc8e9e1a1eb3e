//! Conversions between the domain types and the generated wire messages:
//! the only place where `pb` and the domain meet. Everything here is a
//! `From` / `TryFrom` impl between a domain type and its `pb` message (or,
//! for contexts, a pair of functions over [`PointRequest`]), with a small
//! `Invalid…` error for what the wire can carry and the domain refuses.
//!
//! - `context`: [`AgentContext`] ⇄ the eight per-point request messages
//!   ([`context_to_request`], [`context_from_request`]).
//! - `verdict`: [`Verdict`] ⇄ `pb::Verdict`.
//! - `response`: [`InterceptorResponse`] ⇄ `pb::InterceptorResponse`
//!   and [`Manifest`] ⇄ `pb::Manifest`.
//! - `point`: [`InterceptionPoint`] ⇄ `pb::InterceptionPoint`.
//! - [`multiplex`]: a [`PointRequest`] as one message of the `Multiplex`
//!   stream (a hookwire extension), the manifest's declaration of it, and
//!   the bound on emissions in flight that host and service share
//!   ([`multiplex::MAX_IN_FLIGHT`]).
//! - `approval`: the §9 approval request and resolution on a stream
//!   ([`StreamRequest`], [`StreamResolution`]) ⇄ the messages of the
//!   approval service.
//!
//! JSON text inside messages goes through [`crate::json`], exactly.
//! Direction matters for failure: a context that cannot be encoded or
//! decoded is `host_error:context_invalid`; a response that cannot be
//! decoded, or decodes to one that fails
//! [`InterceptorResponse::validate`], is `host_error:verdict_invalid`.
//!
//! Domain modules never import this one: dependencies point from the wire
//! to the domain.

mod approval;
mod context;
pub mod multiplex;
mod point;
mod response;
mod verdict;

pub use approval::InvalidApprovalRequest;
pub use context::{PointRequest, context_from_request, context_to_request};
pub use multiplex::{MANIFEST_NAMESPACE, MultiplexBody, declare_multiplex, declares_multiplex};
pub use point::UnspecifiedPoint;
pub use response::InvalidManifest;

#[cfg(doc)]
use crate::approval::{StreamRequest, StreamResolution};
#[cfg(doc)]
use crate::context::AgentContext;
#[cfg(doc)]
use crate::manifest::Manifest;
#[cfg(doc)]
use crate::point::InterceptionPoint;
#[cfg(doc)]
use crate::response::InterceptorResponse;
#[cfg(doc)]
use crate::verdict::Verdict;
