//! `hookwire`: the command-line tool of hookwire.
//!
//! - `hookwire check <declaration>` validates and resolves a host
//!   declaration (§7.7) the way a host loading it would, then asks every
//!   declared gRPC endpoint for its `grpc.health.v1` status and its
//!   `Describe` manifest, and prints the effective chain at each point. It
//!   exits non-zero, with the findings, when the document is refused or an
//!   endpoint fails.
//! - `hookwire demo [--declaration <file>] [--serve]` runs the demo agent
//!   session (the library's [`hookwire_demo`]), governed by the
//!   declared chain when a declaration is given; `hookwire demo --stream`
//!   streams the model's answer, released segment by segment;
//!   `--metrics-addr ADDR` serves the host's metrics until Ctrl-C.
//! - `hookwire emit --declaration FILE (--point P --context FILE | --script
//!   FILE)` runs given contexts through the host the declaration builds,
//!   one JSON line (verdict and record) per emission; the exit status says
//!   whether anything was denied (3) or failed closed (4).
//! - `hookwire serve-demo` serves the demo's two interceptor services on
//!   fixed loopback ports, for `check` and `demo --declaration` to talk to;
//!   with `--metrics-addr ADDR`, their Prometheus metrics at `/metrics`.
//! - `hookwire audit keygen|verify`: signed, hash-chained record logs.
//! - `hookwire policy serve|test|eval`: OPA Rego policies as an interceptor.
//! - `hookwire gateway --listen ADDR --upstream URL --declaration FILE`: an
//!   OpenAI-compatible proxy governed by the declared chain.
//! - `hookwire hooks serve --declaration FILE --token-file F` (or
//!   `--listen unix:/path`, the socket's permissions authenticating):
//!   coding agents (Claude Code, Codex, Gemini CLI, Cursor, Copilot) governed through their
//!   own hooks; `hookwire hook --agent NAME` relays one command hook's
//!   payload to it, failing closed in the agent's terms.
//! - `hookwire mcp --declaration FILE [--listen ADDR --clients-file F]
//!   (--upstream URL | -- CMD ARGS...)`: a Model Context Protocol proxy
//!   putting every `tools/call` of an MCP client under the declared chain
//!   (stdio or Streamable HTTP on both sides); `hookwire mcp token` makes
//!   an HTTP client's token.
//! - `hookwire approvals serve|token`: the approval service and its web
//!   page behind an access list, over TLS; fresh approver and host tokens.
//!
//! `demo` and `serve-demo` take `--otlp-endpoint URL`: spans (and the demo
//! host's interception records, as logs) are exported over OTLP/gRPC.
//! Every subcommand logs to stderr, filtered by `RUST_LOG` (default `warn`).
//! `--metrics-addr ADDR` serves Prometheus metrics at `/metrics` wherever a
//! host or a service runs: `gateway`, `hooks serve`, `demo` (host series), `policy serve`,
//! `serve-demo`, `approvals serve` (service series).

// First: the print macros every other module uses.
#[macro_use]
mod output;

mod approvals;
mod args;
mod audit;
mod check;
mod client_token;
mod demo;
mod emit;
mod error;
mod exit;
mod gateway;
mod governed;
mod hooks;
mod mcp;
mod metrics_endpoint;
mod policy;
mod server_tls;
mod shutdown;
mod upstream_tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command's allocator. Every service it runs (policy, gateway,
/// approvals, the demo's) hands requests between tokio workers, so one
/// thread frees what another allocated; glibc's malloc serializes those
/// frees on the allocating thread's arena lock, which cost the load bench
/// a tenth of its CPU in futex waits. mimalloc frees to the owning
/// thread's page without a lock (BENCHMARKS.md has both).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::args::{DEMO_POLICY_ADDR, DEMO_REDACTOR_ADDR, RegistryArgs, TelemetryArgs};
use crate::error::{CliError, report};

