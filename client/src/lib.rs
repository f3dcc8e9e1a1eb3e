//! hookwire-client: the agent-side host of AGENT-HOOKS-0.1 over gRPC.
//!
//! A Rust agent builds one [`Host`] with its chain of interceptors — remote
//! services reached over gRPC and in-process controls — then opens a
//! [`Session`] per run and emits each interception point through it. The
//! host dispatches every emission to the chain, composes the verdicts under
//! the configured profile (§7), consults the approval seam (§9), applies
//! the combined verdict (allow, deny, or a transform written back to the
//! target the action then consumes), and hands one payload-free
//! [`InterceptionRecord`](hookwire::InterceptionRecord) per emission to the
//! record sinks.
//!
//! It fails closed: an unreachable, slow, crashing or lying interceptor is
//! the spec's `host_error:*` deny, never a silent allow and never a panic.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hookwire_client::Error> {
//! use hookwire_client::{Host, InputRole, RecordLog, ToolCall};
//! use serde_json::json;
//!
//! let records = RecordLog::new();
//! let host = Host::builder("billing-agent", "hookwire")
//!     .remote("policy", "http://127.0.0.1:50051")
//!     .record_sink(records.clone())
//!     .build()?;
//! let session = host.session("run-1")?;
//! session.start(["bash"]).await?;
//! // Each turn begins with its input (§3.1 rule 3); the tool and model
//! // calls of the turn, and its output, are refused without one.
//! session.input(json!("list the files"), InputRole::User).await?;
//! let call = ToolCall::new("c1", "bash", json!({"cmd": "ls"}));
//! let decision = session.pre_tool_call(&call).await?;
//! if decision.proceeds() {
//!     let args = decision.target(); // run the tool with these
//! #   let _ = args;
//! }
//! # Ok(()) }
//! ```

//! ## Layout
//!
//! Dependencies point one way, from the handles an agent holds down to the
//! state they share:
//!
//! | module | role |
//! | --- | --- |
//! | `host_builder` | [`Host::builder`] and [`HostBuilder`]: configuration checked, state built |
//! | `host` | [`Host`]: opens sessions, reports the configuration and the remotes |
//! | `session` | [`Session`]: the typed per-point API, the lifecycle, the §3.1 order, the gated `output` and the sequence of one run; [`SessionBuilder`] for per-session mode and composition |
//! | `streaming` | streamed model output: buffered [`assemble`], or incremental mediation ([`IncrementalOutput`], §12.1) |
//! | `pipeline` | one emission: bounds, identities, composition, approval, record |
//! | `emission` | [`Emission`]: what one emission decided |
//! | `host_state` | the configuration and chains every session shares |
//! | `binding`, `remote`, `interceptor` | the chain's members and how each is called |
//! | `sealed` | the gateway's callback token: only the bindings granted it see it, never the approval seam |
//! | `call_failure` | how one call to a binding failed, in-process or remote: what dispatch, the transports and the metrics share |
//! | `compose` | the pure composition state machine (§7) |
//! | `effect` | effect-bearing response extensions: the [`Effect`] kinds, the grant, the pure table of which act |
//! | `approval`, `approval_stream` | the approval seam (§9), the resolver trait and the [`ApprovalAnswer`] it returns; a resolver over one gRPC stream |
//! | `labels` | [`LabelLedger`]: result labels persisted with their data and resurfaced as `source_labels` (§5.4), for any loop that maps a conversation onto the points |
//! | [`declaration`] | hosts configured from a declaration document (§7.7): the registry and the kind resolvers, and the sealed host; reading and resolving the document is `hookwire-declaration`'s, re-exported there |
//! | `identity`, `payload`, `sink`, `error` | identity providers, point payloads, record sinks ([`RecordSink`] is `hookwire`'s), errors |
//! | `trace` | the emission and dispatch spans, W3C trace context sent and continued |
//! | `metrics` | [`HostMetrics`]: the host's Prometheus series, in a registry of the caller's |
//!
//! Every public item is reachable by one path: the crate root, or
//! [`declaration`] for the declaration loader.
//!
//! The reference agent loop around a model and tools (`Agent`, `Tools`,
//! `Turn`) is the crate `hookwire-agent`, above this one and not
//! re-exported here: a host author who drives the points from their own
//! loop needs this crate only.

mod approval;
mod approval_stream;
mod binding;
mod call_failure;
mod compose;
pub mod declaration;
mod effect;
mod emission;
mod error;
mod host;
mod host_builder;
mod host_state;
mod identity;
mod interceptor;
mod labels;
mod metrics;
mod payload;
mod pipeline;
mod remote;
mod sealed;
mod session;
mod sink;
mod streaming;
mod trace;

pub use approval::{ApprovalAnswer, ApprovalRedactor, ApprovalResolver, DEFAULT_APPROVAL_DEADLINE};
pub use approval_stream::{SeenEvent, StreamResolver, StreamResolverBuilder};
pub use binding::{DEFAULT_TIMEOUT, InterceptorBinding};
pub use effect::Effect;
pub use emission::Emission;
pub use error::{Error, StreamFailure};
/// The record sink trait, `hookwire`'s: every sink a host takes.
pub use hookwire::RecordSink;
pub use host::Host;
pub use host_builder::HostBuilder;
pub use identity::{IdentityFn, IdentityProvider, JCS_SHA256};
pub use interceptor::{
    BoxError, BoxFuture, HookResponse, Interceptor, InterceptorFn, async_trait, interceptor_fn,
};
pub use labels::{LabelLedger, MAX_LABELLED_RESULTS, MAX_LABELS, ResultLabels};
pub use metrics::{HostMetrics, POLICY_REASON_LABEL};
pub use payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
pub use remote::{ClientIdentity, Described, HEALTH_UNIMPLEMENTED, TlsConfig, Transport};
pub use sealed::callback_token_for;
pub use session::{MAX_OPEN_CALLS, OutputDecision, Session, SessionBuilder, Withheld};
pub use sink::{AsyncSink, DEFAULT_SINK_QUEUE, Overflow, RecordLog};
pub use streaming::{
    Assembly, ChunkStream, INCREMENTAL, IncrementalOutput, Released, STREAM_INCOMPLETE, StreamEnd,
    StreamEvent, assemble,
};

/// The Prometheus client [`HostMetrics`] registers in, re-exported so that
/// callers build their registry with the same version.
pub use prometheus_client;
