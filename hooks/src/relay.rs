//! One command hook call, end to end, as both `hookwire hook` and the
//! small `hookwire-hook` binary run it: the agent's payload read from
//! stdin (bounded in size and, with the call, in time), the daemon found
//! (`--endpoint`, else `HOOKWIRE_HOOKS_ENDPOINT`, else loopback TCP) and
//! asked (module `call`), and its answer printed on stdout. Every failure
//! is the agent's own block: the reason on stderr, the agent's deny on
//! stdout where it reads one (Copilot), and the exit status it blocks on.
//! Blocking and runtime-free: an agent pays this start on every hook call.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::agents::Agent;
use crate::call::{CallOutcome, Endpoint, ask_daemon};
use crate::serve::MAX_PAYLOAD_BYTES;

/// Where the daemon listens unless told otherwise.
pub const HOOKS_ADDR: &str = "127.0.0.1:8790";
/// The environment variable naming the daemon for a command hook.
pub const ENDPOINT_ENV: &str = "HOOKWIRE_HOOKS_ENDPOINT";
/// The environment variable holding the daemon's token for a command
/// hook.
pub const TOKEN_ENV: &str = "HOOKWIRE_HOOKS_TOKEN";
/// How long a command hook waits for the payload and the daemon unless
/// told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one command hook call is told on its command line.
#[derive(Debug, Clone)]
pub struct RelayArgs {
    /// The agent whose payload arrives on stdin, as named.
    pub agent: String,
    /// The daemon (`http://HOST:PORT` or `unix:/path`), if named.
    pub endpoint: Option<String>,
    /// The file holding the daemon's token, if named.
    pub token_file: Option<PathBuf>,
    /// The budget for reading the payload and asking the daemon.
    pub timeout: Duration,
}

/// Relays one hook payload and returns the exit status: 0 with the
/// agent's output on stdout, else the agent's block (see the module
/// docs). `name` is the command as the reason names it.
pub fn relay(args: &RelayArgs, name: &str) -> u8 {
    match ask(args) {
        Ok(answer) => {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{answer}")
                .and_then(|()| out.flush())
                .is_err()
            {
                return block(&args.agent, &format!("{name}: cannot write the answer"));
            }
            0
        }
        Err(reason) => block(&args.agent, &format!("{name}: {reason}")),
    }
}

/// Blocks in agent `agent`'s terms: the reason on stderr, the agent's
/// deny on stdout where it reads one (Copilot), and the exit status it
/// blocks on (2 for an unknown agent); returns that status.
pub fn block(agent: &str, reason: &str) -> u8 {
    let _ = writeln!(std::io::stderr().lock(), "{reason}");
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

/// Reads a token from a file (trimmed, non-empty).
pub fn token_from_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    Ok(token.to_owned())
}

fn ask(args: &RelayArgs) -> Result<serde_json::Value, String> {
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
    let timeout = args.timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let payload = read_stdin(timeout)?;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(format!(
            "the hook payload exceeds {MAX_PAYLOAD_BYTES} bytes"
        ));
    }
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    match ask_daemon(&endpoint, token.as_deref(), agent, &payload, left) {
        Ok(CallOutcome::Answer(answer)) => Ok(answer),
        Ok(CallOutcome::FailedClosed(reason)) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads stdin to its end (at most one byte past the bound) on a thread
/// of its own, which is left behind if the agent never closes stdin (the
/// process exits without waiting for it).
fn read_stdin(timeout: Duration) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let (done, read) = std::sync::mpsc::sync_channel(1);
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
    match read.recv_timeout(timeout) {
        Ok(Ok(payload)) => Ok(payload),
        Ok(Err(e)) => Err(format!("cannot read the hook payload: {e}")),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the hook payload did not arrive within {} ms",
            timeout.as_millis()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("cannot read the hook payload: the reader stopped".into())
        }
    }
}
