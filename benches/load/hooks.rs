//! The `hooks` section: what governing a coding agent through its own
//! hooks costs per decision. One Claude Code `PreToolUse` payload is
//! decided by `hookwire hooks serve` (its own process, the release
//! `hookwire` binary) whose host binds one remote allow interceptor (the
//! child's allow service, over gRPC in the services' process), reached
//! two ways:
//!
//! - through the real command hook `hookwire hooks install` writes,
//!   `hookwire-hook --agent claude-code` (the small binary beside
//!   `hookwire`), spawned per decision with the payload on stdin (what an
//!   agent with command hooks runs: process start, one HTTP/1.1 exchange
//!   and the daemon's decision), and the same through the `hookwire hook`
//!   subcommand of the whole binary;
//! - on the HTTP route, by one keep-alive HTTP/1.1 client (what an agent
//!   with HTTP hooks does);
//!
//! beside the floor an agent already pays for any command hook: a bare
//! process (`benches/support/fixed_decision.rs`) that reads the payload
//! and prints a fixed decision; and, to separate the command's own start
//! from the daemon's work, `hookwire hook` with no daemon listening
//! (start, connect refused, exit 2). The four alternate in rotating
//! rounds. Each decision is checked (`{}`, exit 0); each call carries a
//! tool use id of its own.
//!
//! The `hookwire` binary: `HOOKWIRE_BENCH_HOOKWIRE` names a prebuilt one
//! (with `hookwire-hook` beside it); else the section builds both
//! (`cargo build --release -p hookwire-cli --no-default-features --bin
//! hookwire --bin hookwire-hook`, into this bench's own target
//! directory, where the bench's release dependencies are reused). The
//! command's process start is the thing measured, so it must be the real
//! binary, and cargo cannot hand a bench another package's binary.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::Plan;
use crate::measure::{Op, Samples, sample};
use crate::report::Headline;

/// The floor: a command hook that prints a fixed decision.
const FIXED_DECISION: &str = env!("CARGO_BIN_EXE_hookwire-fixed-decision");
/// Names a prebuilt `hookwire` binary (skips the build).
const HOOKWIRE_ENV: &str = "HOOKWIRE_BENCH_HOOKWIRE";
/// The daemon's bearer token in the section.
const TOKEN: &str = "bench-hooks-token-6f1c";
/// Issue 28's targets: the command path's p50 at most this multiple of
/// the bare spawn's; the HTTP route's p50 at most this many µs.
const COMMAND_TARGET: f64 = 2.0;
const HTTP_BUDGET_US: f64 = 500.0;

/// The release `hookwire` binary: the named one, or built now.
fn hookwire_binary() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os(HOOKWIRE_ENV) {
        let named = PathBuf::from(named);
        return if named.is_file() {
            Ok(named)
        } else {
            Err(format!("{HOOKWIRE_ENV}={} is not a file", named.display()))
        };
    }
    // This bench runs as `<target>/release/deps/load-<hash>`.
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let release = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the bench is not in a target directory")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "hooks: building the release hookwire binaries \
         (cargo build --release -p hookwire-cli --no-default-features --bin hookwire \
         --bin hookwire-hook) ..."
    );
    let built = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "hookwire-cli",
            "--no-default-features",
            "--bin",
            "hookwire",
            "--bin",
            "hookwire-hook",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !built.success() {
        return Err(format!("cargo build of hookwire failed: {built}"));
    }
    let bin = release.join("hookwire");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("no hookwire binary at {}", bin.display()))
    }
}

