//! Sessions: one run or conversation of the agent (§4.1 `session.id`).
//!
//! A session assigns each emission a `sequence` that starts at 0 on
//! `agent_startup` and strictly increases, atomically, however many
//! emissions run at once (§12.2). Emission takes `&self`, so parallel tool
//! calls and concurrent turns share one session. The lifecycle of §3.1 and
//! §6.1a is enforced: startup first, shutdown last (it waits for in-flight
//! emissions), nothing but shutdown after a denied startup. So is the
//! order of §3.1 rules 3–5 and §6.2 (module `order`), or the emission is
//! refused with [`Error::OutOfOrder`](crate::Error::OutOfOrder):
//! `pre_model_call`, `pre_tool_call` and `output` need a turn that a
//! permitting `input` opened (rule 3; the turn's `output` closes it,
//! [`Session::end_turn`] closes one that ends without an output), and a
//! `post_*` follows its own permitted `pre_*` (rules 4–5; a session holds
//! at most [`MAX_OPEN_CALLS`] open calls per pair and forgets the oldest
//! past that). There is no opt-out on the typed methods: even a host
//! that declares a subset of the points keeps `input` (§3.2), so every
//! turn has one. A host that sees no turns at all (an MCP proxy, which
//! sees only tool calls) opens its session
//! [`SessionBuilder::tool_calls_only`]: its `pre_tool_call` needs no turn,
//! its pairs are checked as everywhere, and the turn points are refused.
//! [`Session::emit`] is the raw path that books without refusing, kept
//! for the tools that replay contexts they did not build (`hookwire
//! emit`, the fuzz targets, the tests), not for an edge.
//!
//! **Extra members.** Each typed method has a `*_with` variant that adds
//! members to the point's context (a `request_id` pairing a model call,
//! `extensions`), admitted with the same §3.1 enforcement; the point's own
//! members win a clash. **State queries** ([`Session::is_started`],
//! [`Session::startup_denial`], [`Session::is_closed`],
//! [`Session::is_turn_open`], [`Session::open_tool_call`]) let a caller
//! that maps another protocol onto the points (the gateway) ask the
//! session instead of keeping a copy of its lifecycle and order.
//!
//! The answer of a turn is gated (§12.1a): [`Session::output`] returns an
//! [`OutputDecision`] whose content is reachable only through
//! [`OutputDecision::release`], after the verdict is checked. A streamed
//! model response is mediated segment by segment by
//! [`Session::mediate_stream`] (§12.1's exception; see
//! [`IncrementalOutput`](crate::IncrementalOutput)).
//!
//! Mode and composition are the host's unless the session was opened
//! with overrides ([`SessionBuilder`], §7.2, §8).
//!
//! **Cancellation.** An emission takes its `sequence` before it awaits its
//! interceptors. If the caller drops the emission's future before the
//! record is delivered, a guard delivers a record for that sequence at
//! once: a deny `host_error:interceptor_failed` (no interceptor exceeded
//! the host's timeout, so not `interceptor_timeout`; the reason the
//! reference Python emitter records for a cancellation), with the message
//! `emission cancelled by its caller before its verdict`,
//! `extensions.hookwire.cancelled: true` and null identities. A record reader therefore never sees a gap, which
//! §12.2 would make record loss. The pending `pre_*` pair of a cancelled
//! emission is not booked: the action did not proceed.
//!
//! **Dropped without shutdown.** A started `Session` dropped without
//! [`Session::shutdown`] (an agent loop unwound by an error or a panic, a
//! task aborted) still ends its trail with `agent_shutdown` (§6.1a):
//! `Drop` hands the session's state to a task on the current Tokio
//! runtime, which emits `agent_shutdown` with reason `cancelled` (`error`
//! after a denied startup, as for an explicit shutdown) through the same
//! interceptors, composition and record sinks. The emission is
//! asynchronous: it is not awaited by the code that dropped the session,
//! and the open-sessions gauge falls when it completes. Two cases cannot
//! emit: a session dropped outside any Tokio runtime (there is nothing to
//! run the interceptors on; a `WARN` log line says so), and a runtime
//! that is itself shutting down, which cancels the task (an emission
//! already under way then leaves its cancellation record, as above). A
//! session never started, or already shut down, emits nothing.
//!
//! ## Layout
//!
//! From the handle an agent holds down to the state it shares:
//!
//! | module | role |
//! | --- | --- |
//! | `builder` | [`SessionBuilder`]: a session opened with its own members, mode or composition |
//! | `handle` | [`Session`]: the typed per-point API, and the `Drop` that hands an unclosed session's state to its `agent_shutdown` |
//! | `lifecycle` | the session's state, in one value: the §3.1 lifecycle, admission in order, and each emission's run |
//! | `cancel` | the guard that leaves a cancellation record for an emission dropped before its record |
//! | `context` | the context of one emission, assembled from the session's base and the point's members |
//! | `members` | the members each point's context carries |
//! | `overrides` | the mode and composition a session runs each point under |
//! | `order` | the §3.1 pairing discipline (rules 3–5) |
//! | `output` | the `output` gate (§12.1a): [`OutputDecision`] |

mod builder;
mod cancel;
mod context;
mod handle;
mod lifecycle;
mod members;
mod order;
mod output;
mod overrides;

#[cfg(test)]
mod tests;

pub use builder::SessionBuilder;
pub use handle::Session;
pub(crate) use members::post_model_members;
pub use order::MAX_OPEN_CALLS;
pub(crate) use order::PostModel;
pub use output::{OutputDecision, Withheld};
