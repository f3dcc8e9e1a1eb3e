//! `hookwire hooks serve` and `hookwire hook`: coding agents governed
//! through their own hooks (`hookwire-hooks`). The daemon is a long-lived
//! host answering each agent's hook payloads on its own route; the
//! command hook relays one payload from stdin to it and prints the
//! agent's output, failing closed in the agent's terms (exit 2, the
//! reason on stderr) when the daemon is down, slow or answers garbage.
//! See `docs/hooks.md`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hookwire_hooks::{Agent, CallOutcome, HooksConfig, HooksHost, Liftable, MAX_PAYLOAD_BYTES};
use tokio::io::AsyncReadExt;

use crate::args::RegistryArgs;
use crate::audit::RecordsArgs;
use crate::error::CliError;
use crate::governed::{Governed, HostOptions, PrintTo, governed_host};
use crate::metrics_endpoint::MetricsEndpoint;

/// Where the daemon listens unless told otherwise.
pub(crate) const HOOKS_ADDR: &str = "127.0.0.1:8790";
/// The environment variable naming the daemon for `hookwire hook`.
pub(crate) const ENDPOINT_ENV: &str = "HOOKWIRE_HOOKS_ENDPOINT";
/// The environment variable holding the daemon's token for `hookwire hook`.
pub(crate) const TOKEN_ENV: &str = "HOOKWIRE_HOOKS_TOKEN";

/// The `hooks` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HooksCommand {
    /// Serve the hook routes (`POST /v1/hooks/claude-code`, `/codex`, `/gemini-cli`)
    /// governed by a declared chain, until interrupted.
    Serve(Box<ServeArgs>),
    /// Write (or print) an agent's hook configuration pointing at
    /// `hookwire hook`, merged into its existing settings.
    Install(InstallArgs),
}

/// Where `hooks install` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Scope {
    /// `.claude/settings.json` under the current directory.
    Project,
    /// `~/.claude/settings.json`.
    User,
}

/// The options of `hookwire hooks install`.
#[derive(Debug, clap::Args)]
pub(crate) struct InstallArgs {
    /// The agent (`claude-code`).
    #[arg(long, value_name = "NAME")]
    agent: String,
    /// Which settings file to merge into.
    #[arg(long, value_enum, default_value = "project")]
    scope: Scope,
    /// Merge into this settings file instead of the scope's.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Print the merged settings instead of writing them.
    #[arg(long)]
    print: bool,
    /// The daemon's URL the hook command is given (else it reads
    /// `HOOKWIRE_HOOKS_ENDPOINT` when it runs).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The token file the hook command is given (else it reads
    /// `HOOKWIRE_HOOKS_TOKEN` when it runs).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

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
#[command(after_help = "Example:\n  \
hookwire hooks serve --declaration examples/declarations/policy.json \\\n    \
--token-file ~/.config/hookwire/hooks-token --print-records")]
pub(crate) struct ServeArgs {
    /// The host declaration whose chain governs every agent session.
    #[arg(long, value_name = "FILE")]
    declaration: PathBuf,
    /// The address to listen on (port 0: any free port, printed). Loopback
    /// only unless `--allow-remote`.
    #[arg(long, default_value = HOOKS_ADDR, value_name = "ADDR")]
    listen: SocketAddr,
    /// Listen on a non-loopback address (callers still need the token).
    #[arg(long)]
    allow_remote: bool,
    /// The file holding the bearer token hook callers must present.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "token_env",
        conflicts_with = "token_env"
    )]
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
    /// Print every interception record as a JSON line on stdout.
    #[arg(long)]
    print_records: bool,
    /// Serve the host's Prometheus metrics at `GET /metrics` on this
    /// address (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    records: RecordsArgs,
}

/// The options of `hookwire hook`.
#[derive(Debug, clap::Args)]
pub(crate) struct HookArgs {
    /// The agent whose hook payload arrives on stdin (`claude-code`,
    /// `codex`, `gemini-cli`).
    #[arg(long, value_name = "NAME")]
    agent: String,
    /// The daemon's base URL (else `HOOKWIRE_HOOKS_ENDPOINT`, else
    /// `http://127.0.0.1:8790`).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The file holding the daemon's token (else `HOOKWIRE_HOOKS_TOKEN`).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// How long to wait for the daemon before blocking.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    timeout_ms: u64,
}

/// A word of a shell command line, quoted when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@+".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Writes or prints the agent's hook configuration.
pub(crate) fn install(args: &InstallArgs) -> Result<(), CliError> {
    let config_error = |m: String| CliError::Hooks(hookwire_hooks::Error::Config(m));
    let agent = Agent::from_name(&args.agent)?;
    let bin = std::env::current_exe()
        .map_err(|e| config_error(format!("cannot locate the hookwire binary: {e}")))?;
    let mut command = format!(
        "{} hook --agent {}",
        shell_word(&bin.to_string_lossy()),
        agent.name()
    );
    if let Some(endpoint) = &args.endpoint {
        command.push_str(&format!(" --endpoint {}", shell_word(endpoint)));
    }
    if let Some(token) = &args.token_file {
        let token = std::path::absolute(token)
            .map_err(|e| config_error(format!("{}: {e}", token.display())))?;
        command.push_str(&format!(
            " --token-file {}",
            shell_word(&token.to_string_lossy())
        ));
    }
    let path = match (&args.settings, args.scope) {
        (Some(path), _) => path.clone(),
        (None, Scope::Project) => PathBuf::from(".claude/settings.json"),
        (None, Scope::User) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".claude/settings.json"),
            None => return Err(config_error("HOME is not set (use --settings FILE)".into())),
        },
    };
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(config_error(format!("cannot read {}: {e}", path.display()))),
    };
    let merged = hookwire_hooks::merge_settings(agent, existing.as_deref(), &command)
        .map_err(|e| config_error(format!("{}: {e}", path.display())))?;
    if args.print {
        print!("{merged}");
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| config_error(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Written beside the file and renamed over it: a reader sees the old
    // settings or the new ones, never half of them.
    let partial = path.with_extension("json.hookwire-partial");
    std::fs::write(&partial, merged)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| config_error(format!("cannot write {}: {e}", path.display())))?;
    println!(
        "hookwire hooks: {} hooks of {} point at `{command}`",
        agent.name(),
        path.display()
    );
    Ok(())
}

