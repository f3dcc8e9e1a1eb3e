//! `hookwire gateway`'s own surface: a declaration or a policy directory,
//! never both (the hooks daemon alike); `hookwire gateway token` and a
//! clients file admitting that token alone, and the refusals at start
//! that say what to do. And the helpers the command's other tests share:
//! a recording chat upstream
//! ([`hookwire_testkit::model_upstream::plain`]), a chat request, `hookwire
//! policy serve`. What the gateway does once running is tested with it,
//! in `gateway/tests/gateway/`.

use std::process::{Command, Stdio};

pub(crate) use hookwire_testkit::child::{Running, line_starting, stdout_lines as lines_of};
pub(crate) use hookwire_testkit::model_upstream::plain::upstream;
use serde_json::{Value, json};

/// The pooled upstream key: it must reach the upstream and nothing else.
pub(crate) const UPSTREAM_KEY: &str = "sk-pooled-upstream-key-7f3a9c";
/// What the client itself sends; the gateway must not forward it.
pub(crate) const CLIENT_KEY: &str = "sk-client-key-not-forwarded";

/// Starts `hookwire policy serve` (this crate's binary) over the Rego
/// files of `policies` on a free loopback port; the running service and
/// its endpoint URL.
pub(crate) fn policy_serve(policies: &std::path::Path) -> (Running, String) {
    hookwire_testkit::child::policy_serve(
        std::path::Path::new(env!("CARGO_BIN_EXE_hookwire")),
        policies,
    )
}

/// POSTs `body` to the gateway's chat completions; the status and JSON.
pub(crate) fn chat(addr: &str, body: &Value) -> (u16, Value) {
    chat_as(addr, CLIENT_KEY, body)
}

/// [`chat`] with `key` as the client's API key.
fn chat_as(addr: &str, key: &str, body: &Value) -> (u16, Value) {
    hookwire_testkit::gateway_http::chat(addr, key, "cli-gateway", body)
}

#[test]
fn the_proxy_commands_take_a_declaration_or_a_policy_directory_not_both() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    for command in [
        &["gateway", "--upstream", "http://127.0.0.1:9/v1"][..],
        &["hooks", "serve"],
    ] {
        let both = Command::new(bin)
            .args(command)
            .args(["--declaration", "d.json", "--policy", "examples/policies"])
            .output()
            .unwrap();
        assert_eq!(both.status.code(), Some(2), "{command:?}");
        let err = String::from_utf8_lossy(&both.stderr);
        assert!(err.contains("cannot be used with"), "{command:?}: {err}");
        let neither = Command::new(bin).args(command).output().unwrap();
        assert_eq!(neither.status.code(), Some(2), "{command:?}");
    }
}

/// `hookwire gateway token` makes a token and its clients-file line; a
/// gateway given that file admits that token alone; a pool on a shared
/// address without a clients file, or a clients file without a pool, is
/// refused at start with what to do.
#[test]
fn the_gateway_token_command_and_a_clients_file_admit_one_client() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(bin)
        .args(["gateway", "token", "--name", "ci-bot"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let token = String::from_utf8(made.stdout).unwrap();
    let token = token.trim_end();
    assert!(token.starts_with("hwc_") && token.len() == 68, "{token}");
    let line = String::from_utf8(made.stderr).unwrap();
    assert_eq!(
        line.trim_end(),
        format!("ci-bot {}", hookwire_edge::token::sha256_hex(token))
    );
    let clients = dir.path().join("gateway-clients");
    std::fs::write(&clients, &line).unwrap();

    let policies = hookwire_testkit::workspace_root().join("examples/policies");
    let refused = |args: &[&str]| {
        let out = Command::new(bin)
            .arg("gateway")
            .args(args)
            .args(["--upstream", "http://127.0.0.1:9/v1", "--policy"])
            .arg(&policies)
            .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = refused(&[
        "--listen",
        "0.0.0.0:0",
        "--key-env",
        "HOOKWIRE_TEST_UPSTREAM_KEY",
    ]);
    assert!(
        said.contains("--clients-file") && said.contains("--allow-anonymous"),
        "{said}"
    );
    let said = refused(&[
        "--listen",
        "127.0.0.1:0",
        "--clients-file",
        clients.to_str().unwrap(),
    ]);
    assert!(said.contains("pool"), "{said}");

    let (upstream, seen) = upstream();
    let gateway = Command::new(bin)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .arg("--policy")
        .arg(&policies)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY", "--clients-file"])
        .arg(&clients)
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let mut gateway = Running(gateway);
    let said = crate::operable::stderr_lines(&mut gateway.0);
    let banner = line_starting(&said, "hookwire gateway: ");
    let addr = banner.split_whitespace().nth(2).unwrap();
    let addr = addr.trim_start_matches("http://").trim_end_matches("/v1");
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let (status, answer) = chat_as(addr, CLIENT_KEY, &body);
    assert_eq!(status, 401, "an unlisted key: {answer}");
    assert_eq!(answer["error"]["code"], "invalid_api_key");
    assert!(seen.lock().unwrap().is_empty(), "nothing went upstream");
    let (status, answer) = chat_as(addr, token, &body);
    assert_eq!(status, 200, "the listed token: {answer}");
    let chats = seen.lock().unwrap().clone();
    assert_eq!(chats.len(), 1);
    assert_eq!(
        chats[0].authorization.as_deref(),
        Some(format!("Bearer {UPSTREAM_KEY}").as_str()),
        "the pool's key went upstream, not the token"
    );
}
