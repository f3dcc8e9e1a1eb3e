//! `hookwire hooks serve`: the long-lived hooks host behind its routes,
//! on loopback TCP (a bearer token required) or a Unix socket (its
//! permissions authenticate callers; a token optional), with the host's
//! and the daemon's own metrics, signed records and approvals wired as
//! for `hookwire gateway`. The host is built here (`governed`, shared
//! with the gateway and the MCP proxy); the flags are mapped onto
//! `hookwire_hooks::Settings`, which `hookwire_hooks::run` serves.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hookwire_hooks::settings::{Listen, MetricsEndpoint, RawSettings, Settings, check_listen};
use hookwire_hooks::{HooksConfig, HooksMetrics, Liftable};

use crate::args::{ListenAddr, RegistryArgs};
use crate::audit::RecordsArgs;
use crate::error::CliError;
use crate::governed::{ChainArgs, Governed, HostOptions, governed_host};
use crate::output::PrintTo;
use hookwire_hooks::relay::{HOOKS_ADDR, token_from_file};

/// What a liftable deny left standing becomes (`--liftable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LiftableArg {
    /// A block, like any deny.
    Deny,
    /// The agent's own "ask" (the human at the terminal decides) where it
    /// has one, else a block.
    Ask,
}

/// The options of `hookwire hooks serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
# one process: the policies of a directory decided in the daemon\n  \
hookwire hooks serve --policy examples/policies --token-file ~/.config/hookwire/hooks-token\n\n  \
# loopback TCP: every caller presents the token\n  \
hookwire hooks serve --declaration examples/declarations/policy.json \\\n    \
--token-file ~/.config/hookwire/hooks-token --print-records --metrics-addr 127.0.0.1:9465\n\n  \
# a Unix socket (0600, in a directory only you can write): the socket's permissions authenticate\n  \
mkdir -m 700 -p \"$XDG_RUNTIME_DIR/hookwire\"\n  \
hookwire hooks serve --declaration examples/declarations/policy.json \\\n    \
--listen \"unix:$XDG_RUNTIME_DIR/hookwire/hooks.sock\"")]
pub(crate) struct ServeArgs {
    /// What governs every agent session.
    #[command(flatten)]
    chain: ChainArgs,
    /// Where to listen: `HOST:PORT` (port 0: any free port, printed;
    /// loopback only unless `--allow-remote`), or `unix:/path/hooks.sock`
    /// (created 0600 in a directory only this user can write to; a stale
    /// socket there is replaced; removed on stop).
    #[arg(long, default_value = HOOKS_ADDR, value_name = "ADDR")]
    listen: ListenAddr,
    /// Listen on a non-loopback address (callers still need the token).
    #[arg(long)]
    allow_remote: bool,
    /// The file holding the bearer token hook callers must present
    /// (required on TCP; optional on a Unix socket, whose permissions
    /// authenticate callers, and required there too when given).
    #[arg(long, value_name = "FILE", conflicts_with = "token_env")]
    token_file: Option<PathBuf>,
    /// The environment variable holding that token.
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// An agent session with no event for this long is shut down
    /// (`agent_shutdown`): how agents without a session-end event end.
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    idle_timeout_s: u64,
    /// The most agent sessions open at once (an event of one more is
    /// blocked).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    max_sessions: usize,
    /// What a liftable deny left standing by the host (no approval
    /// resolver declared) becomes at a pre-tool event.
    #[arg(long, value_enum, default_value = "deny")]
    liftable: LiftableArg,
    /// The `agent.id` of the daemon's contexts.
    #[arg(long, default_value = "hookwire-hooks", value_name = "ID")]
    agent_id: String,
    /// Print every interception record as a JSON line on stdout, its
    /// facts (e.g. the approver) beside its members; stdout carries
    /// nothing else (the address, metrics URL and log lines go to stderr).
    #[arg(long)]
    print_records: bool,
    /// Serve Prometheus metrics at `GET /metrics` on this address (port
    /// 0: any free port, printed): the host's series (`hookwire_host_*`)
    /// and the daemon's (`hookwire_hooks_*`: decisions, latency, open
    /// sessions, refused callers, fail-closed answers).
    /// Given without ADDR: 127.0.0.1:9465.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::HOOKS_METRICS_ADDR)]
    metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    records: RecordsArgs,
}

/// The token the options name, if any.
fn token(args: &ServeArgs) -> Result<Option<String>, String> {
    match (&args.token_file, &args.token_env) {
        (Some(path), _) => token_from_file(path).map(Some),
        (None, Some(var)) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Ok(Some(t.trim().to_owned())),
            _ => Err(format!("the environment variable {var} is unset or empty")),
        },
        (None, None) => Ok(None),
    }
}

/// Serves the hook routes until Ctrl-C, then ends every open session.
pub(crate) async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let config_error = |m: String| CliError::Hooks(hookwire_hooks::Error::Config(m));
    let listen = match &args.listen {
        ListenAddr::Tcp(addr) => Listen::Tcp(*addr),
        ListenAddr::Unix(path) => Listen::Unix(path.clone()),
    };
    // Refused before the token is read and the host built, as the
    // settings would: the address first, then a missing token.
    check_listen(&listen, args.allow_remote, true)?;
    let token = token(&args).map_err(config_error)?;
    check_listen(&listen, args.allow_remote, token.is_some())?;
    let options = HostOptions {
        agent_id: &args.agent_id,
        chain: &args.chain,
        registry: &args.registry,
        records: &args.records,
        print: args.print_records.then_some(PrintTo::Stdout),
        metrics_addr: args.metrics_addr,
        amend: None,
    };
    let (governed, hooks_metrics) = governed_host(options, HooksMetrics::register).await?;
    let Governed {
        host,
        signed,
        metrics_registry,
        metrics_listener,
    } = governed;
    let settings = Settings::try_from(RawSettings {
        host,
        governed_by: args.chain.describe(),
        listen,
        allow_remote: args.allow_remote,
        token,
        config: HooksConfig {
            max_sessions: args.max_sessions.max(1),
            idle_timeout: Duration::from_secs(args.idle_timeout_s.max(1)),
            liftable: match args.liftable {
                LiftableArg::Deny => Liftable::Deny,
                LiftableArg::Ask => Liftable::Ask,
            },
        },
        metrics: hooks_metrics,
        metrics_endpoint: metrics_listener.map(|listener| MetricsEndpoint {
            listener,
            registry: metrics_registry,
        }),
    })?;
    hookwire_hooks::run(settings, crate::shutdown::requested()).await?;
    signed.finish(PrintTo::Stderr)
}
