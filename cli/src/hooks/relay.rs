//! `hookwire hook`: one command hook's payload relayed from stdin to the
//! daemon (over loopback TCP or its Unix socket) and the agent's output
//! printed; every failure is the agent's own block (exit status 2 with
//! the reason on stderr; for Copilot, which ignores a failing hook, its
//! deny on stdout). It runs on a one-thread runtime started before
//! anything else (`main.rs`), with no logging, telemetry or TLS set up:
//! an agent pays its start for every hook call.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hookwire_hooks::{Agent, CallOutcome, Endpoint, MAX_PAYLOAD_BYTES};

use super::{ENDPOINT_ENV, HOOKS_ADDR, TOKEN_ENV, token_from_file};

/// The options of `hookwire hook`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
# a Claude Code command hook (in .claude/settings.json), the daemon on loopback TCP\n  \
HOOKWIRE_HOOKS_TOKEN=... hookwire hook --agent claude-code\n\n  \
# the daemon on its Unix socket (no token needed)\n  \
hookwire hook --agent codex --endpoint \"unix:$XDG_RUNTIME_DIR/hookwire/hooks.sock\"\n\n  \
# by hand\n  \
echo '{\"session_id\":\"s1\",\"hook_event_name\":\"SessionStart\"}' | \\\n    \
hookwire hook --agent claude-code --token-file ~/.config/hookwire/hooks-token\n\n\
Exit status: 0 with the agent's output on stdout; 2 with the reason on stderr when \
the call is blocked because it could not be governed (daemon down, slow, refused, garbage); \
for copilot, which ignores a failing hook, 0 with its deny on stdout.")]
pub(crate) struct HookArgs {
    /// The agent whose hook payload arrives on stdin (`claude-code`,
    /// `codex`, `gemini-cli`, `cursor`, `copilot`).
    #[arg(long, value_name = "NAME")]
    agent: String,
    /// The daemon: `http://HOST:PORT` or `unix:/path/hooks.sock` (else
    /// `HOOKWIRE_HOOKS_ENDPOINT`, else `http://127.0.0.1:8790`).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The file holding the daemon's token (else `HOOKWIRE_HOOKS_TOKEN`;
    /// optional over a Unix socket).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// How long to wait for the daemon before blocking.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    timeout_ms: u64,
}

impl HookArgs {
    /// The agent named on the command line, as given.
    pub(crate) fn agent_name(&self) -> &str {
        &self.agent
    }
}

/// Relays one hook payload to the daemon; every failure is the agent's
/// own block with the reason on stderr.
pub(crate) async fn hook(args: HookArgs) -> ExitCode {
    match relay(&args).await {
        Ok(answer) => {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{answer}")
                .and_then(|()| out.flush())
                .is_err()
            {
                return ExitCode::from(block(
                    &args.agent,
                    "hookwire hook: cannot write the answer",
                ));
            }
            ExitCode::SUCCESS
        }
        Err(reason) => ExitCode::from(block(&args.agent, &format!("hookwire hook: {reason}"))),
    }
}

/// Blocks in agent `agent`'s terms: the reason on stderr, the agent's
/// deny on stdout where it reads one (Copilot), and the exit status it
/// blocks on (2 for an unknown agent); returns that status.
pub(crate) fn block(agent: &str, reason: &str) -> u8 {
    errln!("{reason}");
    let Ok(agent) = Agent::from_name(agent) else {
        return 2;
    };
    let (answer, code) = agent.command_failure(reason);
    if let Some(answer) = answer {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return 2;
        }
    }
    code
}

async fn relay(args: &HookArgs) -> Result<serde_json::Value, String> {
    let agent = Agent::from_name(&args.agent).map_err(|e| e.to_string())?;
    let endpoint = match &args.endpoint {
        Some(e) => e.clone(),
        None => std::env::var(ENDPOINT_ENV).unwrap_or_else(|_| format!("http://{HOOKS_ADDR}")),
    };
    let endpoint: Endpoint = endpoint
        .parse()
        .map_err(|e| format!("the hooks daemon endpoint {endpoint:?}: {e}"))?;
    let token = match &args.token_file {
        Some(path) => Some(token_from_file(path)?),
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) if !t.trim().is_empty() => Some(t),
            _ if endpoint.is_unix() => None,
            _ => return Err(format!("no token: pass --token-file or set {TOKEN_ENV}")),
        },
    };
    // One budget for reading the payload and asking the daemon: an agent
    // that never closes stdin is blocked in time, not waited on.
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    let started = tokio::time::Instant::now();
    let payload = tokio::time::timeout(timeout, read_stdin())
        .await
        .map_err(|_| {
            format!(
                "the hook payload did not arrive within {} ms",
                timeout.as_millis()
            )
        })??;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(format!(
            "the hook payload exceeds {MAX_PAYLOAD_BYTES} bytes"
        ));
    }
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    match hookwire_hooks::ask_daemon(&endpoint, token.as_deref(), agent, payload, left).await {
        Ok(CallOutcome::Answer(answer)) => Ok(answer),
        Ok(CallOutcome::FailedClosed(reason)) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads stdin to its end (at most one byte past the bound) on one
/// thread of its own, which is left behind if the agent never closes
/// stdin (`main.rs` does not wait for it). One plain thread rather than
/// the runtime's blocking pool, which may start two for one read.
async fn read_stdin() -> Result<Vec<u8>, String> {
    use std::io::Read;
    let (done, read) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("hook-stdin".into())
        .spawn(move || {
            let mut payload = Vec::new();
            let outcome = std::io::stdin()
                .lock()
                .take(MAX_PAYLOAD_BYTES as u64 + 1)
                .read_to_end(&mut payload)
                .map(|_| payload);
            let _ = done.send(outcome);
        })
        .map_err(|e| format!("cannot read the hook payload: {e}"))?;
    read.await
        .map_err(|_| "cannot read the hook payload: the reader stopped".to_owned())?
        .map_err(|e| format!("cannot read the hook payload: {e}"))
}
