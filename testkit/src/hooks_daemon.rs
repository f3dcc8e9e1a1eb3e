//! `hookwire hooks serve` and `hookwire hook` run as a coding agent's
//! hooks run them, for the command's tests and the hooks daemon's own:
//! [`Daemon`] serves the daemon (the built command,
//! [`hookwire_bin`]) over `hookwire policy serve` of the coding-agent
//! Rego policy (`tests/fixtures/hooks/policy/`), with a token file, its
//! records printed; [`hook_via`] runs a command hook with a payload on
//! stdin (the golden payloads of `tests/fixtures/hooks/`, [`golden`]);
//! [`post`] is an agent's HTTP hook; [`answer`], [`failed_closed`] and
//! [`pre_tool_decision`] read what came back.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::child::{Running, line_starting, policy_serve, stderr_lines, stdout_lines as lines_of};
use crate::workspace::{hookwire_bin, workspace_root};

/// The daemon's bearer token (its token file holds it).
pub const TOKEN: &str = "hooks-test-token-5b1e";

/// The coding agents' fixtures: `tests/fixtures/hooks/` (their golden
/// payloads by agent, the Rego policy).
pub fn fixtures() -> PathBuf {
    workspace_root().join("tests/fixtures/hooks")
}

/// Claude Code's golden payload `name`.
pub fn golden(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("claude-code").join(format!("{name}.json"))).unwrap()
}

/// The policy service, the daemon over it, and where to reach it.
pub struct Daemon {
    _policy: Running,
    /// The `hookwire hooks serve` process.
    pub daemon: Running,
    /// Its stdout: the records, and nothing else.
    pub records: mpsc::Receiver<String>,
    /// Its stderr: the address, the metrics URL, log lines.
    pub said: mpsc::Receiver<String>,
    /// Its base URL, `http://ADDR` (or the socket's `unix:` endpoint).
    pub base: String,
    /// The file holding [`TOKEN`].
    pub token_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// The daemon on a free loopback port with its token, `extra` flags
    /// added.
    pub fn start(extra: &[&str]) -> Self {
        Self::start_with("127.0.0.1:0", true, extra)
    }

    /// The daemon on `listen` (`HOST:PORT` or `unix:/path`), with or
    /// without its token file.
    pub fn start_with(listen: &str, with_token: bool, extra: &[&str]) -> Self {
        let bin = hookwire_bin();
        let (policy, endpoint) = policy_serve(&bin, &fixtures().join("policy"));
        let dir = tempfile::tempdir().unwrap();
        let declaration = dir.path().join("hooks.json");
        let document = json!({
            "declaration": "agent-hooks-declaration/1.0",
            "spec": "agent-hooks/0.1",
            "id": "cli-hooks",
            "host": {"name": "hookwire", "version": "0.1.0"},
            "configuration": {"mode": "enforce",
                              "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                              "identity_provider": "jcs-sha256"},
            "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                          "config": {"endpoint": endpoint,
                                     "mutation": ["$target.command", "$target.content", "$target.llmContent"]},
                          "at": ["input", "pre_model_call", "post_model_call", "pre_tool_call",
                                 "post_tool_call", "output"],
                          "timeout_ms": 2000},
                         {"id": "passthrough", "kind": "hookwire.allow"}],
        });
        std::fs::write(&declaration, document.to_string()).unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut daemon = Command::new(bin);
        daemon
            .args(["hooks", "serve", "--listen", listen, "--print-records"])
            .arg("--declaration")
            .arg(&declaration);
        if with_token {
            daemon.arg("--token-file").arg(&token_file);
        }
        let mut daemon = daemon
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hookwire hooks serve");
        let records = lines_of(&mut daemon);
        let said = stderr_lines(&mut daemon);
        let daemon = Running(daemon);
        let banner = line_starting(&said, "hookwire hooks: ");
        let base = banner.split_whitespace().nth(2).unwrap().to_owned();
        Self {
            _policy: policy,
            daemon,
            records,
            said,
            base,
            token_file,
            _dir: dir,
        }
    }

    /// Runs `hookwire hook --agent claude-code` against it with `payload`.
    pub fn hook(&self, payload: &[u8]) -> Output {
        hook(&self.base, Some(&self.token_file), payload, &[])
    }

    /// The points of the records printed so far, for session `session`.
    pub fn points(&self, session: &str) -> Vec<String> {
        let mut points = Vec::new();
        while let Ok(line) = self.records.recv_timeout(Duration::from_millis(500)) {
            // Stdout carries only records: every line is one.
            let record: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is not JSON lines ({e}): {line:?}"));
            if record["session_id"] == session {
                points.push(record["interception_point"].as_str().unwrap().to_owned());
            }
        }
        points
    }
}

