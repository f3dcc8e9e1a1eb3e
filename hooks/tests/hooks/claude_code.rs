//! The official Claude Code CLI (`@anthropic-ai/claude-code`, pinned in
//! `tests/agents/package-lock.json`, installed by `scripts/setup.sh`)
//! governed through its own hooks: run headless (`claude -p …
//! --output-format json`) against the faithful Messages mock of
//! `hookwire_testkit::model_upstream::messages` on 127.0.0.1:0, with every governed event
//! configured as a `hookwire hook --agent claude-code` command hook
//! talking to a hooks daemon served here over the coding-agent Rego
//! policy of `tests/fixtures/hooks/policy/`. The mock answers the prompt
//! with a `Bash` tool use deleting a directory; the policy denies it at
//! `pre_tool_call`; the directory survives, the mock receives the block
//! as the tool's result, and the records show the session's points in
//! order.
//!
//! The `hookwire` binary is [`hookwire_testkit::hookwire_bin`]: the one
//! built beside this test binary (`cargo build -p hookwire-cli`), or
//! `HOOKWIRE_BIN`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionPoint as P;
use hookwire_client::{Host, RecordLog};
use hookwire_hooks::{HooksConfig, HooksHost};
use hookwire_policy::{Policies, PolicyOptions, PolicyService};
use hookwire_testkit::{hookwire_bin, workspace_root};
use serde_json::{Value, json};

use hookwire_testkit::model_upstream::claude_code::{TOOL_USE_ID, script};
use hookwire_testkit::model_upstream::messages;

const TOKEN: &str = "agent-hooks-e2e-token";
/// The native CLI of the pinned package.
fn claude() -> PathBuf {
    let bin = workspace_root()
        .join("tests/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh (npm ci in tests/agents)",
        bin.display()
    );
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_is_denied_a_destructive_bash_call_through_hookwire_hook() {
    let (claude, hookwire) = (claude(), hookwire_bin());

    // The daemon, in process, over the Rego policy.
    let Daemon {
        hooks,
        records,
        base: daemon,
        stop,
        served,
    } = start_daemon().await;

    // The directory the model wants gone.
    let work = tempfile::tempdir().unwrap();
    let precious = work.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("keep.txt"), "keep me").unwrap();
    let upstream = messages::serve(script(format!("rm -rf {}", precious.display()))).await;

    // Every governed event through `hookwire hook`.
    let home = tempfile::tempdir().unwrap();
    let token_file = home.path().join("hooks-token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let command = format!(
        "'{}' hook --agent claude-code --endpoint {daemon} --token-file '{}'",
        hookwire.display(),
        token_file.display()
    );
    let handler = json!([{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]);
    let tool_handler = json!([{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]);
    let settings = json!({"hooks": {
        "SessionStart": handler, "UserPromptSubmit": handler,
        "PreToolUse": tool_handler, "PostToolUse": tool_handler,
        "Stop": handler, "SessionEnd": handler,
    }});
    let settings_file = home.path().join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();

    let run = tokio::process::Command::new(&claude)
        .args(["-p", "Delete the precious directory."])
        .arg("--settings")
        .arg(&settings_file)
        .args(["--allowedTools", "Bash", "--output-format", "json"])
        .current_dir(work.path())
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", upstream.root())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the CLI finishes within 180 s")
        .expect("run the Claude Code CLI");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let result: Value = serde_json::from_str(stdout.trim()).expect("the CLI's JSON result");

    // The directory survived.
    assert!(precious.join("keep.txt").is_file(), "{result}");
    // The CLI lists the call as denied.
    let denials = result["permission_denials"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        denials.iter().any(|d| d["tool_use_id"] == TOOL_USE_ID),
        "{result}"
    );
    // The mock received the block as the tool's result.
    let turns = upstream.at(messages::PATH);
    let result_block = turns
        .iter()
        .filter_map(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.last().cloned())
        })
        .flat_map(|last| messages::tool_results(&last))
        .find(|b| b["tool_use_id"] == TOOL_USE_ID)
        .unwrap_or_else(|| panic!("no tool_result for the call reached the mock: {turns:?}"));
    let text = messages::text_of(&result_block["content"]);
    assert!(
        text.contains("policy:destructive_command"),
        "{result_block}"
    );

    // The records: the session's points in order, the deny at
    // pre_tool_call.
    let session_id = result["session_id"]
        .as_str()
        .expect("the result names its session");
    let session = records.session(&HooksHost::session_key(
        hookwire_hooks::Agent::ClaudeCode,
        session_id,
    ));
    let points: Vec<P> = session.iter().map(|r| r.interception_point).collect();
    assert_eq!(
        points,
        [
            P::AgentStartup,
            P::Input,
            P::PreToolCall,
            P::Output,
            P::AgentShutdown
        ],
        "{session:?}"
    );
    let pre = &session[2];
    assert!(!pre.proceeds());
    assert_eq!(
        pre.verdict.reason.as_deref(),
        Some("policy:destructive_command")
    );
    assert_eq!(hooks.open_sessions(), 0);
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}

