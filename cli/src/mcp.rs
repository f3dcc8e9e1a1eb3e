//! `hookwire mcp`: the Model Context Protocol proxy (`hookwire-mcp`). An
//! MCP server to its client (stdio, or Streamable HTTP with `--listen`),
//! an MCP client to the real server (a command after `--`, or
//! `--upstream URL`); every `tools/call` between them governed by the
//! declared chain. Everything the command prints goes to stderr, since
//! stdout may be the MCP channel. `hookwire mcp token` makes an HTTP
//! client's token. See `docs/mcp.md`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookwire_mcp::settings::{MetricsEndpoint, RawSettings, Settings, check_listen};
use hookwire_mcp::{HiddenTools, McpConfig, McpMetrics, UpstreamSpec};

use crate::args::RegistryArgs;
use crate::audit::RecordsArgs;
use crate::error::CliError;
use crate::governed::{ChainArgs, Governed, HostOptions, governed_host};
use crate::output::PrintTo;

/// The `mcp` subcommands beside the proxy itself.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Print a fresh client token (alone on stdout, so that it can be
    /// redirected into a file) and, on stderr, the clients-file line
    /// holding its hash.
    #[command(
        after_help = "Example: the token into cursor.token, its clients-file line into mcp-clients:\n  \
hookwire mcp token --name cursor > cursor.token 2>> mcp-clients"
    )]
    Token(crate::client_token::TokenArgs),
}

/// The options of `hookwire mcp`.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
# one process: the policies of a directory decided in the proxy, in front of a stdio server\n  \
hookwire mcp --policy examples/policies -- npx -y @modelcontextprotocol/server-filesystem /srv\n  \
# stdio in front of a stdio server (what an MCP client launches instead of the server)\n  \
hookwire mcp --declaration policy.json -- npx -y @modelcontextprotocol/server-filesystem /srv\n  \
# Streamable HTTP in front of a Streamable HTTP server, clients by token\n  \
hookwire mcp --declaration policy.json --listen 127.0.0.1:8791 \\\n    \
--clients-file mcp-clients --upstream http://127.0.0.1:8000/mcp --metrics-addr 127.0.0.1:9465\n  \
# a client token and its clients-file line\n  \
hookwire mcp token --name cursor"
)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub(crate) command: Option<McpCommand>,
    /// What governs every MCP session.
    #[command(flatten)]
    chain: ChainArgs,
    /// The upstream's Streamable HTTP endpoint, e.g.
    /// `http://127.0.0.1:8000/mcp` (else the command after `--`).
    #[arg(long, value_name = "URL", conflicts_with = "server_command")]
    upstream: Option<String>,
    /// A header sent with every upstream request, `NAME: VALUE`
    /// (repeatable; never logged).
    #[arg(long = "upstream-header", value_name = "HEADER", requires = "upstream")]
    upstream_header: Vec<String>,
    /// TLS toward an `https` upstream: an extra CA, a client certificate.
    #[command(flatten)]
    upstream_tls: crate::upstream_tls::UpstreamTlsArgs,
    /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio (port
    /// 0: any free port, printed on stderr). Loopback only unless
    /// `--allow-remote`. Without ADDR: 127.0.0.1:8791.
    #[arg(long, value_name = "ADDR", requires = "clients_file", num_args = 0..=1, default_missing_value = crate::args::MCP_ADDR)]
    listen: Option<SocketAddr>,
    /// Listen on a non-loopback address (clients still need a token).
    #[arg(long, requires = "listen")]
    allow_remote: bool,
    /// A browser origin allowed to use the HTTP downstream, e.g.
    /// `https://app.example.com` (repeatable). Loopback origins are always
    /// allowed, requests without `Origin` too; any other is refused 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    allow_origin: Vec<String>,
    /// The HTTP clients: one `NAME SHA256-HEX` line each (`hookwire mcp
    /// token` makes one).
    #[arg(long, value_name = "FILE", requires = "listen")]
    clients_file: Option<PathBuf>,
    /// The longest one upstream request may take.
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    call_timeout_ms: u64,
    /// An HTTP session with no request for this long is ended
    /// (`agent_shutdown`).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    idle_timeout_s: u64,
    /// A stateless (2026-07-28) `tools/call` still waiting for its verdict
    /// (an approval) or its result after this long is answered
    /// `input_required` with a `requestState` the client sends back to
    /// collect it: no connection is held while an approver decides.
    #[arg(long, default_value_t = 5_000, value_name = "MS")]
    input_required_after_ms: u64,
    /// The most HTTP sessions open at once.
    #[arg(long, default_value_t = 256, value_name = "N")]
    max_sessions: usize,
    /// How many of them one client (one bearer token's name) may hold:
    /// one client's flood cannot lock the others out.
    #[arg(long, default_value_t = hookwire_mcp::DEFAULT_MAX_SESSIONS_PER_CLIENT, value_name = "N")]
    max_sessions_per_client: usize,
    /// The most requests in flight per session.
    #[arg(long, default_value_t = 64, value_name = "N")]
    max_in_flight: usize,
    /// The largest JSON-RPC message accepted from either side.
    #[arg(long, default_value_t = hookwire_mcp::DEFAULT_MAX_MESSAGE_BYTES, value_name = "BYTES")]
    max_message_bytes: usize,
    /// A tool removed from `tools/list` and denied when called anyway
    /// (repeatable).
    #[arg(long = "hide-tool", value_name = "NAME")]
    hide_tool: Vec<String>,
    /// A method relayed although the mediation table refuses it or does
    /// not list it, e.g. `resources/read` (repeatable; docs/mcp.md,
    /// "Mediation table"). A governed method cannot be declared inert.
    #[arg(long = "inert-method", value_name = "METHOD")]
    inert_method: Vec<String>,
    /// The `agent.id` of the contexts.
    #[arg(long, default_value = "hookwire-mcp", value_name = "ID")]
    agent_id: String,
    /// Print every interception record as a JSON line on stderr.
    #[arg(long)]
    print_records: bool,
    /// Serve Prometheus metrics at `GET /metrics` on this address: the
    /// host's series and `hookwire_mcp_*`.
    /// Given without ADDR: 127.0.0.1:9466.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::MCP_METRICS_ADDR)]
    metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    records: RecordsArgs,
    /// The upstream server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    server_command: Vec<String>,
}