/// Runs `hookwire hook --agent claude-code` with `payload` on stdin.
pub fn hook(endpoint: &str, token_file: Option<&Path>, payload: &[u8], extra: &[&str]) -> Output {
    hook_as("claude-code", endpoint, token_file, payload, extra)
}

/// Runs `hookwire hook --agent AGENT` with `payload` on stdin.
pub fn hook_as(
    agent: &str,
    endpoint: &str,
    token_file: Option<&Path>,
    payload: &[u8],
    extra: &[&str],
) -> Output {
    hook_via(
        Program::Subcommand,
        agent,
        endpoint,
        token_file,
        payload,
        extra,
    )
}

/// Which command hook runs.
#[derive(Clone, Copy, Debug)]
pub enum Program {
    /// `hookwire hook`.
    Subcommand,
    /// The small `hookwire-hook` binary.
    Small,
}

impl Program {
    fn command(self) -> Command {
        match self {
            Self::Subcommand => {
                let mut c = Command::new(hookwire_bin());
                c.arg("hook");
                c
            }
            Self::Small => Command::new(hookwire_bin().with_file_name("hookwire-hook")),
        }
    }
}

/// Runs `program --agent AGENT` with `payload` on stdin.
pub fn hook_via(
    program: Program,
    agent: &str,
    endpoint: &str,
    token_file: Option<&Path>,
    payload: &[u8],
    extra: &[&str],
) -> Output {
    let mut command = program.command();
    command
        .args(["--agent", agent, "--endpoint", endpoint])
        .args(extra)
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(f) = token_file {
        command.arg("--token-file").arg(f);
    }
    let mut child = command.spawn().expect("run hookwire hook");
    let mut stdin = child.stdin.take().unwrap();
    let payload = payload.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&payload);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The answer of a hook that exited 0.
pub fn answer(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON answer")
}

/// The reason of a hook that failed closed: exit 2, nothing on stdout.
pub fn failed_closed(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The decision and reason of a `PreToolUse` answer.
pub fn pre_tool_decision(v: &Value) -> (&str, &str) {
    let o = &v["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse", "{v}");
    (
        o["permissionDecision"].as_str().unwrap(),
        o["permissionDecisionReason"].as_str().unwrap(),
    )
}

/// POSTs `body` to `path` on `base`; the status, the failed-closed
/// header and the body.
pub fn post(
    base: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> (u16, Option<String>, String) {
    let authorization = token.map(|t| format!("Bearer {t}"));
    post_authorized(base, path, authorization.as_deref(), body)
}

/// [`post`] with `authorization` as the header's whole value.
pub fn post_authorized(
    base: &str,
    path: &str,
    authorization: Option<&str>,
    body: &[u8],
) -> (u16, Option<String>, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let auth = authorization.map_or(String::new(), |v| format!("Authorization: {v}\r\n"));
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let failed = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("hookwire-failed-closed")
            .then(|| value.trim().to_owned())
    });
    (status, failed, body.to_owned())
}

/// Runs `command` with `payload` on its stdin; what it printed and its
/// exit status.
pub fn run_with_stdin(mut command: Command, payload: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}
