//! `hookwire gateway`: an OpenAI-compatible proxy governed by a declared
//! chain (`hookwire-gateway`). Agents in any language point their OpenAI
//! SDK's `base_url` at it; it forwards to `--upstream` with keys from the
//! pool (`--key-env`, `--key-file`; never printed) and emits the eight
//! points through the host the declaration builds. With `--metrics-addr`,
//! the host's and the gateway's series at `/metrics`; with
//! `RUST_LOG=hookwire_gateway=info`, an access line per request on stderr.
//! With `--hooks-token-file`, the coding agents' hook routes beside the
//! model routes, one session per agent session. See `docs/gateway.md`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hookwire_gateway::settings::{MetricsEndpoint, RawSettings, Settings, check_exposure};
use hookwire_gateway::{CredentialPool, GatewayConfig, GatewayMetrics};

use crate::args::RegistryArgs;
use crate::audit::RecordsArgs;
use crate::error::CliError;
use crate::governed::{ChainArgs, Governed, HostOptions, governed_host};
use crate::output::PrintTo;

/// Where the gateway listens unless told otherwise.
pub(crate) const GATEWAY_ADDR: &str = "127.0.0.1:8080";

/// The `gateway` subcommands beside the gateway itself.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum GatewayCommand {
    /// Print a fresh client token (alone on stdout, so that it can be
    /// redirected into a file) and, on stderr, the clients-file line
    /// holding its hash (`--clients-file`).
    #[command(
        after_help = "Example: the token into ci-bot.token, its clients-file line into gateway-clients:\n  \
hookwire gateway token --name ci-bot > ci-bot.token 2>> gateway-clients"
    )]
    Token(crate::client_token::TokenArgs),
}

/// The options of `hookwire gateway`.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Example, one process: the policies of a directory decided in the gateway:\n  \
hookwire gateway --upstream https://api.openai.com/v1 --policy examples/policies --key-env OPENAI_API_KEY\n\n\
Example: the address and one access line per request on stderr, only the records on stdout, \
metrics at http://127.0.0.1:9464/metrics:\n  \
RUST_LOG=hookwire_gateway=info hookwire gateway --upstream https://api.openai.com/v1 \\\n    \
--declaration examples/declarations/demo.json --key-env OPENAI_API_KEY \\\n    \
--print-records --metrics-addr 127.0.0.1:9464\n\n\
Example: on a shared network, only listed clients spend the pool's keys:\n  \
hookwire gateway token --name ci-bot > ci-bot.token 2>> gateway-clients\n  \
hookwire gateway --listen 0.0.0.0:8080 --upstream https://api.openai.com/v1 --policy examples/policies \\\n    \
--key-env OPENAI_API_KEY --clients-file gateway-clients"
)]
pub(crate) struct GatewayArgs {
    #[command(subcommand)]
    pub(crate) command: Option<GatewayCommand>,
    /// The address to listen on (port 0: any free port, printed).
    #[arg(long, default_value = GATEWAY_ADDR, value_name = "ADDR")]
    listen: SocketAddr,
    /// The upstream's base URL, e.g. `https://api.openai.com/v1`.
    #[arg(long, value_name = "URL", required = true)]
    upstream: Option<String>,
    /// TLS toward an `https` upstream: an extra CA, a client certificate.
    #[command(flatten)]
    upstream_tls: crate::upstream_tls::UpstreamTlsArgs,
    /// What governs every conversation.
    #[command(flatten)]
    chain: ChainArgs,
    /// Adds the upstream key held by this environment variable to the
    /// pool (repeatable), e.g. `OPENAI_API_KEY`. Without any key, the
    /// client's own `Authorization` is forwarded.
    #[arg(long = "key-env", value_name = "VAR")]
    key_env: Vec<String>,
    /// Adds every line of FILE as an upstream key (repeatable; `#` lines
    /// and blank lines skipped), e.g. `/run/secrets/upstream-keys`.
    #[arg(long = "key-file", value_name = "FILE")]
    key_file: Vec<PathBuf>,
    /// Admit only the clients FILE lists, one `NAME SHA256-HEX` a line
    /// (`hookwire gateway token` makes both), each by its token sent as
    /// its API key; read again when it changes (a removed line is a
    /// revoked token). Each client owns its sessions and has its own
    /// session quota. Needs a key pool.
    #[arg(long, value_name = "FILE")]
    clients_file: Option<PathBuf>,
    /// With a key pool on a non-loopback address, serve without
    /// `--clients-file`: every process that reaches the gateway spends
    /// the pool's keys, as one shared identity.
    #[arg(long, conflicts_with = "clients_file")]
    allow_anonymous: bool,
    /// Serve the coding agents' hook routes too (`POST /v1/hooks/{agent}`,
    /// as `hookwire hooks serve` does), open to callers presenting the
    /// bearer token in FILE, over the same host: a model request of an
    /// agent session its hooks hold open (Claude Code, Codex) is governed
    /// in that same session, and a tool result a hook denied is withheld
    /// from the model. Each agent session is bound to the principal that
    /// opened it: with --clients-file the routes accept the clients'
    /// tokens too and only the owning client's model requests join its
    /// sessions; without one, served on loopback only, a session is bound
    /// to the first API key that joins it. See `hookwire hooks install
    /// --gateway`.
    #[arg(long, value_name = "FILE", conflicts_with = "hooks_token_env")]
    hooks_token_file: Option<PathBuf>,
    /// As `--hooks-token-file`, the token in this environment variable.
    #[arg(long, value_name = "VAR")]
    hooks_token_env: Option<String>,
    /// A conversation idle this long is shut down (`agent_shutdown`).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    idle_timeout_s: u64,
    /// How long an answer whose client went away (timed out while the
    /// request was held, e.g. for an approval) waits for the client's
    /// retry; a retry arriving earlier joins the running request.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    retry_window_s: u64,
    /// How many conversations may be open at once.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    max_sessions: usize,
    /// How many of them one client may hold (a listed client, or one
    /// upstream key without `--clients-file`): one client's flood cannot
    /// lock the others out.
    #[arg(long, default_value_t = 1_000, value_name = "N")]
    max_sessions_per_client: usize,
    /// The deepest nesting allowed (1: interceptors may call back once).
    #[arg(long, default_value_t = 1, value_name = "N")]
    max_depth: u32,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 4 << 20, value_name = "BYTES")]
    max_body_bytes: usize,
    /// The `agent.id` of the gateway's contexts.
    #[arg(long, default_value = "hookwire-gateway", value_name = "ID")]
    agent_id: String,
    /// Mediate streamed answers incrementally (§12.1's exception: each
    /// segment released once a verdict covering it permits) instead of
    /// buffering them whole.
    #[arg(long)]
    incremental_output: bool,
    /// Declare one more member inert beyond the gateway's mediation table,
    /// as `API SIDE PATH` (e.g. `messages request context_management`);
    /// repeatable. Without it, a member the table does not know is refused
    /// in a request and removed from an answer.
    #[arg(long = "inert-member", value_name = "API SIDE PATH")]
    inert_members: Vec<String>,
    /// Print every interception record as a JSON line on stdout, its
    /// facts (e.g. the approver) beside its members; stdout carries
    /// nothing else (the address, metrics URL and log lines go to stderr).
    #[arg(long)]
    print_records: bool,
    /// Serve Prometheus metrics at `GET /metrics` on this address, e.g.
    /// `127.0.0.1:9464` (port 0: any free port, printed): the host's
    /// `hookwire_host_*` series and the gateway's `hookwire_gateway_*`
    /// (requests by API, route and status class, latency, upstream status
    /// classes).
    /// Given without ADDR: 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::GATEWAY_METRICS_ADDR)]
    metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    records: RecordsArgs,
}

