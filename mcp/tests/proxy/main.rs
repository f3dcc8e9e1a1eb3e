//! The MCP proxy's tests in one binary (`cargo test -p hookwire-mcp`),
//! one module per way of driving it:
//!
//! - `embedded`: `hookwire_mcp::run(settings, shutdown)` in process, and
//!   the settings it refuses before it listens;
//! - `sdk`: the official MCP SDKs (Python and TypeScript, pinned,
//!   installed by `scripts/setup.sh`) as the client and the upstream
//!   server, the Rego policy served in process, records read back;
//! - `wire`: hand-written JSON-RPC lines and HTTP requests against a
//!   standard-library server, for what an SDK never sends (malformed,
//!   oversized, out-of-order messages, refused clients and origins).
//!
//! Where a test belongs: a test of what the proxy does once running —
//! governance, relays, sessions, refusals, records, upstream transport —
//! is here, even when it runs the built `hookwire mcp` as its users do
//! ([`hookwire_testkit::hookwire_bin`]: `cargo build -p hookwire-cli`
//! first, or `HOOKWIRE_BIN`); a test of the command's own surface — flag
//! parsing, help, exit codes, `hookwire mcp token` — stays with the command
//! in `cli/tests/`. The fixtures are shared with the workspace's scenarios
//! in `tests/fixtures/mcp/` (found from
//! [`hookwire_testkit::workspace_root`]).

mod embedded;
mod sdk;
mod wire;
