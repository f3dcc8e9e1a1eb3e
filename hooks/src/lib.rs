//! Coding agents governed through their own hook systems. An agent such
//! as Claude Code runs a hook at each step of its loop (session start, a
//! prompt, before and after a tool, stop, session end); this crate maps
//! those events to the eight interception points of one long-lived
//! hookwire [`Host`](hookwire_client::Host), so that a session's sequence
//! numbers, turn order and open tool calls persist across the many hook
//! invocations of one agent session, and maps each combined verdict back
//! into the agent's own output format.
//!
//! | module | role |
//! |---|---|
//! | `event` | the agent-neutral hook call and outcome the core works on |
//! | `host` | the core: one hookwire session per agent session, events → points, verdicts → outcomes; a session lent to the gateway of the same process for its model requests |
//! | `agents` | one adapter per agent (Claude Code and Codex, Gemini CLI, Cursor, Copilot): decode its payload, encode an outcome in its format |
//! | `serve` | the HTTP daemon (`hookwire hooks serve`): one route per agent, bearer token or socket permissions |
//! | `settings` | [`Settings`]: the daemon's host, bounds, listen address, token and metrics, validated from [`settings::RawSettings`] |
//! | `run` | [`run`]: the daemon served from its settings until shut down, every open session then ended (what `hookwire hooks serve` runs) |
//! | `socket` | the daemon's Unix socket: 0600 in a directory only its user can write, stale sockets replaced, peers checked |
//! | `metrics` | the daemon's Prometheus series (`hookwire_hooks_*`) |
//! | `call` | the command hook's side: one bounded request to the daemon, over TCP or the socket |
//! | `http1` | that request's HTTP/1.1 exchange, blocking, on the standard library alone |
//! | `relay` | one command hook call end to end (`hookwire hook`, `hookwire-hook`): stdin, the daemon, the agent's output or its block |
//! | `install` | an agent's hook configuration merged into its existing settings (`hookwire hooks install`) |
//!
//! Every path fails closed in the agent's own terms: an event the core
//! cannot govern, an emission the host refuses, a daemon that is down,
//! slow or answers garbage all block the guarded step, never allow it; a
//! deny the agent cannot enforce (a prompt or a tool result it cannot
//! stop) is recorded and quarantines the rest of the turn.

mod agents;
mod call;
mod error;
mod event;
mod host;
mod http1;
mod install;
mod metrics;
pub mod relay;
mod run;
mod serve;
pub mod settings;
mod socket;

pub use agents::Agent;
pub use call::{CallOutcome, Endpoint, MAX_ANSWER_BYTES, ask_daemon};
pub use error::Error;
pub use event::{Capabilities, Event, HookCall, Outcome};
pub use host::{
    CLAUDE_CODE_SESSION_HEADER, CODEX_SESSION_HEADER, DecidedResult, HooksConfig, HooksHost, Join,
    Joined, Liftable, MAX_DECIDED_RESULTS, MAX_SESSION_ID_BYTES, Owner, SharedSession,
};
pub use install::{
    CODEX_PROVIDER, gateway_root, merge_claude_base_url, merge_codex_provider, merge_http_settings,
    merge_settings, project_settings, unroutable, user_settings,
};
pub use metrics::HooksMetrics;
pub use run::run;
pub use serve::{
    Authenticate, FAILED_CLOSED_HEADER, Listener, MAX_PAYLOAD_BYTES, Routes, router, router_with,
    serve, socket_router,
};
pub use settings::Settings;
pub use socket::{MAX_SOCKET_PATH_BYTES, UnixSocket};