/// Serves the gateway until interrupted (Ctrl-C or SIGTERM), then ends every open
/// session.
pub(crate) async fn run(args: GatewayArgs) -> Result<(), CliError> {
    if let Some(GatewayCommand::Token(token)) = &args.command {
        return crate::client_token::print(token);
    }
    let Some(upstream) = args.upstream.clone() else {
        return Err(hookwire_gateway::Error::Config("--upstream URL is required".into()).into());
    };
    let pooled = !args.key_env.is_empty() || !args.key_file.is_empty();
    check_exposure(
        args.listen,
        pooled,
        args.clients_file.is_some(),
        args.allow_anonymous,
    )?;
    let clients = match &args.clients_file {
        Some(path) => Some(std::sync::Arc::new(
            hookwire_gateway::WatchedClients::open(path)
                .map_err(|e| hookwire_gateway::Error::Config(e.to_string()))?,
        )),
        None => None,
    };
    let options = HostOptions {
        agent_id: &args.agent_id,
        chain: &args.chain,
        registry: &args.registry,
        records: &args.records,
        print: args.print_records.then_some(PrintTo::Stdout),
        metrics_addr: args.metrics_addr,
        amend: None,
    };
    let (governed, gateway_metrics) = governed_host(options, GatewayMetrics::register).await?;
    let Governed {
        host,
        signed,
        metrics_registry,
        metrics_listener,
    } = governed;
    let mut pool = CredentialPool::new();
    for var in &args.key_env {
        pool = pool.with_env(var)?;
    }
    for file in &args.key_file {
        pool = pool.with_file(file)?;
    }
    let mut config = GatewayConfig::new(upstream.clone());
    config.upstream_tls = args.upstream_tls.load()?;
    config.idle_timeout = Duration::from_secs(args.idle_timeout_s.max(1));
    config.retry_window = Duration::from_secs(args.retry_window_s);
    config.max_depth = args.max_depth;
    config.max_sessions = args.max_sessions;
    config.max_sessions_per_credential = args.max_sessions_per_client;
    config.max_body_bytes = args.max_body_bytes;
    config.incremental_output = args.incremental_output;
    config.inert_members = args.inert_members.clone();
    config.metrics = gateway_metrics;
    config.clients = clients;
    config.hooks = hooks_token(&args)?.map(|token| {
        let hooks =
            hookwire_hooks::HooksHost::new(host.clone(), hookwire_hooks::HooksConfig::default());
        hookwire_gateway::SharedHooks::new(std::sync::Arc::new(hooks), token)
    });
    let settings = Settings::try_from(RawSettings {
        host,
        governed_by: args.chain.describe(),
        listen: args.listen,
        config,
        pool,
        allow_anonymous: args.allow_anonymous,
        metrics_endpoint: metrics_listener.map(|listener| MetricsEndpoint {
            listener,
            registry: metrics_registry,
        }),
    })?;
    hookwire_gateway::run(settings, crate::shutdown::requested()).await?;
    signed.finish(PrintTo::Stderr)
}

/// The hook routes' token (`--hooks-token-file`, `--hooks-token-env`),
/// when the gateway serves them.
fn hooks_token(args: &GatewayArgs) -> Result<Option<String>, CliError> {
    let config = |m: String| CliError::from(hookwire_gateway::Error::Config(m));
    match (&args.hooks_token_file, &args.hooks_token_env) {
        (Some(path), _) => crate::hooks::token_from_file(path)
            .map(Some)
            .map_err(config),
        (None, Some(var)) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Ok(Some(t.trim().to_owned())),
            _ => Err(config(format!(
                "the environment variable {var} (--hooks-token-env) is unset or empty"
            ))),
        },
        (None, None) => Ok(None),
    }
}