/// Agent hooks over gRPC: check host declarations, run the demo.
#[derive(Debug, Parser)]
#[command(
    name = "hookwire",
    version,
    about,
    after_help = "Example:\n  hookwire serve-demo &\n  hookwire check examples/declarations/demo.json\n  hookwire demo --declaration examples/declarations/demo.json\n\n`hookwire COMMAND --help` shows each command's options and an example; docs/operating.md has the default addresses and the exit statuses."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate and resolve a host declaration, check every endpoint's
    /// health and Describe, and print the chain at each point.
    #[command(
        after_help = "Example:\n  hookwire serve-demo &\n  hookwire check examples/declarations/demo.json --approval-endpoint http://127.0.0.1:50061 \\\n    --approval-token-file host-token\n\nEvery finding is printed; the status is 1 when there is any."
    )]
    Check {
        /// The declaration document (JSON).
        declaration: PathBuf,
        /// How long each health check and Describe call may take.
        #[arg(long, default_value_t = 2000, value_name = "MS")]
        timeout_ms: u64,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Run the demo agent session and print one line per emission.
    #[command(
        after_help = "Example:\n  hookwire demo --declaration examples/declarations/demo.json --serve\n\nExit status: 0 when the session ran under its chain's verdicts, 4 when the host failed closed on an emission (host_error:*), 1 when it could not run."
    )]
    Demo {
        /// Govern the session by this declaration instead of the built-in
        /// services started on random ports.
        #[arg(long, value_name = "FILE")]
        declaration: Option<PathBuf>,
        /// Start the demo services on their fixed ports first (what
        /// `examples/declarations/demo.json` points at).
        #[arg(long)]
        serve: bool,
        /// Stream the model's answer under incremental mediation, printing
        /// each segment as its verdict releases it, with an extra
        /// in-process check that denies an answer leaking an access key.
        #[arg(long, conflicts_with = "declaration")]
        stream: bool,
        /// Serve the demo host's Prometheus metrics (`hookwire_host_*`, and
        /// the `hookwire_interceptor_*` series of the services it starts)
        /// at `GET /metrics` on this address, e.g. `127.0.0.1:9464` (port
        /// 0: any free port, printed), and keep serving them after the
        /// session until Ctrl-C.
        /// Given without ADDR: 127.0.0.1:9467.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::DEMO_METRICS_ADDR)]
        metrics_addr: Option<SocketAddr>,
        #[command(flatten)]
        registry: RegistryArgs,
        #[command(flatten)]
        telemetry: TelemetryArgs,
        #[command(flatten)]
        records: audit::RecordsArgs,
    },
    /// Emit given contexts (or a scripted session) through the host a
    /// declaration builds, printing each verdict and record as JSON.
    Emit(Box<emit::EmitArgs>),
    /// Serve, test or evaluate OPA Rego policies as an interceptor.
    #[command(
        subcommand,
        after_help = "Example:\n  hookwire policy test examples/policies\n  hookwire policy serve examples/policies"
    )]
    Policy(policy::PolicyCommand),
    /// Serve the demo's policy and redactor services until interrupted.
    #[command(after_help = "Example:\n  hookwire serve-demo --metrics-addr 127.0.0.1:9468")]
    ServeDemo {
        /// The policy service's address.
        #[arg(long, default_value = DEMO_POLICY_ADDR)]
        policy: SocketAddr,
        /// The redactor service's address.
        #[arg(long, default_value = DEMO_REDACTOR_ADDR)]
        redactor: SocketAddr,
        #[command(flatten)]
        telemetry: TelemetryArgs,
        /// Serve both services' Prometheus metrics at `GET /metrics` on
        /// this address (port 0: any free port, printed at startup).
        /// Given without ADDR: 127.0.0.1:9468.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::SERVE_DEMO_METRICS_ADDR)]
        metrics_addr: Option<SocketAddr>,
    },
    /// Serve an OpenAI-compatible proxy whose conversations the declared
    /// chain governs.
    Gateway(Box<gateway::GatewayArgs>),
    /// The approval service (gRPC and web page) and its access tokens.
    #[command(
        subcommand,
        after_help = "Example:\n  hookwire approvals token --name alice\n  hookwire approvals serve --config approvals.json"
    )]
    Approvals(approvals::ApprovalsCommand),
    /// Serve the hook routes coding agents (Claude Code, Codex, Gemini CLI,
    /// Cursor, Copilot) call,
    /// governed by a declared chain.
    #[command(
        subcommand,
        after_help = "Example:\n  hookwire hooks serve --declaration examples/declarations/policy.json --token-file hooks.token"
    )]
    Hooks(hooks::HooksCommand),
    /// Relay one command hook's payload (stdin) to the hooks daemon and
    /// print the agent's output; the agent's own block (exit 2, the reason
    /// on stderr; for Copilot its deny on stdout) when the daemon is down,
    /// slow or answers garbage.
    Hook(hooks::HookArgs),
    /// Serve a Model Context Protocol proxy whose tool calls the declared
    /// chain governs (or `mcp token`: a client token).
    Mcp(Box<mcp::McpArgs>),
    /// Signing keys and signed, hash-chained record logs.
    #[command(
        after_help = "Example:\n  hookwire audit keygen --out audit.key\n  hookwire demo --records records.jsonl --signing-key audit.key"
    )]
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
}

