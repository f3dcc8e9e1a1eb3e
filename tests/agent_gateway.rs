//! The complete path for coding agents whose hook cannot withhold a tool
//! result: the real Claude Code CLI and Codex CLI (pinned in
//! `tests/agents/package-lock.json`, installed by `scripts/setup.sh`),
//! configured by the real `hookwire hooks install --agent A --gateway
//! URL` into a temporary project or `CODEX_HOME`, run headless against a
//! `hookwire_gateway::Gateway` that serves the hook routes too
//! (`SharedHooks`) over the coding-agent Rego policy of
//! `tests/fixtures/hooks/policy/`, in front of the faithful mocks of
//! `hookwire_testkit::model_upstream`.
//!
//! The mock model asks to read a file holding `db password: SECRET-123`;
//! the tool runs, the hook's `post_tool_call` denies its result, and the
//! gateway puts the blocked notice in its place in the next model
//! request: no request the mock receives carries the secret. The hooks
//! and the gateway share the agent session's one hookwire session, whose
//! records show the hooks' points and the gateway's model points in
//! order. A broken route (the model request not through the gateway) or
//! withholding (the secret in a request, the result not the gateway's
//! notice) fails the test.
//!
//! A missing CLI skips the test loudly; under `CI=true` it fails it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionPoint as P;
use hookwire_client::{Host, RecordLog};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, RunningGateway, SharedHooks};
use hookwire_hooks::{HooksConfig, HooksHost};
use hookwire_policy::{Policies, PolicyOptions, PolicyService};
use serde_json::{Value, json};

use hookwire_testkit::model_upstream::{Reply, Upstream, codex, messages, responses};

/// The hook routes' token.
const TOKEN: &str = "agent-gateway-e2e-token";
/// What the file the model asks for holds.
const SECRET: &str = "SECRET-123";
/// How long one CLI run may take.
const RUN_LIMIT: Duration = Duration::from_secs(180);
/// The points of the shared session, each once: the hooks' lifecycle,
/// prompt, tool and answer points around the gateway's model points.
const TRAIL: [P; 10] = [
    P::AgentStartup,
    P::Input,
    P::PreModelCall,
    P::PostModelCall,
    P::PreToolCall,
    P::PostToolCall,
    P::PreModelCall,
    P::PostModelCall,
    P::Output,
    P::AgentShutdown,
];

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

/// A project directory holding the secret file.
fn project() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("secret.txt"),
        format!("db password: {SECRET}\n"),
    )
    .unwrap();
    work
}

/// The gateway over the coding-agent policy, serving the hook routes
/// beside the model routes in front of `up`: the hooks host and the
/// records of both.
async fn gateway(up: &Upstream) -> (Gateway, RunningGateway, Arc<HooksHost>, RecordLog) {
    let policies = Policies::load(
        hookwire_testkit::workspace_root().join("tests/fixtures/hooks/policy"),
        PolicyOptions::default(),
    )
    .unwrap();
    let records = RecordLog::new();
    let host = Host::builder("hookwire-gateway", "hookwire")
        .interceptor("policy", PolicyService::new(policies))
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .build()
        .unwrap();
    let hooks = Arc::new(HooksHost::new(host.clone(), HooksConfig::default()));
    let mut config = GatewayConfig::new(up.url());
    config.hooks = Some(SharedHooks::new(hooks.clone(), TOKEN));
    let g = Gateway::new(host, config, CredentialPool::new()).unwrap();
    let running = g
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    (g, running, hooks, records)
}