/// Reads a token from a file (trimmed, non-empty).
fn token_from_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    Ok(token.to_owned())
}

/// Serves the hook routes until Ctrl-C, then ends every open session.
pub(crate) async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let config_error = |m: String| CliError::Hooks(hookwire_hooks::Error::Config(m));
    if !args.allow_remote && !args.listen.ip().is_loopback() {
        return Err(config_error(format!(
            "{} is not a loopback address (pass --allow-remote to listen there)",
            args.listen
        )));
    }
    let token = match (&args.token_file, &args.token_env) {
        (Some(path), _) => token_from_file(path).map_err(config_error)?,
        (None, Some(var)) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
            _ => {
                return Err(config_error(format!(
                    "the environment variable {var} is unset or empty"
                )));
            }
        },
        (None, None) => {
            return Err(config_error(
                "a token (--token-file or --token-env) is required".into(),
            ));
        }
    };
    let options = HostOptions {
        agent_id: &args.agent_id,
        declaration: &args.declaration,
        registry: &args.registry,
        records: &args.records,
        print: args.print_records.then_some(PrintTo::Stdout),
        metrics_addr: args.metrics_addr,
        amend: None,
    };
    let (governed, _) = governed_host(options, |_| ()).await?;
    let Governed {
        host,
        signed,
        metrics_registry,
        metrics_listener,
    } = governed;
    let config = HooksConfig {
        max_sessions: args.max_sessions.max(1),
        idle_timeout: Duration::from_secs(args.idle_timeout_s.max(1)),
        liftable: match args.liftable {
            LiftableArg::Deny => Liftable::Deny,
            LiftableArg::Ask => Liftable::Ask,
        },
    };
    let hooks = Arc::new(HooksHost::new(host, config));
    let reaper = hooks.spawn_reaper();
    let router = hookwire_hooks::router(hooks.clone(), &token)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| hookwire_hooks::Error::Bind {
            addr: args.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| hookwire_hooks::Error::Bind {
            addr: args.listen,
            source,
        })?;
    let agents: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
    println!(
        "hookwire hooks: http://{addr} (routes /v1/hooks/{{{}}}), governed by {}",
        agents.join(","),
        args.declaration.display()
    );
    let metrics = MetricsEndpoint::serve(
        metrics_listener,
        metrics_registry,
        "hookwire hooks metrics: ",
    )?;
    let served = hookwire_hooks::serve(listener, router, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    reaper.abort();
    hooks.shutdown_all().await;
    let stopped = metrics.stop().await;
    served?;
    stopped?;
    signed.finish()
}

/// Relays one hook payload to the daemon; every failure is the agent's
/// blocking exit status with the reason on stderr.
pub(crate) async fn hook(args: HookArgs) -> ExitCode {
    match relay(&args).await {
        Ok(answer) => {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{answer}")
                .and_then(|()| out.flush())
                .is_err()
            {
                return block("hookwire hook: cannot write the answer");
            }
            ExitCode::SUCCESS
        }
        Err(reason) => block(&format!("hookwire hook: {reason}")),
    }
}

/// The blocking exit of every supported agent (2), the reason on stderr.
fn block(reason: &str) -> ExitCode {
    eprintln!("{reason}");
    ExitCode::from(Agent::ClaudeCode.blocking_exit_code())
}

async fn relay(args: &HookArgs) -> Result<serde_json::Value, String> {
    let agent = Agent::from_name(&args.agent).map_err(|e| e.to_string())?;
    let endpoint = match &args.endpoint {
        Some(e) => e.clone(),
        None => std::env::var(ENDPOINT_ENV).unwrap_or_else(|_| format!("http://{HOOKS_ADDR}")),
    };
    let token = match &args.token_file {
        Some(path) => token_from_file(path)?,
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) if !t.trim().is_empty() => t,
            _ => return Err(format!("no token: pass --token-file or set {TOKEN_ENV}")),
        },
    };
    // One budget for reading the payload and asking the daemon: an agent
    // that never closes stdin is blocked in time, not waited on.
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    let started = tokio::time::Instant::now();
    let mut payload = Vec::new();
    let mut stdin = tokio::io::stdin().take(MAX_PAYLOAD_BYTES as u64 + 1);
    let read = stdin.read_to_end(&mut payload);
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| {
            format!(
                "the hook payload did not arrive within {} ms",
                timeout.as_millis()
            )
        })?
        .map_err(|e| format!("cannot read the hook payload: {e}"))?;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(format!(
            "the hook payload exceeds {MAX_PAYLOAD_BYTES} bytes"
        ));
    }
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    match hookwire_hooks::ask_daemon(&endpoint, &token, agent, payload, left).await {
        Ok(CallOutcome::Answer(answer)) => Ok(answer),
        Ok(CallOutcome::FailedClosed(reason)) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}
