//! The official Python SDKs as clients: tests/sdk/{openai,agents,
//! anthropic}_client.py run in .cache/venv, each case printing one JSON
//! line the tests assert on. A run takes several cases, because each
//! interpreter start pays the SDK's import once.

use std::time::Duration;

use serde_json::Value;

/// The pinned versions (examples/gateway/requirements.txt,
/// tests/gateway-requirements.txt) every answer must name.
pub const OPENAI: &str = "3.57.0";
/// See [`OPENAI`].
pub const AGENTS: &str = "0.24.0";
/// See [`OPENAI`].
pub const ANTHROPIC: &str = "2.15.0";

/// One of the three client scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `openai`: Responses (and Chat Completions).
    OpenAi,
    /// `openai-agents`: `Runner.run` on a Responses or a Chat Completions
    /// model.
    Agents,
    /// `anthropic`: Messages.
    Anthropic,
}

impl Sdk {
    fn script(self) -> &'static str {
        match self {
            Sdk::OpenAi => "tests/sdk/openai_client.py",
            Sdk::Agents => "tests/sdk/agents_client.py",
            Sdk::Anthropic => "tests/sdk/anthropic_client.py",
        }
    }

    fn module(self) -> &'static str {
        match self {
            Sdk::OpenAi => "openai",
            Sdk::Agents => "agents",
            Sdk::Anthropic => "anthropic",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Sdk::OpenAi => OPENAI,
            Sdk::Agents => AGENTS,
            Sdk::Anthropic => ANTHROPIC,
        }
    }
}

/// Runs `cases` (`NAME` or `NAME=ARG`) of `sdk`'s script against
/// `base_url` and returns each case's answer, in order. The client's key
/// is a fixed test key (the gateway may replace it with a pooled one).
pub async fn run(sdk: Sdk, base_url: &str, cases: &[&str]) -> Vec<Value> {
    run_as(sdk, base_url, None, cases).await
}

/// [`run`] with `key` as the SDK's API key (`OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`) instead of the fixed test keys: a gateway's
/// client token, say.
pub async fn run_as(sdk: Sdk, base_url: &str, key: Option<&str>, cases: &[&str]) -> Vec<Value> {
    let script = crate::workspace::workspace_root().join(sdk.script());
    let mut cmd = tokio::process::Command::new(crate::python::python_venv(&[sdk.module()]));
    cmd.arg(&script)
        .args(cases)
        .env("HOOKWIRE_TEST_BASE_URL", base_url)
        .env("OPENAI_API_KEY", key.unwrap_or("sk-client-own-key"))
        .env("ANTHROPIC_API_KEY", key.unwrap_or("sk-ant-client-own-key"))
        // No proxy from the environment may stand between the SDK and
        // the loopback server.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{} {cases:?} finishes within 120 s", sdk.script()))
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} {cases:?} failed: {}\n{stdout}",
        sdk.script(),
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect();
    assert_eq!(answers.len(), cases.len(), "one line per case: {stdout}");
    for (answer, case) in answers.iter().zip(cases) {
        let name = case.split('=').next().unwrap();
        assert_eq!(answer["case"], name, "{stdout}");
        assert_eq!(answer["sdk_version"], sdk.version(), "the pinned SDK");
    }
    answers
}
