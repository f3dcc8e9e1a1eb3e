//! `hookwire hooks serve` and `hookwire hook`, run as an operator and an
//! agent run them: the daemon governed by a Rego policy service
//! (`hookwire policy serve`), Claude Code's golden payloads
//! (`tests/fixtures/hooks/claude-code/`) through the command hook and the
//! HTTP route, every verdict kind and every way the command fails closed
//! (exit 2, the reason on stderr).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::gateway::{Running, line_starting, lines_of, policy_serve};

pub(crate) const TOKEN: &str = "hooks-test-token-5b1e";

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks")
}

pub(crate) fn golden(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("claude-code").join(format!("{name}.json"))).unwrap()
}

/// The policy service, the daemon over it, and where to reach it.
pub(crate) struct Daemon {
    _policy: Running,
    pub(crate) daemon: Running,
    /// Its stdout: the records, and nothing else.
    pub(crate) records: mpsc::Receiver<String>,
    /// Its stderr: the address, the metrics URL, log lines.
    pub(crate) said: mpsc::Receiver<String>,
    pub(crate) base: String,
    pub(crate) token_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    pub(crate) fn start(extra: &[&str]) -> Self {
        Self::start_with("127.0.0.1:0", true, extra)
    }

    /// The daemon on `listen` (`HOST:PORT` or `unix:/path`), with or
    /// without its token file.
    pub(crate) fn start_with(listen: &str, with_token: bool, extra: &[&str]) -> Self {
        let bin = env!("CARGO_BIN_EXE_hookwire");
        let (policy, endpoint) = policy_serve(&fixtures().join("policy"));
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
        let said = crate::operable::stderr_lines(&mut daemon);
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

    pub(crate) fn hook(&self, payload: &[u8]) -> Output {
        hook(&self.base, Some(&self.token_file), payload, &[])
    }

    /// The points of the records printed so far, for session `session`.
    pub(crate) fn points(&self, session: &str) -> Vec<String> {
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
pub(crate) fn hook(
    endpoint: &str,
    token_file: Option<&Path>,
    payload: &[u8],
    extra: &[&str],
) -> Output {
    hook_as("claude-code", endpoint, token_file, payload, extra)
}

/// Runs `hookwire hook --agent AGENT` with `payload` on stdin.
pub(crate) fn hook_as(
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
pub(crate) enum Program {
    /// `hookwire hook`.
    Subcommand,
    /// The small `hookwire-hook` binary.
    Small,
}

impl Program {
    fn command(self) -> Command {
        match self {
            Self::Subcommand => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_hookwire"));
                c.arg("hook");
                c
            }
            Self::Small => Command::new(env!("CARGO_BIN_EXE_hookwire-hook")),
        }
    }
}

/// Runs `program --agent AGENT` with `payload` on stdin.
pub(crate) fn hook_via(
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
pub(crate) fn answer(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON answer")
}

/// The reason of a hook that failed closed: exit 2, nothing on stdout.
pub(crate) fn failed_closed(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(crate) fn pre_tool_decision(v: &Value) -> (&str, &str) {
    let o = &v["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse", "{v}");
    (
        o["permissionDecision"].as_str().unwrap(),
        o["permissionDecisionReason"].as_str().unwrap(),
    )
}

#[test]
fn every_verdict_kind_through_the_command_hook() {
    let d = Daemon::start(&[]);
    assert_eq!(answer(&d.hook(&golden("session-start"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("user-prompt-submit"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("pre-tool-use-bash"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("pre-tool-use-mcp"))), json!({}));
    let denied = answer(&d.hook(&golden("pre-tool-use-bash-destructive")));
    assert_eq!(
        pre_tool_decision(&denied),
        (
            "deny",
            "hookwire: denied at pre_tool_call: policy:destructive_command — Bash may not delete files recursively"
        )
    );
    let rewritten = answer(&d.hook(&golden("pre-tool-use-bash-rewritten")));
    assert_eq!(pre_tool_decision(&rewritten).0, "allow");
    assert_eq!(
        rewritten["hookSpecificOutput"]["updatedInput"],
        json!({"command": "make deploy DRY_RUN=1", "description": "Deploy"})
    );
    let review = answer(&d.hook(&golden("pre-tool-use-bash-review")));
    assert_eq!(
        pre_tool_decision(&review),
        (
            "deny",
            "hookwire: denied at pre_tool_call pending approval: policy:needs_review"
        )
    );
    let secret = answer(&d.hook(&golden("post-tool-use-bash-secret")));
    assert_eq!(
        secret,
        json!({"decision": "block", "reason": "hookwire: denied at post_tool_call: policy:secret_in_output"})
    );
    assert_eq!(answer(&d.hook(&golden("post-tool-use-write"))), json!({}));
    let unfinished = answer(&d.hook(&golden("stop-unfinished")));
    assert_eq!(
        unfinished,
        json!({"decision": "block", "reason": "hookwire: denied at output: policy:unfinished"})
    );
    // The stop closed the turn; the next prompt is denied.
    let injected = answer(&d.hook(&golden("user-prompt-submit-injection")));
    assert_eq!(injected["decision"], "block");
    // With no turn open, a stop opens a synthetic one first.
    assert_eq!(answer(&d.hook(&golden("stop"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("session-end"))), json!({}));
    assert_eq!(
        d.points("claude-code:abc123"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            // `post-tool-use-write` had no pre: its pre_tool_call is
            // emitted before its post (both unpaired).
            "pre_tool_call",
            "post_tool_call",
            "output",
            "input",
            "input",
            "output",
            "agent_shutdown",
        ]
    );
}

#[test]
fn a_liftable_deny_asks_the_user_when_told_to() {
    let d = Daemon::start(&["--liftable", "ask"]);
    let review = answer(&d.hook(&golden("pre-tool-use-bash-review")));
    assert_eq!(pre_tool_decision(&review).0, "ask");
    // A tool event first: the session is started and a turn opened,
    // both recorded.
    assert_eq!(
        d.points("claude-code:abc123"),
        ["agent_startup", "input", "pre_tool_call"]
    );
}

#[test]
fn an_event_hookwire_does_not_govern_fails_closed() {
    let d = Daemon::start(&[]);
    let reason = failed_closed(&d.hook(&golden("notification")));
    assert!(
        reason.contains("\"Notification\" is not governed"),
        "{reason}"
    );
    let reason = failed_closed(&d.hook(b"{not json"));
    assert!(reason.contains("not JSON"), "{reason}");
    let big = vec![b' '; (1 << 20) + 1];
    let reason = failed_closed(&d.hook(&big));
    assert!(reason.contains("exceeds 1048576 bytes"), "{reason}");
}

#[test]
fn the_command_fails_closed_without_a_usable_daemon() {
    let d = Daemon::start(&[]);
    let payload = golden("pre-tool-use-bash");
    // No token, a wrong token, an unknown agent.
    let reason = failed_closed(&hook(&d.base, None, &payload, &[]));
    assert!(reason.contains("no token"), "{reason}");
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-token").unwrap();
    let reason = failed_closed(&hook(&d.base, Some(&wrong), &payload, &[]));
    assert!(reason.contains("401"), "{reason}");
    assert!(!reason.contains("not-the-token"), "{reason}");
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hook", "--agent", "windsurf", "--endpoint", &d.base])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(failed_closed(&out).contains("unknown agent"));

    // An agent that never closes stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hook", "--agent", "claude-code", "--endpoint", &d.base])
        .arg("--token-file")
        .arg(&d.token_file)
        .args(["--timeout-ms", "300"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held_open = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    drop(held_open);
    let reason = failed_closed(&out);
    assert!(reason.contains("did not arrive within 300 ms"), "{reason}");

    // Down, slow, garbage.
    crate::hooks_faults::each_failure("claude-code", &d.token_file, &payload, failed_closed);
}

/// POSTs `body` to `path` on `base`; the status, the failed-closed
/// header and the body.
pub(crate) fn post(
    base: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> (u16, Option<String>, String) {
    let authorization = token.map(|t| format!("Bearer {t}"));
    post_authorized(base, path, authorization.as_deref(), body)
}

/// [`post`] with `authorization` as the header's whole value.
fn post_authorized(
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

#[test]
fn the_http_route_answers_in_the_agents_format() {
    let d = Daemon::start(&[]);
    let route = "/v1/hooks/claude-code";
    let payload = golden("pre-tool-use-bash-destructive");
    assert_eq!(post(&d.base, route, None, &payload).0, 401);
    assert_eq!(post(&d.base, route, Some("wrong"), &payload).0, 401);
    // The scheme is case-insensitive (RFC 9110); anything but `Bearer`
    // and a token68 is refused like a wrong token.
    for malformed in [
        TOKEN.to_owned(),
        format!("Basic {TOKEN}"),
        format!("Bearer {TOKEN},x"),
        format!("Bearer\t{TOKEN}"),
        "Bearer".to_owned(),
    ] {
        let (status, _, _) = post_authorized(&d.base, route, Some(&malformed), &payload);
        assert_eq!(status, 401, "{malformed:?}");
    }
    assert_eq!(
        post(&d.base, "/v1/hooks/windsurf", Some(TOKEN), &payload).0,
        404
    );
    let lower = format!("bearer  {TOKEN}");
    let (status, failed, body) = post_authorized(&d.base, route, Some(&lower), &payload);
    assert_eq!((status, failed), (200, None));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(pre_tool_decision(&v).0, "deny");
    // Codex speaks the same format on its own route, its own session.
    let (status, _, body) = post(
        &d.base,
        "/v1/hooks/codex",
        Some(TOKEN),
        &golden("pre-tool-use-bash"),
    );
    assert_eq!((status, body.as_str()), (200, "{}"));
    // What cannot be read stops the agent, still with a 200 (an HTTP
    // hook's non-2xx status would let the step through).
    let (status, failed, body) = post(&d.base, route, Some(TOKEN), &golden("notification"));
    assert_eq!(status, 200);
    assert!(failed.unwrap().contains("not governed"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["continue"], false);
    assert_eq!(
        d.points("claude-code:abc123"),
        ["agent_startup", "input", "pre_tool_call"]
    );
}

#[test]
fn hooks_serve_refuses_a_non_loopback_address_and_a_missing_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .args([
            "--listen",
            "0.0.0.0:0",
            "--token-env",
            "HOOKWIRE_TEST_HOOKS_TOKEN",
        ])
        .env("HOOKWIRE_TEST_HOOKS_TOKEN", "t")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token-file"));
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "serve", "--declaration", "/nonexistent.json"])
        .args(["--token-env", "HOOKWIRE_TEST_HOOKS_UNSET"])
        .env_remove("HOOKWIRE_TEST_HOOKS_UNSET")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unset or empty"));
}

/// `hookwire-hook` and `hookwire hook` run the one relay: they take turns
/// in one agent session and govern it as one, and the small binary fails
/// closed as the subcommand does.
#[test]
fn the_small_binary_and_the_subcommand_govern_one_session_alike() {
    use Program::{Small, Subcommand};
    let d = Daemon::start(&[]);
    let via = |program, name: &str| {
        hook_via(
            program,
            "claude-code",
            &d.base,
            Some(&d.token_file),
            &golden(name),
            &[],
        )
    };
    assert_eq!(answer(&via(Small, "session-start")), json!({}));
    assert_eq!(answer(&via(Subcommand, "user-prompt-submit")), json!({}));
    assert_eq!(answer(&via(Small, "pre-tool-use-bash")), json!({}));
    let denied = answer(&via(Small, "pre-tool-use-bash-destructive"));
    assert_eq!(pre_tool_decision(&denied).0, "deny");
    let secret = answer(&via(Subcommand, "post-tool-use-bash-secret"));
    assert_eq!(secret["decision"], "block");
    assert_eq!(answer(&via(Small, "session-end")), json!({}));
    assert_eq!(
        d.points("claude-code:abc123"),
        [
            "agent_startup",
            "input",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );

    let payload = golden("pre-tool-use-bash");
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &d.base,
        None,
        &payload,
        &[],
    ));
    assert!(reason.starts_with("hookwire-hook: no token"), "{reason}");
    let reason = failed_closed(&hook_via(Small, "windsurf", &d.base, None, &payload, &[]));
    assert!(reason.contains("unknown agent"), "{reason}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &down,
        Some(&d.token_file),
        &payload,
        &[],
    ));
    assert!(reason.contains("unreachable"), "{reason}");
    let reason = failed_closed(&hook_via(
        Small,
        "claude-code",
        &d.base,
        Some(&d.token_file),
        &payload,
        &["--timeout-ms", "soon"],
    ));
    assert!(
        reason.contains("--timeout-ms takes milliseconds"),
        "{reason}"
    );
    let help = Command::new(env!("CARGO_BIN_EXE_hookwire-hook"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Usage: hookwire-hook --agent NAME") && text.contains("Example"),
        "{text}"
    );
}
