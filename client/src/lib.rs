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
//! use hookwire_client::{Host, RecordLog, ToolCall};
//! use serde_json::json;
//!
//! let records = RecordLog::new();
//! let host = Host::builder("billing-agent", "hookwire")
//!     .remote("policy", "http://127.0.0.1:50051")
//!     .record_sink(records.clone())
//!     .build()?;
//! let session = host.session("run-1")?;
//! session.start(["bash"]).await?;
//! let call = ToolCall::new("c1", "bash", json!({"cmd": "ls"}));
//! let decision = session.pre_tool_call(&call).await?;
//! if decision.proceeds() {
//!     let args = decision.target(); // run the tool with these
//! #   let _ = args;
//! }
//! # Ok(()) }
//! ```

pub mod agent;
pub mod approval;
pub mod approval_stream;
mod binding;
pub mod compose;
pub mod declaration;
mod emission;
mod emit;
mod error;
mod host;
pub mod identity;
mod interceptor;
mod payload;
mod remote;
mod session;
pub mod sink;

pub use agent::{
    Agent, Model, ModelFn, Tool, ToolCallOutcome, ToolError, ToolFn, Toolbox, Tools, Turn,
    TurnError, TurnOutcome, model_fn, tool_fn,
};
pub use approval::{ApprovalRedactor, ApprovalResolver, DEFAULT_APPROVAL_DEADLINE};
pub use approval_stream::{SeenEvent, StreamFailure, StreamResolver, StreamResolverBuilder};
pub use binding::{DEFAULT_TIMEOUT, InterceptorBinding, TlsConfig};
pub use emission::Emission;
pub use error::Error;
pub use host::{Host, HostBuilder};
pub use identity::IdentityProvider;
pub use interceptor::{BoxError, BoxFuture, Interceptor, InterceptorFn, interceptor_fn};
pub use payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
pub use session::Session;
pub use sink::{RecordLog, RecordSink};