impl Command {
    /// The OTLP export the command asked for, if any.
    fn otlp_export(&self) -> Option<hookwire_telemetry::OtlpExport> {
        let (args, service) = match self {
            Self::Demo { telemetry, .. } => (telemetry, "hookwire-demo"),
            Self::ServeDemo { telemetry, .. } => (telemetry, "hookwire-serve-demo"),
            Self::Policy(command) => {
                let endpoint = command.otlp_endpoint()?;
                return Some(
                    hookwire_telemetry::OtlpExport::new(endpoint).service_name("hookwire-policy"),
                );
            }
            Self::Check { .. }
            | Self::Emit(_)
            | Self::Audit { .. }
            | Self::Gateway(_)
            | Self::Hooks(_)
            | Self::Hook(_)
            | Self::Mcp(_)
            | Self::Approvals(_) => {
                return None;
            }
        };
        let endpoint = args.otlp_endpoint.clone()?;
        Some(hookwire_telemetry::OtlpExport::new(endpoint).service_name(service))
    }
}

fn main() -> ExitCode {
    let command = match Cli::parse().command {
        Command::Hook(args) => return run_hook(args),
        other => other,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("hookwire: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let export = command.otlp_export();
        if export.is_none() {
            install_logs();
        }
        let telemetry = match export.map(|e| e.install()).transpose() {
            Ok(t) => t,
            Err(e) => return Err(CliError::from(e)),
        };
        let outcome = match command {
            Command::Check {
                declaration,
                timeout_ms,
                registry,
            } => check::run(&declaration, timeout_ms, &registry).await,
            Command::Demo {
                declaration,
                serve,
                stream,
                metrics_addr,
                registry,
                records,
                ..
            } => {
                let sink = telemetry.as_ref().map(|t| t.record_sink());
                let options = demo::DemoOptions {
                    declaration: declaration.as_deref(),
                    serve,
                    stream,
                    metrics_addr,
                };
                demo::run(options, &registry, sink, &records).await
            }
            Command::ServeDemo {
                policy,
                redactor,
                metrics_addr,
                ..
            } => demo::serve(policy, redactor, metrics_addr).await,
            Command::Emit(args) => emit::run(*args).await,
            Command::Audit { command } => audit::run(&command),
            Command::Policy(command) => policy::run(command, telemetry.as_ref()).await,
            Command::Gateway(args) => gateway::run(*args).await,
            Command::Approvals(command) => approvals::run(command).await,
            Command::Hooks(hooks::HooksCommand::Serve(args)) => hooks::serve(*args).await,
            Command::Hooks(hooks::HooksCommand::Install(args)) => hooks::install(&args),
            Command::Mcp(args) => mcp::run(*args).await,
            // Relayed before the runtime starts (`run_hook`).
            Command::Hook(_) => Err(CliError::Hooks(hookwire_hooks::Error::Config(
                "`hook` runs on its own runtime".into(),
            ))),
        };
        if let Some(t) = telemetry
            && let Err(e) = t.shutdown()
        {
            errln!("hookwire: {e}");
        }
        outcome
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// `hookwire hook`: every way it can end other than a relayed answer,
/// a panic included, is the agent's own block (exit status 2, or
/// Copilot's deny on stdout), since the agents let a step through on any
/// other failure.
fn run_hook(args: hooks::HookArgs) -> ExitCode {
    let agent = args.agent_name().to_owned();
    std::panic::set_hook(Box::new(move |info| {
        let code = hooks::block(&agent, &format!("hookwire hook: internal error: {info}"));
        std::process::exit(i32::from(code));
    }));
    // Blocking, no runtime; a stdin read still blocked in its thread (an
    // agent that never closed stdin) is not waited for.
    hooks::hook(&args)
}

/// The log filter when `RUST_LOG` is not set (as with `--otlp-endpoint`).
const DEFAULT_LOG_FILTER: &str = "warn";

/// Installs the process's `tracing` subscriber for a command that exports
/// nothing over OTLP (with `--otlp-endpoint`, the export installs one that
/// logs the same way): log lines on stderr, so that what a command prints
/// on stdout (`--print-records`, addresses, tables) stays parseable,
/// filtered by `RUST_LOG` (e.g. `RUST_LOG=hookwire_gateway=info` for the
/// gateway's access and applied lines), else `warn`. ANSI colours only on a
/// terminal.
fn install_logs() {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) => tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
            errln!("hookwire: RUST_LOG={directives:?} is not a filter ({e}); logging at {DEFAULT_LOG_FILTER}");
            tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)
        }),
        Err(_) => tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER),
    };
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if let Err(e) = tracing_subscriber::registry()
        .with(logs)
        .with(filter)
        .try_init()
    {
        errln!("hookwire: no log output: {e}");
    }
}