/// A hooks daemon on 127.0.0.1:0 over the coding-agent Rego policy: the
/// host (its records), its base URL, and the handle that stops it.
struct Daemon {
    hooks: Arc<HooksHost>,
    records: RecordLog,
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<Result<(), hookwire_hooks::Error>>,
}

async fn start_daemon() -> Daemon {
    let policies = Policies::load(
        workspace_root().join("tests/fixtures/hooks/policy"),
        PolicyOptions::default(),
    )
    .unwrap();
    let records = RecordLog::new();
    let host = Host::builder("hookwire-hooks", "hookwire")
        .interceptor("policy", PolicyService::new(policies))
        .record_sink(records.clone())
        .build()
        .unwrap();
    let hooks = Arc::new(HooksHost::new(host, HooksConfig::default()));
    let router = hookwire_hooks::router(hooks.clone(), TOKEN).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_hooks::serve(listener, router, async {
        let _ = stopped.await;
    }));
    Daemon {
        hooks,
        records,
        base,
        stop,
        served,
    }
}

/// Runs the CLI headless with the hooks `hookwire hooks install` writes
/// for an `http` hook to `base`, `token` in its environment; the
/// directory the mock's tool use deletes, and the CLI's output.
async fn run_with_http_hooks(base: &str, token: &str) -> (tempfile::TempDir, std::process::Output) {
    let work = tempfile::tempdir().unwrap();
    let precious = work.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("keep.txt"), "keep me").unwrap();
    let upstream = messages::serve(script(format!("rm -rf {}", precious.display()))).await;
    let home = tempfile::tempdir().unwrap();
    let settings = hookwire_hooks::merge_http_settings(
        hookwire_hooks::Agent::ClaudeCode,
        None,
        base,
        Some("HOOKWIRE_HOOKS_TOKEN"),
    )
    .unwrap();
    let settings_file = home.path().join("settings.json");
    std::fs::write(&settings_file, settings).unwrap();
    let run = tokio::process::Command::new(claude())
        .args(["-p", "Delete the precious directory."])
        .arg("--settings")
        .arg(&settings_file)
        .args(["--allowedTools", "Bash", "--output-format", "json"])
        .current_dir(work.path())
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", upstream.root())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("HOOKWIRE_HOOKS_TOKEN", token)
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the CLI finishes within 180 s")
        .expect("run the Claude Code CLI");
    (work, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_posts_its_hooks_to_the_daemon_and_is_denied_the_destructive_call() {
    let daemon = start_daemon().await;
    let (work, out) = run_with_http_hooks(&daemon.base, TOKEN).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let result: Value = serde_json::from_str(stdout.trim()).expect("the CLI's JSON result");
    assert!(work.path().join("precious/keep.txt").is_file(), "{result}");
    let denials = result["permission_denials"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        denials.iter().any(|d| d["tool_use_id"] == TOOL_USE_ID),
        "{result}"
    );
    let session_id = result["session_id"].as_str().expect("a session id");
    let session = daemon.records.session(&HooksHost::session_key(
        hookwire_hooks::Agent::ClaudeCode,
        session_id,
    ));
    let pre = session
        .iter()
        .find(|r| r.interception_point == P::PreToolCall)
        .unwrap_or_else(|| panic!("no pre_tool_call reached the daemon: {session:?}"));
    assert_eq!(
        pre.verdict.reason.as_deref(),
        Some("policy:destructive_command")
    );
    assert_eq!(daemon.hooks.open_sessions(), 0);
    let _ = daemon.stop.send(());
    daemon.served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_daemon_blocks_claude_codes_http_hooks() {
    // A port nothing listens on: bound, read, closed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (work, out) = run_with_http_hooks(&closed, TOKEN).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        work.path().join("precious/keep.txt").is_file(),
        "the tool ran although its hook could not be asked: {stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_blocks_claude_codes_http_hooks() {
    let daemon = start_daemon().await;
    let (work, out) = run_with_http_hooks(&daemon.base, "not-the-daemons-token").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        work.path().join("precious/keep.txt").is_file(),
        "the tool ran although the daemon refused the hook's token: {stdout}"
    );
    assert!(
        daemon.records.records().is_empty(),
        "nothing was governed under a refused token"
    );
    let _ = daemon.stop.send(());
    daemon.served.await.unwrap().unwrap();
}
