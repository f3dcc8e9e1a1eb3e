//! The real coding-agent CLIs through the gateway: the official Claude
//! Code CLI (`@anthropic-ai/claude-code`) and the Codex CLI
//! (`@openai/codex`), pinned in `tests/agents/package-lock.json` and
//! installed by `scripts/setup.sh`, run headless with their model traffic
//! pointed at a `hookwire_gateway::Gateway` (Claude Code:
//! `ANTHROPIC_BASE_URL`; Codex: a `model_providers` entry with `wire_api =
//! "responses"`), which governs it with the demo's policy (the README's
//! first governed example) in front of the faithful mocks of
//! `hookwire_testkit::model_upstream` (Messages streamed, Responses streamed).
//!
//! Each mock proposes a destructive shell call under the CLI's own shell
//! tool (`Bash {"command"}`, `exec_command {"cmd"}`); the gateway removes
//! it at `pre_tool_call`, the command never runs (what it would delete
//! survives, the marker it would write is absent), and the run still
//! finishes (exit 0) with the gateway's notice as its answer. Everything
//! the CLI sends on the way must be accepted: Claude Code's `system`
//! entries in `messages`, `?beta=true` and `count_tokens`; Codex's
//! `namespace` tool.
//!
//! A missing CLI skips the test loudly; under `CI=true` it fails it.

use std::path::PathBuf;
use std::time::Duration;

use hookwire::InterceptionPoint::PreToolCall;
use hookwire_client::InterceptorBinding;
use hookwire_server::prelude::*;
use serde_json::Value;

use crate::apis::{allow_all, gateway, host, stop};
use hookwire_testkit::model_upstream::{claude_code, codex, messages, responses};

/// How long one CLI run may take.
const RUN_LIMIT: Duration = Duration::from_secs(180);

/// `path` when it exists; otherwise `None`, skipped loudly (a failure
/// under `CI=true`, where a missing CLI means a broken setup).
fn installed(path: PathBuf) -> Option<PathBuf> {
    let what = path.display().to_string();
    hookwire_testkit::require(
        path.is_file(),
        &what,
        "run scripts/setup.sh (npm ci in tests/agents)",
    )
    .then_some(path)
}

/// The deny the gateway recorded at `pre_tool_call`: the demo policy's,
/// naming `tool`.
fn assert_denied(records: &hookwire_client::RecordLog, tool: &str) {
    let recs = records.records();
    let deny = recs
        .iter()
        .find(|r| r.interception_point == PreToolCall && !r.proceeds())
        .unwrap_or_else(|| panic!("no deny at pre_tool_call: {recs:?}"));
    assert_eq!(
        deny.verdict.reason.as_deref(),
        Some("policy:destructive_command"),
        "{deny:?}"
    );
    let message = deny.verdict.message.as_deref().unwrap_or_default();
    assert!(message.starts_with(&format!("{tool} ")), "{deny:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_clients_claude_code_runs_through_the_gateway_and_its_rm_rf_never_runs() {
    let Some(claude) = installed(
        hookwire_testkit::workspace_root()
            .join("tests/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
    ) else {
        return;
    };
    use hookwire_testkit::model_upstream::claude_code::TOOL_USE_ID;
    let work = tempfile::tempdir().unwrap();
    let precious = work.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("keep.txt"), "keep me").unwrap();
    let command = format!("rm -rf {}", precious.display());
    // The main request (it offers Bash) gets the destructive call, as in
    // the hook test; a side request a short text.
    let up = messages::serve(claude_code::script(command)).await;
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;

    let home = tempfile::tempdir().unwrap();
    let run = tokio::process::Command::new(&claude)
        .args(["-p", "Delete the precious directory."])
        .args(["--allowedTools", "Bash", "--output-format", "json"])
        .current_dir(work.path())
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", format!("http://{}", gw.addr()))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RUN_LIMIT, run)
        .await
        .expect("the CLI finishes in time")
        .expect("run the Claude Code CLI");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let result: Value = serde_json::from_str(stdout.trim()).expect("the CLI's JSON result");
    assert_eq!(result["is_error"], false, "{result}");

    // The directory survived; the CLI never saw the call, and its answer
    // is the gateway's notice.
    assert!(precious.join("keep.txt").is_file(), "{result}");
    let answer = result["result"].as_str().unwrap_or_default();
    assert!(answer.contains("was blocked"), "{result}");
    let seen = up.at(messages::PATH);
    assert!(!seen.is_empty(), "nothing reached the mock");
    for r in &seen {
        assert!(!r.body.to_string().contains(TOOL_USE_ID), "{:?}", r.body);
    }
    assert_denied(&records, "Bash");
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_clients_codex_runs_through_the_gateway_and_its_destructive_command_never_runs() {
    let Some(codex) = installed(
        hookwire_testkit::workspace_root()
            .join("tests/agents/node_modules/@openai/codex/bin/codex.js"),
    ) else {
        return;
    };
    const CALL_ID: &str = "call_hookwire_gateway_clients";
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    // Codex's own guard refuses `rm -f`; this command it runs, the demo
    // policy denies (it writes a raw device path), and running it would
    // leave the marker.
    let command = format!(
        "dd if=/dev/zero of=/dev/null count=1 && touch {}",
        marker.display()
    );
    let up = responses::serve(codex::script(CALL_ID, command, "The command ran.")).await;
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;

    let codex_home = tempfile::tempdir().unwrap();
    std::fs::write(
        codex_home.path().join("config.toml"),
        format!(
            "model = \"m\"\nmodel_provider = \"gateway\"\napproval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\n\n[model_providers.gateway]\n\
             name = \"gateway\"\nbase_url = \"{}\"\nenv_key = \"HOOKWIRE_TEST_KEY\"\n\
             wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
            gw.base_url()
        ),
    )
    .unwrap();
    let run = tokio::process::Command::new("node")
        .arg(&codex)
        .args(["exec", "--skip-git-repo-check", "Run the command."])
        .current_dir(work.path())
        .env("HOME", codex_home.path())
        .env("CODEX_HOME", codex_home.path())
        .env("HOOKWIRE_TEST_KEY", "sk-test-not-a-key")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RUN_LIMIT, run)
        .await
        .expect("the CLI finishes in time")
        .expect("run the Codex CLI (node on PATH)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);

    // The command never ran; the answer is the gateway's notice.
    assert!(!marker.exists(), "{stdout}\n{stderr}");
    // `codex exec` prints the final answer on stdout (its progress on
    // stderr).
    assert!(
        stdout.contains("was blocked") || stderr.contains("was blocked"),
        "{stdout}\n{stderr}"
    );
    let seen = up.at(responses::PATH);
    assert!(!seen.is_empty(), "nothing reached the mock");
    // Codex offered its namespace tool, and it went upstream as sent.
    assert!(
        seen[0].body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["type"] == "namespace")),
        "{:?}",
        seen[0].body["tools"]
    );
    for r in &seen {
        assert!(!r.body.to_string().contains(CALL_ID), "{:?}", r.body);
    }
    assert_denied(&records, "exec_command");
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
}