fn config_error(m: String) -> CliError {
    CliError::Mcp(hookwire_mcp::Error::Config(m))
}

/// Runs the proxy until stdin ends (stdio) or Ctrl-C: builds the host
/// (`governed`, shared with the gateway and the hooks daemon), maps the
/// flags onto `hookwire_mcp::Settings` and runs `hookwire_mcp::run`.
pub(crate) async fn run(args: McpArgs) -> Result<(), CliError> {
    if let Some(McpCommand::Token(token)) = &args.command {
        return crate::client_token::print(token);
    }
    let spec = upstream_spec(&args)?;
    // Hidden tools are a binding of the chain: a hidden tool called anyway
    // is a deny on the record (docs/mcp.md, "Hidden tools").
    let hidden = HiddenTools::default();
    let hide: BTreeSet<String> = args.hide_tool.iter().cloned().collect();
    let amend = |kinds, document| {
        let kinds = hidden.register(kinds)?;
        Ok((kinds, hookwire_mcp::with_hidden_binding(document, &hide)))
    };
    let options = HostOptions {
        agent_id: &args.agent_id,
        chain: &args.chain,
        registry: &args.registry,
        records: &args.records,
        print: args.print_records.then_some(PrintTo::Stderr),
        metrics_addr: args.metrics_addr,
        amend: Some(&amend),
    };
    let (governed, metrics) = governed_host(options, McpMetrics::register).await?;
    let Governed {
        host,
        signed,
        metrics_registry,
        metrics_listener,
    } = governed;
    let mediation = hookwire_mcp::Mediation::new(args.inert_method.iter().cloned().collect())
        .map_err(|e| config_error(format!("--inert-method: {e}")))?;
    let origins = hookwire_mcp::Origins::new(args.allow_origin.iter().cloned())?;
    let config = Arc::new(McpConfig {
        call_timeout: Duration::from_millis(args.call_timeout_ms.max(1)),
        idle_timeout: Duration::from_secs(args.idle_timeout_s.max(1)),
        input_required_after: Duration::from_millis(args.input_required_after_ms.max(1)),
        max_sessions: args.max_sessions.max(1),
        max_sessions_per_client: args.max_sessions_per_client.max(1),
        max_in_flight: args.max_in_flight.max(1),
        max_message_bytes: args.max_message_bytes.max(1024),
        hidden: hidden.names(),
        metrics,
        mediation,
        origins,
        upstream_tls: args.upstream_tls.load()?,
    });
    let clients = match args.listen {
        Some(addr) => {
            check_listen(addr, args.allow_remote)?;
            Some(read_clients(args.clients_file.as_deref())?)
        }
        None => None,
    };
    let settings = Settings::try_from(RawSettings {
        host,
        upstream: spec,
        config,
        listen: args.listen,
        allow_remote: args.allow_remote,
        clients,
        metrics_endpoint: metrics_listener.map(|listener| MetricsEndpoint {
            listener,
            registry: metrics_registry,
        }),
    })?;
    hookwire_mcp::run(settings, crate::shutdown::requested()).await?;
    signed.finish(PrintTo::Stderr)
}

fn upstream_spec(args: &McpArgs) -> Result<UpstreamSpec, CliError> {
    match (&args.upstream, args.server_command.split_first()) {
        (Some(url), None) => {
            let headers = args
                .upstream_header
                .iter()
                .map(|h| match h.split_once(':') {
                    Some((n, v)) if !n.trim().is_empty() => {
                        Ok((n.trim().to_owned(), v.trim().to_owned()))
                    }
                    _ => Err(config_error("--upstream-header takes `NAME: VALUE`".into())),
                })
                .collect::<Result<_, _>>()?;
            Ok(UpstreamSpec::Http {
                url: url.clone(),
                headers,
            })
        }
        (None, Some((program, rest))) => Ok(UpstreamSpec::Command {
            program: program.clone(),
            args: rest.to_vec(),
        }),
        (Some(_), Some(_)) => Err(config_error(
            "give one upstream: --upstream URL or a command after --".into(),
        )),
        (None, None) => Err(config_error(
            "no upstream: give --upstream URL or a command after --".into(),
        )),
    }
}

fn read_clients(path: Option<&std::path::Path>) -> Result<hookwire_mcp::WatchedClients, CliError> {
    let Some(path) = path else {
        return Err(config_error("--listen needs --clients-file".into()));
    };
    hookwire_mcp::WatchedClients::open(path).map_err(|e| config_error(e.to_string()))
}
