//! hookwire-agent: the reference agent loop over a `hookwire-client`
//! session, what a Rust agent embeds to honour every host obligation of
//! AGENT-HOOKS-0.1 around its model and its tools.
//!
//! It sits above the host crate: a host author who drives the points from
//! an agent loop of their own needs only `hookwire-client`, and that crate
//! does not re-export this one (it could not: this crate depends on it).
//! The loop is the reference the demo and the conformance run use, and a
//! worked example of the obligations.
//!
//! An [`Agent`] drives one [`Session`](hookwire_client::Session) through the eight points. It brackets
//! the session with `agent_startup`/`agent_shutdown` (§6.1a), lets a turn
//! begin only when `input` permits, wraps every model call in
//! `pre_model_call`/`post_model_call` and every tool call in
//! `pre_tool_call`/`post_tool_call` (several tool calls of one response run
//! concurrently, each in its own bracket, §12.2), hands every action the
//! verdicted target (transforms applied, §4.3), and buffers the final answer
//! until `output` permits it (§12.1a). A streaming model's answer is
//! assembled first, or mediated segment by segment under §12.1's exception
//! ([`Agent::incremental_output`]). Result labels are persisted with the
//! data they label and resurfaced as `source_labels` on later hooks (§5.4,
//! through `hookwire-client`'s [`LabelLedger`](hookwire_client::LabelLedger)). A blocked tool call is surfaced to the
//! model as a tool error and the loop goes on (the `continue` posture of
//! §6.2); a deny after an action discards its result (§6.1).
//!
//! Each [`Agent::run_turn`] returns a typed [`Turn`]: completed with the
//! released output, blocked with the record of the blocking emission, or
//! failed (model error, iteration bound).

//!
//! The pieces: `model` (what the agent talks to), `tools` (what it may
//! run), `routing` (a verdict sending a call to a named executor), `turn`
//! (what a turn reports) and `session_loop` (the [`Agent`] driving one
//! session through them).

mod model;
mod routing;
mod session_loop;
mod tools;
mod turn;

#[cfg(test)]
mod tests;

pub use model::{Model, ModelFn, model_fn};
pub use routing::RoutedCall;
pub use session_loop::{Agent, DEFAULT_MAX_MODEL_CALLS};
pub use tools::{Tool, ToolError, ToolFn, Toolbox, Tools, tool_fn};
pub use turn::{ToolCallOutcome, Turn, TurnError, TurnOutcome};
