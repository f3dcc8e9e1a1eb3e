//! The hooks daemon embedded through `Settings` and `run`, without the
//! command: served on an owner-only Unix socket, one Claude Code hook
//! asked through the command hook's call, then shut down; and the
//! settings `run` refuses before it listens.

use std::time::Duration;

use hookwire::{AgentContext, BoxError, InterceptionPoint, Verdict};
use hookwire_client::{Host, interceptor_fn};
use hookwire_hooks::settings::{Listen, RawSettings, check_listen};
use hookwire_hooks::{Agent, CallOutcome, Endpoint, Error, HooksConfig, Settings, ask_daemon};

fn host() -> Host {
    Host::builder("agent-under-test", "hookwire")
        .interceptor(
            "policy",
            interceptor_fn(|ctx: AgentContext| async move {
                let verdict = match ctx.point() {
                    InterceptionPoint::PreToolCall => Verdict::deny("policy:no_tools"),
                    _ => Verdict::allow(),
                };
                Ok::<_, BoxError>(verdict)
            }),
        )
        .build()
        .unwrap()
}

fn raw(listen: Listen, token: Option<&str>) -> RawSettings {
    RawSettings {
        host: host(),
        governed_by: "a test's interceptor".into(),
        listen,
        allow_remote: false,
        token: token.map(str::to_owned),
        config: HooksConfig::default(),
        metrics: None,
        metrics_endpoint: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_the_settings_until_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("hooks.sock");
    let settings = Settings::try_from(raw(Listen::Unix(socket.clone()), None)).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_hooks::run(settings, async move {
        let _ = stopped.await;
    }));
    for _ in 0..500 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let payload = serde_json::json!({
        "session_id": "embedded-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_1",
        "tool_input": {"command": "ls"},
    })
    .to_string();
    let endpoint = Endpoint::Unix(socket.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        ask_daemon(
            &endpoint,
            None,
            Agent::ClaudeCode,
            payload.as_bytes(),
            Duration::from_secs(10),
        )
    })
    .await
    .unwrap()
    .unwrap();
    let CallOutcome::Answer(answer) = outcome else {
        panic!("the daemon failed closed: {outcome:?}");
    };
    assert!(answer.to_string().contains("policy:no_tools"), "{answer}");

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("run returns once shut down")
        .unwrap()
        .unwrap();
}

#[test]
fn settings_refuse_a_remote_address_and_tcp_without_a_token() {
    let remote = Listen::Tcp("0.0.0.0:0".parse().unwrap());
    let refused = check_listen(&remote, false, true).unwrap_err();
    assert!(matches!(refused, Error::Config(_)), "{refused}");
    assert!(refused.to_string().contains("is not a loopback address"));

    let tcp = Listen::Tcp("127.0.0.1:0".parse().unwrap());
    let refused = check_listen(&tcp, false, false).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("a token (--token-file or --token-env) is required on TCP")
    );
}
