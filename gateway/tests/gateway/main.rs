//! The gateway's own tests (`cargo test -p hookwire-gateway --test gateway`),
//! one module per concern:
//!
//! - `apis`: the official SDKs (tests/sdk/) on every API the gateway
//!   speaks, through a `Gateway` in process over real gRPC interceptor
//!   services, in front of the recording mocks of
//!   [`hookwire_testkit::model_upstream`];
//! - `coding_agents`: the real Claude Code and Codex CLIs with their
//!   model traffic through the gateway;
//! - `command`: the built `hookwire gateway` run as an operator runs it
//!   ([`hookwire_testkit::hookwire_bin`]: `cargo build -p hookwire-cli`
//!   first, or `HOOKWIRE_BIN`), with the demo's services, a policy
//!   directory, an HTTPS upstream, the example, and replicas behind nginx;
//! - `embedded`: `hookwire_gateway::run(settings, shutdown)` in process,
//!   and the settings it refuses before it listens;
//! - `mediation_table`: every member the pinned official SDKs type has a
//!   row in its API's mediation table;
//! - `metrics`: the gateway's Prometheus series, scraped after known
//!   requests and checked by `promtool`.
//!
//! The tests that capture the process's logs are in the crate's second
//! binary, `tests/logged/` (why: its docs).
//!
//! Where a test belongs: a test of what the gateway does once running —
//! governance, relays, sessions, refusals, records, upstream transport —
//! is here, even when it runs the built command; a test of the `hookwire
//! gateway` command's own surface (flags, exit codes, `hookwire gateway
//! token`) is with the command in `cli/tests/`; a scenario through the
//! gateway with other products (the hooks daemon, real coding-agent CLIs
//! governed by both) is in the workspace's `tests/`.

mod apis;
mod coding_agents;
mod command;
mod embedded;
mod mediation_table;
mod metrics;
