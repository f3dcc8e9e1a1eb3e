//! `hookwire hook`: one command hook's payload relayed from stdin to the
//! daemon (over loopback TCP or its Unix socket) and the agent's output
//! printed; every failure is the agent's own block (exit status 2 with
//! the reason on stderr; for Copilot, which ignores a failing hook, its
//! deny on stdout). The call itself is `hookwire_hooks::relay`, which the
//! small `hookwire-hook` binary runs too; it blocks on one thread, before
//! any runtime, logging, telemetry or TLS is set up (`main.rs`): an agent
//! pays its start for every hook call.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hookwire_hooks::relay::RelayArgs;

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

    fn relay_args(&self) -> RelayArgs {
        RelayArgs {
            agent: self.agent.clone(),
            endpoint: self.endpoint.clone(),
            token_file: self.token_file.clone(),
            timeout: Duration::from_millis(self.timeout_ms),
        }
    }
}

/// Relays one hook payload to the daemon; every failure is the agent's
/// own block with the reason on stderr.
pub(crate) fn hook(args: &HookArgs) -> ExitCode {
    ExitCode::from(hookwire_hooks::relay::relay(
        &args.relay_args(),
        "hookwire hook",
    ))
}

/// Blocks in agent `agent`'s terms (`hookwire_hooks::relay::block`).
pub(crate) fn block(agent: &str, reason: &str) -> u8 {
    hookwire_hooks::relay::block(agent, reason)
}