/// Runs the real `hookwire hooks install` in `dir` with `args`.
fn install(dir: &Path, env: &[(&str, &Path)], args: &[&str]) {
    let mut cmd = std::process::Command::new(hookwire_testkit::hookwire_bin());
    cmd.args(["hooks", "install"]).args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run hookwire hooks install");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// No request the mock received carries the secret.
fn assert_never_sent(up: &Upstream, path: &str) {
    let seen = up.at(path);
    assert!(seen.len() >= 2, "the model saw no second turn: {seen:?}");
    for r in &seen {
        assert!(
            !r.body.to_string().contains(SECRET),
            "the secret reached the model: {}",
            r.body
        );
    }
}

/// The shared session's records are `TRAIL` (nothing governed twice),
/// its `post_tool_call` the policy's deny, under one session id with
/// strictly rising sequence numbers; nothing else was governed as a
/// session of its own.
fn assert_one_trail(records: &RecordLog, key: &str) {
    let all = records.records();
    let session = records.session(key);
    let points: Vec<P> = session.iter().map(|r| r.interception_point).collect();
    assert_eq!(points, TRAIL, "{key}");
    let post = session
        .iter()
        .find(|r| r.interception_point == P::PostToolCall)
        .unwrap();
    assert!(!post.proceeds(), "{post:?}");
    assert_eq!(
        post.verdict.reason.as_deref(),
        Some("policy:secret_in_output")
    );
    assert!(
        session.windows(2).all(|w| w[0].sequence < w[1].sequence),
        "{session:?}"
    );
    let others: Vec<&str> = all
        .iter()
        .map(|r| r.session_id.as_str())
        .filter(|s| *s != key)
        .collect();
    assert!(others.is_empty(), "other sessions: {others:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_gateway_claude_code_never_sends_the_denied_result_to_the_model() {
    let Some(claude) = installed(
        hookwire_testkit::workspace_root()
            .join("tests/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
    ) else {
        return;
    };
    const TOOL_USE_ID: &str = "toolu_01HookwireGatewayE2E";
    let up = messages::serve(|body: &Value| {
        // Claude Code follows a result its hook blocked with a note of
        // its own: any message may carry the result.
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages
            .iter()
            .any(|m| !messages::tool_results(m).is_empty())
        {
            return Reply::Answer("I could not read the file.".into());
        }
        let offers_bash = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
        if offers_bash {
            return Reply::Calls(vec![(
                TOOL_USE_ID,
                "Bash",
                json!({"command": "cat secret.txt", "description": "Read the file"}),
            )]);
        }
        Reply::Answer("ok".into())
    })
    .await;
    let (g, gw, hooks, records) = gateway(&up).await;

    // The hooks and the model route, by the real command, into the
    // project's `.claude/settings.json`.
    let work = project();
    let home = tempfile::tempdir().unwrap();
    let root = format!("http://{}", gw.addr());
    install(
        work.path(),
        &[("HOME", home.path())],
        &["--agent", "claude-code", "--gateway", &root],
    );
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["env"]["ANTHROPIC_BASE_URL"], root.as_str());

    // No ANTHROPIC_BASE_URL of the test's: the settings route the model.
    let run = tokio::process::Command::new(&claude)
        .args(["-p", "Read secret.txt."])
        .args(["--allowedTools", "Bash", "--output-format", "json"])
        .current_dir(work.path())
        .env("HOME", home.path())
        .env_remove("ANTHROPIC_BASE_URL")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("HOOKWIRE_HOOKS_TOKEN", TOKEN)
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
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

    // The tool ran; its result reached the model as the gateway's
    // notice, the secret never.
    assert_never_sent(&up, messages::PATH);
    let block = up
        .at(messages::PATH)
        .iter()
        .filter_map(|r| r.body["messages"].as_array().cloned())
        .flatten()
        .flat_map(|m| messages::tool_results(&m))
        .find(|b| b["tool_use_id"] == TOOL_USE_ID)
        .unwrap_or_else(|| panic!("no tool_result reached the mock: {result}"));
    let text = messages::text_of(&block["content"]);
    assert!(text.contains("policy:secret_in_output"), "{block}");

    // One session, the hooks' and the gateway's points in order.
    let session_id = result["session_id"].as_str().expect("a session id");
    let key = HooksHost::session_key(hookwire_hooks::Agent::ClaudeCode, session_id);
    assert_one_trail(&records, &key);
    assert_eq!(hooks.open_sessions(), 0);
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_gateway_codex_never_sends_the_denied_result_to_the_model() {
    let Some(codex) = installed(
        hookwire_testkit::workspace_root()
            .join("tests/agents/node_modules/@openai/codex/bin/codex.js"),
    ) else {
        return;
    };
    const CALL_ID: &str = "call_hookwire_agent_gateway";
    let up = responses::serve(codex::script(
        CALL_ID,
        "cat secret.txt".into(),
        "I could not read the file.",
    ))
    .await;
    let (g, gw, hooks, records) = gateway(&up).await;

    // The user's own settings first; the real command merges the hooks
    // (`hooks.json`) and the model route (`config.toml`) into CODEX_HOME.
    let work = project();
    let codex_home = tempfile::tempdir().unwrap();
    std::fs::write(
        codex_home.path().join("config.toml"),
        "model = \"m\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n",
    )
    .unwrap();
    let token_file = codex_home.path().join("hooks-token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let root = format!("http://{}", gw.addr());
    install(
        work.path(),
        &[
            ("HOME", codex_home.path()),
            ("CODEX_HOME", codex_home.path()),
        ],
        &[
            "--agent",
            "codex",
            "--scope",
            "user",
            "--gateway",
            &root,
            "--token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let config = std::fs::read_to_string(codex_home.path().join("config.toml")).unwrap();
    assert!(config.contains("model = \"m\""), "{config}");
    assert!(
        config.contains(&format!("base_url = \"{root}/v1\"")),
        "{config}"
    );

    let run = tokio::process::Command::new("node")
        .arg(&codex)
        // The hooks run without Codex's interactive trust review.
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
        ])
        .arg("Read secret.txt.")
        .current_dir(work.path())
        .env("HOME", codex_home.path())
        .env("CODEX_HOME", codex_home.path())
        .env("OPENAI_API_KEY", "sk-test-not-a-key")
        .env_remove("HOOKWIRE_HOOKS_TOKEN")
        .env_remove("HOOKWIRE_HOOKS_ENDPOINT")
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

    // The result reached the model as the gateway's notice, the secret
    // never.
    assert_never_sent(&up, responses::PATH);
    let output = up
        .at(responses::PATH)
        .iter()
        .flat_map(|r| responses::items(&r.body))
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == CALL_ID)
        .unwrap_or_else(|| panic!("no function_call_output reached the mock:\n{stderr}"));
    assert!(
        output["output"]
            .to_string()
            .contains("policy:secret_in_output"),
        "{output}"
    );
    let session_id = up.at(responses::PATH)[0].headers["session-id"].clone();
    let key = HooksHost::session_key(hookwire_hooks::Agent::Codex, &session_id);
    // Codex has no session end: the session is open until the gateway
    // stops (`agent_shutdown`, `cancelled`).
    gw.shutdown().await.unwrap();
    assert_one_trail(&records, &key);
    assert_eq!(hooks.open_sessions(), 0);
    drop(g);
}