/// `hookwire hooks serve` in its own process, killed when dropped.
struct Daemon {
    child: Child,
    _stderr: BufReader<ChildStderr>,
    addr: String,
    token_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start(bin: &Path, allow: &str) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let declaration = dir.path().join("hooks.json");
        let document = json!({
            "declaration": "agent-hooks-declaration/1.0",
            "spec": "agent-hooks/0.1",
            "id": "bench-hooks",
            "host": {"name": "hookwire", "version": "0.1.0"},
            "configuration": {"mode": "enforce",
                              "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                              "identity_provider": "jcs-sha256"},
            "bindings": [{"id": "allow", "kind": "hookwire.grpc",
                          "config": {"endpoint": allow},
                          "at": ["agent_startup", "input", "pre_tool_call", "post_tool_call",
                                 "output", "agent_shutdown"],
                          "timeout_ms": 5000}],
        });
        std::fs::write(&declaration, document.to_string()).map_err(|e| e.to_string())?;
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, TOKEN).map_err(|e| e.to_string())?;
        let mut child = Command::new(bin)
            .args(["hooks", "serve", "--listen", "127.0.0.1:0"])
            .arg("--declaration")
            .arg(&declaration)
            .arg("--token-file")
            .arg(&token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start hookwire hooks serve: {e}"))?;
        let mut stderr = BufReader::new(child.stderr.take().ok_or("no stderr")?);
        // The daemon says its address on stderr once bound, or exits (end
        // of file); log lines may come first.
        let mut said = String::new();
        let addr = loop {
            let mut line = String::new();
            match stderr.read_line(&mut line) {
                Ok(n) if n > 0 => {}
                _ => break None,
            }
            if line.starts_with("hookwire hooks: ") {
                break line
                    .split_whitespace()
                    .nth(2)
                    .and_then(|u| u.strip_prefix("http://"))
                    .map(str::to_owned);
            }
            if said.len() < 4096 {
                said.push_str(&line);
            }
        };
        match addr {
            Some(addr) => Ok(Self {
                child,
                _stderr: stderr,
                addr,
                token_file,
                _dir: dir,
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("hookwire hooks serve did not start: {said:?}"))
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Claude Code `PreToolUse` payloads of one session, each with a tool
/// use id of its own.
struct PreToolUse {
    session: &'static str,
    n: u64,
}

impl PreToolUse {
    fn next(&mut self) -> Vec<u8> {
        self.n += 1;
        json!({
            "session_id": self.session,
            "transcript_path": "/home/user/.claude/projects/bench/transcript.jsonl",
            "cwd": "/home/user/bench",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la", "description": "List the files"},
            "tool_use_id": format!("toolu_bench_{:08}", self.n),
        })
        .to_string()
        .into_bytes()
    }
}

/// Spawns `program args…`, writes `payload`, and returns its exit status
/// and stdout.
fn run(program: &Path, args: &[&str], payload: &[u8]) -> (Option<i32>, Vec<u8>) {
    let mut child = Command::new(program)
        .args(args)
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the hook");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(payload).expect("write the payload");
    drop(stdin);
    let out = child.wait_with_output().expect("the hook's output");
    (out.status.code(), out.stdout)
}

/// The bare spawn: a process printing a fixed decision.
struct Bare {
    payload: PreToolUse,
}

impl Op for Bare {
    async fn once(&mut self) {
        let (code, out) = run(Path::new(FIXED_DECISION), &[], &self.payload.next());
        assert_eq!((code, out.as_slice()), (Some(0), &b"{}\n"[..]));
    }
}

/// A command hook asking the daemon (or, with `expect_down`, with no
/// daemon at `endpoint`: it must block, exit 2): `program` with `prefix`
/// before its options (`hookwire hook`, or `hookwire-hook` alone).
struct HookCommand {
    bin: PathBuf,
    prefix: &'static [&'static str],
    endpoint: String,
    token_file: String,
    payload: PreToolUse,
    expect_down: bool,
}

impl Op for HookCommand {
    async fn once(&mut self) {
        let mut args: Vec<&str> = self.prefix.to_vec();
        args.extend([
            "--agent",
            "claude-code",
            "--endpoint",
            self.endpoint.as_str(),
            "--token-file",
            self.token_file.as_str(),
        ]);
        let (code, out) = run(&self.bin, &args, &self.payload.next());
        if self.expect_down {
            assert_eq!(code, Some(2), "no daemon: the hook blocks");
        } else {
            assert_eq!((code, out.as_slice()), (Some(0), &b"{}\n"[..]));
        }
    }
}

/// The HTTP route on one keep-alive connection.
struct HookHttp {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    payload: PreToolUse,
}

impl HookHttp {
    async fn connect(addr: &str, session: &'static str) -> Self {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connect the daemon");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(connection);
        Self {
            sender,
            host: addr.to_owned(),
            payload: PreToolUse { session, n: 0 },
        }
    }

    /// POSTs `body`; the answer's body (200 asserted).
    async fn post(&mut self, body: Vec<u8>) -> Bytes {
        let request = hyper::Request::post("/v1/hooks/claude-code")
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("a request");
        self.sender.ready().await.expect("the connection is open");
        let response = self
            .sender
            .send_request(request)
            .await
            .expect("the daemon answers");
        assert_eq!(response.status(), 200);
        response
            .into_body()
            .collect()
            .await
            .expect("the answer's body")
            .to_bytes()
    }

    /// Starts `session` and opens its turn, as an agent does first.
    async fn open(&mut self, session: &str) {
        for (event, extra) in [
            ("SessionStart", json!({"source": "startup"})),
            ("UserPromptSubmit", json!({"prompt": "list the files"})),
        ] {
            let mut body = json!({"session_id": session, "cwd": "/home/user/bench",
                                  "hook_event_name": event});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            let answer = self.post(body.to_string().into_bytes()).await;
            assert_eq!(&answer[..], b"{}", "{event}");
        }
    }
}

impl Op for HookHttp {
    async fn once(&mut self) {
        let body = self.payload.next();
        let answer = self.post(body).await;
        assert_eq!(&answer[..], b"{}");
    }
}

/// Adds the section's rows; fails when the binary or the daemon cannot
/// be had.
pub async fn section(plan: Plan, allow: &str, headline: &mut Vec<Headline>) -> Result<(), String> {
    let bin = hookwire_binary()?;
    let small = bin.with_file_name("hookwire-hook");
    if !small.is_file() {
        return Err(format!("no hookwire-hook beside {}", bin.display()));
    }
    eprintln!("hooks: hookwire-hook, hookwire hook and the HTTP route vs a bare spawn ...");
    let daemon = Daemon::start(&bin, allow)?;
    let mut http = HookHttp::connect(&daemon.addr, "bench-http").await;
    http.open("bench-command").await;
    http.open("bench-http").await;
    let token_file = daemon.token_file.to_string_lossy().into_owned();
    let mut command = HookCommand {
        bin: small.clone(),
        prefix: &[],
        endpoint: format!("http://{}", daemon.addr),
        token_file: token_file.clone(),
        payload: PreToolUse {
            session: "bench-command",
            n: 0,
        },
        expect_down: false,
    };
    let mut subcommand = HookCommand {
        bin: bin.clone(),
        prefix: &["hook"],
        endpoint: format!("http://{}", daemon.addr),
        token_file: token_file.clone(),
        payload: PreToolUse {
            session: "bench-subcommand",
            n: 0,
        },
        expect_down: false,
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let down_endpoint = format!("http://{}", closed.local_addr().map_err(|e| e.to_string())?);
    drop(closed);
    let mut down = HookCommand {
        bin: small,
        prefix: &[],
        endpoint: down_endpoint,
        token_file,
        payload: PreToolUse {
            session: "bench-down",
            n: 0,
        },
        expect_down: true,
    };
    let mut bare = Bare {
        payload: PreToolUse {
            session: "bench-bare",
            n: 0,
        },
    };
    let (mut s_cmd, mut s_sub, mut s_down, mut s_http, mut s_bare) = (
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
    );
    let mut discard = Samples::default();
    sample(&mut command, 5, &mut discard).await;
    sample(&mut subcommand, 5, &mut discard).await;
    sample(&mut down, 5, &mut discard).await;
    sample(&mut http, 50, &mut discard).await;
    sample(&mut bare, 5, &mut discard).await;
    let (spawns, requests) = (plan.spawn_per_round, plan.remote_per_round);
    for r in 0..plan.spawn_rounds {
        // Each of the five in each position over the rounds.
        for k in 0..5 {
            match (r + k) % 5 {
                0 => sample(&mut command, spawns, &mut s_cmd).await,
                1 => sample(&mut down, spawns, &mut s_down).await,
                2 => sample(&mut http, requests, &mut s_http).await,
                3 => sample(&mut subcommand, spawns, &mut s_sub).await,
                _ => sample(&mut bare, spawns, &mut s_bare).await,
            }
        }
    }
    drop(daemon);
    headline.push(Headline::latency(
        "Claude Code PreToolUse through `hookwire-hook` (process start + daemon + 1 remote allow interceptor) vs a bare spawn printing a fixed decision".into(),
        &s_cmd,
        &s_bare,
        "hook_command_vs_spawn",
        Some((COMMAND_TARGET, false)),
    ));
    headline.push(Headline::latency(
        "the same through the `hookwire hook` subcommand (the whole binary's start) vs the bare spawn".into(),
        &s_sub,
        &s_bare,
        "",
        None,
    ));
    headline.push(Headline::latency(
        "`hookwire-hook` with no daemon listening (its start, connect refused, exit 2) vs the bare spawn".into(),
        &s_down,
        &s_bare,
        "",
        None,
    ));
    headline.push(Headline::latency(
        "the same PreToolUse on the HTTP route (one keep-alive client) vs the bare spawn".into(),
        &s_http,
        &s_bare,
        "",
        None,
    ));
    headline.push(Headline::ratio_only(
        "HTTP route p50 / 0.5 ms",
        s_http.median() / HTTP_BUDGET_US,
        "hook_http_vs_budget",
        (1.0, false),
    ));
    eprintln!(
        "hooks: hookwire-hook p50 {:.0} µs (p99 {:.0}), hookwire hook {:.0} µs, no daemon {:.0} µs, HTTP p50 {:.0} µs (p99 {:.0}), bare spawn {:.0} µs (p99 {:.0}); \
         command / spawn = {:.2} (target ≤ {COMMAND_TARGET}), HTTP p50 / 0.5 ms = {:.2} (target ≤ 1)",
        s_cmd.median(),
        s_cmd.pct(99.0),
        s_sub.median(),
        s_down.median(),
        s_http.median(),
        s_http.pct(99.0),
        s_bare.median(),
        s_bare.pct(99.0),
        s_cmd.median() / s_bare.median(),
        s_http.median() / HTTP_BUDGET_US,
    );
    Ok(())
}
