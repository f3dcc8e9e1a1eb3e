//! The hooks daemon's own tests in one binary (`cargo test -p
//! hookwire-hooks`), one module per way of driving it:
//!
//! - `embedded`: the daemon through `Settings` and `run` in process, on an
//!   owner-only Unix socket, and the settings it refuses before it
//!   listens;
//! - `routes`: the HTTP hook routes as each agent posts its hooks;
//! - `ops`: the daemon on a Unix socket and its metrics;
//! - `claude_code`: the real Claude Code CLI (pinned in `tests/agents/`,
//!   installed by `scripts/setup.sh`) governed through its hooks, as
//!   command hooks and as HTTP hooks.
//!
//! Where a test belongs: a test of what the daemon does once running —
//! governance, its routes and socket, refusals, records, series — is
//! here, even when it runs the built `hookwire hooks serve` and `hookwire
//! hook` as an agent does ([`hookwire_testkit::hookwire_bin`]: `cargo
//! build -p hookwire-cli` first, or `HOOKWIRE_BIN`; the daemon and hook
//! helpers are [`hookwire_testkit::hooks_daemon`], shared with the
//! command's tests); a test of the commands' own surface — `hookwire
//! hook`'s exit codes and output per agent, `hooks install`, flags and
//! help — stays with the command in `cli/tests/`; a scenario across
//! products (the gateway serving the hook routes beside the model's) is
//! in the workspace's `tests/`.

mod claude_code;
mod embedded;
mod ops;
mod routes;
