//! The gateway's own tests in one binary (`cargo test -p hookwire-gateway`),
//! one module per concern:
//!
//! - `embedded`: `hookwire_gateway::run(settings, shutdown)` in process,
//!   and the settings it refuses before it listens;
//! - `mediation_table`: every member the pinned official SDKs type has a
//!   row in its API's mediation table;
//! - `metrics`: the gateway's Prometheus series, scraped after known
//!   requests and checked by `promtool`.
//!
//! Where a test belongs: a test of what the gateway does, in process, is
//! here; a test of the `hookwire gateway` command's own surface (flags,
//! exit codes, what it prints) is with the command in `cli/tests/`; a
//! scenario through the gateway with other products (the hooks daemon,
//! real coding-agent CLIs, approvals) is in the workspace's `tests/`.

mod embedded;
mod mediation_table;
mod metrics;
