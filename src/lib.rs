//! hookwire: agent hooks over the wire.
//!
//! An agent (the *host*) lets independent controls decide at the eight
//! interception points of AGENT-HOOKS-0.1; hookwire makes each control a gRPC
//! service or an in-process policy. This crate is the shared ground of the
//! host SDK (`hookwire-client`) and the interceptor SDK (`hookwire-server`):
//!
//! - the domain types of the contract, all at the crate root:
//!   [`InterceptionPoint`], [`AgentContext`], [`Verdict`],
//!   [`InterceptorResponse`], [`Manifest`], [`InterceptionRecord`] and the
//!   [`RecordSink`] that takes it, the [`Composition`] configuration and the
//!   reserved [`HostError`] reasons;
//! - [`Interceptor`], the one trait a policy implements, whether a host
//!   binds it in-process or a server puts it on the wire, with its routing
//!   ([`dispatch`]) and object-safe form ([`DynInterceptor`]);
//! - the pure functions both sides need: §5 verdict and §5.5 response
//!   validation, §5.2 transform paths ([`path`]), RFC 8785 canonical JSON
//!   and the `jcs-sha256` identity ([`canonical`]), exact JSON text
//!   ([`json`]), the §9 approval exchange ([`approval`]), the W3C
//!   `traceparent` header both sides propagate ([`trace_context`]), and
//!   the jittered [`backoff`] the clients of a service wait by, the
//!   histogram [`buckets`] every series shares, the words a failed
//!   bind is reported in ([`listen`]), and the one rule by which an edge
//!   tells an agent a verdict's message ([`notice_message`]);
//! - the wire: the generated gRPC code behind [`pb`] and the one module,
//!   [`wire`], that converts between it and the domain types.
//!
//! Domain modules never import [`wire`] or [`pb`]; the wire depends on the
//! domain, never the other way round.

pub mod approval;
pub mod backoff;
pub mod buckets;
pub mod canonical;
mod composition;
mod context;
mod interceptor;
pub mod json;
pub mod listen;
mod manifest;
mod notice;
pub mod path;
mod point;
mod reason;
mod record;
mod response;
mod sink;
pub mod trace_context;
mod verdict;
pub mod wire;

pub use composition::{Composition, Mode, OnApproval, Profile, Synthesis, UnknownProfile};
pub use context::{AgentContext, ContextLimits, InvalidContext, SPEC_VERSION, is_namespace};
pub use interceptor::{
    BoxError, BoxFuture, DynInterceptor, HookResponse, Interceptor, InterceptorFn, dispatch,
    interceptor_fn,
};
pub use manifest::{Manifest, manifest};
pub use notice::{NOTICE_MESSAGE_MAX_BYTES, notice_message};
pub use point::{InterceptionPoint, UnknownInterceptionPoint};
pub use reason::{HOST_ERROR_PREFIX, HostError};
pub use record::{
    FACTS_NAMESPACE, InterceptionRecord, RECORD_MESSAGE_MAX_BYTES, ResolvedBy, VerdictSummary,
    payload_free, truncate_message,
};
pub use response::{
    APPROVAL_MAX_BYTES, InterceptorResponse, LABEL_MAX_BYTES, MESSAGE_MAX_BYTES, REASON_MAX_BYTES,
    RESULT_LABELS_MAX, TRANSFORM_PATH_MAX_BYTES, WARNINGS_MAX, WIRE_RESPONSE_MAX_BYTES,
};
pub use sink::RecordSink;
pub use verdict::{
    Decision, EVIDENCE_MAX_BYTES, InvalidVerdict, RESPONSE_EXTENSIONS_MAX_BYTES, Severity,
    Transform, Verdict, Warning,
};

/// The `#[async_trait]` attribute implementations of [`Interceptor`]
/// need, re-exported so that authors need no extra dependency.
pub use async_trait::async_trait;

/// The code `tonic-prost-build` generates from `proto/hookwire/v1`,
/// checked in under `src/pb/` so that no build compiles a protobuf
/// compiler; `cargo run -p hookwire-codegen` rewrites it, and that crate's
/// test fails while it is stale.
mod generated {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    include!("pb/hookwire.v1.rs");
}

/// The generated protobuf messages and gRPC stubs of `proto/hookwire/v1`.
/// Public APIs of hookwire speak domain types; reach for `pb` only when
/// writing a transport of your own.
pub mod pb {
    pub use crate::generated::*;

    /// The encoded `FileDescriptorSet` of `proto/hookwire/v1` (both
    /// services and every message), for gRPC server reflection: with it a
    /// server answers `grpcurl list` and `grpcurl describe`.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("pb/hookwire_descriptor.bin");
}
