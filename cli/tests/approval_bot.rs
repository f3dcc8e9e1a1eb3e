//! The Python package's approver client (`hookwire.approvals`) driven by
//! its example bot (`sdks/python/examples/approval_bot.py`) against a real
//! `hookwire approvals serve` on loopback and a host whose policy
//! escalates every tool call: the bot's approval lifts the escalation of
//! an allowlisted tool, its rejection of another tool denies with its
//! reason, and a bot holding a wrong token is refused and exits.
//!
//! Needs the venv `scripts/setup.sh` makes (the package installed).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookwire::ResolvedBy;
use hookwire_client::{InputRole, StreamResolver, ToolCall};
use hookwire_testkit::Scripted;
use serde_json::json;

const HOST_TOKEN: &str = "hwa_bot_test_host_0123456789abcdef0123456789ab";
const BOT_TOKEN: &str = "hwa_bot_test_bot_0123456789abcdef0123456789abc";
/// Bound on every line awaited from a child.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);

/// A child process, killed on drop, its stdout and stderr lines readable.
struct Spawned {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Spawned {
    fn start(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let (tx, lines) = mpsc::channel();
        for out in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
        }
        Self { child, lines }
    }

    /// The first line from now on that `wanted` accepts.
    fn line(&self, wanted: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + LINE_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => seen.push(line),
                Err(e) => panic!("no awaited line ({e}); output so far:\n{}", seen.join("\n")),
            }
        }
    }
}

fn bot(endpoint: &str, token: &str) -> Spawned {
    let script = hookwire_testkit::workspace_root().join("sdks/python/examples/approval_bot.py");
    Spawned::start(
        Command::new(hookwire_testkit::python_venv(&["hookwire.approvals"]))
            .arg(script)
            .args(["--endpoint", endpoint, "--allow", "read_file,list_dir"])
            .args(["--reason", "policy:not_allowlisted"])
            .env("HOOKWIRE_APPROVER_TOKEN", token),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_bot_approves_allowlisted_tools_and_rejects_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let access = dir.path().join("access.json");
    let sha = hookwire_approvals::auth::token_sha256;
    std::fs::write(
        &access,
        json!({
            "hosts": [{"name": "agent", "token_sha256": sha(HOST_TOKEN)}],
            "approvers": [{"name": "bot", "token_sha256": sha(BOT_TOKEN)}],
        })
        .to_string(),
    )
    .expect("access list");
    let service = Spawned::start(
        Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args([
                "approvals",
                "serve",
                "--grpc-addr",
                "127.0.0.1:0",
                "--no-web",
            ])
            .arg("--access")
            .arg(&access),
    );
    let endpoint = service
        .line(|l| l.starts_with("approval service:"))
        .split_whitespace()
        .last()
        .expect("the endpoint")
        .to_owned();

    // A wrong token is refused: the bot says so and exits.
    let mut refused = bot(&endpoint, "hwa_not_a_token_of_this_service_0123456789ab");
    let said = refused.line(|l| l.contains("approval_bot:"));
    assert!(said.contains("UNAUTHENTICATED"), "{said}");
    assert!(!said.contains("hwa_"), "the token is never printed: {said}");
    let status = refused.child.wait().expect("the refused bot exits");
    assert_eq!(status.code(), Some(2));

    let watching = bot(&endpoint, BOT_TOKEN);
    watching.line(|l| l.starts_with("approval bot: watching"));

    let policy = Scripted::escalating_tool_calls("policy", "needs_approval", "a human decides")
        .serve()
        .await;
    let deadline = Duration::from_secs(60);
    let resolver = StreamResolver::builder(endpoint.clone())
        .deadline(deadline)
        .host_name("agent")
        .bearer_token(HOST_TOKEN)
        .build()
        .expect("resolver");
    let (builder, _) = hookwire_testkit::host();
    let host = builder
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        .build()
        .expect("host");
    let session = host.session("s-bot").expect("session");
    session
        .start(["read_file", "wire_transfer"])
        .await
        .expect("start");
    session
        .input(json!("read the report, then pay"), InputRole::User)
        .await
        .expect("input");

    let read = ToolCall::new("tc-1", "read_file", json!({"path": "report.txt"}));
    let approved = session.pre_tool_call(&read).await.expect("pre_tool_call");
    assert!(approved.proceeds(), "{:?}", approved.reason());
    assert_eq!(approved.record().resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(approved.target(), Some(&json!({"path": "report.txt"})));
    watching.line(|l| l.starts_with("approved ") && l.ends_with(" read_file accepted"));

    let pay = ToolCall::new("tc-2", "wire_transfer", json!({"amount": 9000}));
    let rejected = session.pre_tool_call(&pay).await.expect("pre_tool_call");
    assert!(rejected.is_blocked());
    assert_eq!(rejected.reason(), Some("policy:not_allowlisted"));
    assert_eq!(rejected.record().resolved_by, Some(ResolvedBy::Rejection));
    watching.line(|l| l.starts_with("rejected ") && l.ends_with(" wire_transfer accepted"));
}
