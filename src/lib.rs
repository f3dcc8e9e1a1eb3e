//! hookwire: agent hooks over the wire.
//!
//! An agent (the *host*) lets independent controls decide at the eight
//! interception points of AGENT-HOOKS-0.1; hookwire makes each control a gRPC
//! service. This crate is the shared ground of the host SDK
//! (`hookwire-client`) and the interceptor SDK (`hookwire-server`):
//!
//! - the domain types of the contract: [`InterceptionPoint`],
//!   [`AgentContext`], [`Verdict`], [`InterceptionRecord`], the composition
//!   configuration and the reserved [`HostError`] reasons;
//! - the pure functions both sides need: §5 verdict validation, §5.2
//!   transform paths, RFC 8785 canonical JSON and the `jcs-sha256` identity;
//! - the wire: the generated gRPC code behind [`pb`] and the one module,
//!   [`wire`], that converts between it and the domain types.

pub mod approval;
pub mod canonical;
pub mod context;
pub mod path;
pub mod point;
pub mod reason;
pub mod record;
pub mod verdict;
pub mod wire;

pub use context::{AgentContext, ContextLimits, InvalidContext, SPEC_VERSION};
pub use point::InterceptionPoint;
pub use reason::HostError;
pub use record::{
    Composition, InterceptionRecord, Mode, OnApproval, Profile, ResolvedBy, Synthesis,
    VerdictSummary,
};
pub use verdict::{Decision, InvalidVerdict, Severity, Transform, Verdict, Warning};

mod generated {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("hookwire.v1");
}

/// The generated protobuf messages and gRPC stubs of `proto/hookwire/v1`.
/// Public APIs of hookwire speak domain types; reach for `pb` only when
/// writing a transport of your own.
pub mod pb {
    pub use crate::generated::*;
}
