//! Interceptor services written in other languages on hookwire's packages —
//! `examples/python` (the `hookwire` Python package, `sdks/python`) and
//! `examples/node` (the `@hookwire/sdk` TypeScript package,
//! `sdks/typescript`) — each spawned as a child process and driven over
//! loopback by the Rust host and the reference agent loop, over the
//! Multiplex stream and unary: every point, every verdict kind, the approval
//! seam, exact JSON round trips, `Describe`-driven binding, fail-closed
//! failures and a graceful stop.
//!
//! The scenarios are written once (`turn`, `wire`, `lifecycle`, on the
//! shared `service` and `fixtures`) and run per language (`python`,
//! `node`). Needs what `scripts/setup.sh` installs (the venv with the
//! Python package, the TypeScript package's build, `examples/node`'s
//! link to it); `scripts/test.sh` runs it first.

mod fixtures;
mod lifecycle;
mod node;
mod python;
mod service;
mod turn;
mod wire;

/// One `#[tokio::test]` per scenario (`module::function`, the test named
/// after the function) for the language `$lang`, plus the informational
/// latency probe (ignored by default).
macro_rules! per_language {
    ($lang:ident: $($module:ident::$scenario:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                crate::$module::$scenario(crate::service::Lang::$lang).await
            }
        )*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        #[ignore = "informational; run with --ignored --nocapture"]
        async fn latency() {
            crate::lifecycle::latency(crate::service::Lang::$lang).await
        }
    };
}

pub(crate) use per_language;
