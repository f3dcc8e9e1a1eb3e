//! An agent session the gateway shares with the hooks is bound to the
//! principal that opened it (`SharedHooks`): a session id is a name, not
//! a credential. With a clients file the hook routes take the clients'
//! tokens and each session is its client's; a model request of another
//! client naming it is refused `403` (in the API's error shape, nothing
//! forwarded, no conversation of its own opened under the name), and
//! another client's hooks neither touch nor end it. Without a clients
//! file a session opened with the hooks token is bound to the first API
//! key that joins it, and the hook routes are served on loopback only.

use std::path::Path;
use std::sync::Arc;

use hookwire_client::RecordLog;
use hookwire_edge::token::sha256_hex;
use hookwire_gateway::{
    CredentialPool, Gateway, GatewayConfig, RunningGateway, Secret, SharedHooks, WatchedClients,
};
use hookwire_hooks::{HooksConfig, HooksHost};
use serde_json::{Value, json};

use super::{allow_all, host, raw};
use hookwire_testkit::model_upstream::{Reply, Upstream, messages};

const TOKEN: &str = "shared-hooks-token";
const ALICE: &str = "hwc_alice0123456789";
const BOB: &str = "hwc_bob0123456789";
const SESSION: &str = "0c4f-owned-session";

/// A gateway over an allow-all host serving the hook routes, with the
/// clients ALICE and BOB when `clients` names a directory for the file.
async fn start(clients: Option<&Path>) -> (Upstream, RunningGateway, RecordLog) {
    let up = messages::serve(|_: &Value| Reply::Answer("done".into())).await;
    let (host, records) = host(vec![allow_all()]);
    let hooks = Arc::new(HooksHost::new(host.clone(), HooksConfig::default()));
    let mut config = GatewayConfig::new(up.url());
    config.hooks = Some(SharedHooks::new(hooks, TOKEN));
    let mut pool = CredentialPool::new();
    if let Some(dir) = clients {
        let path = dir.join("clients");
        std::fs::write(
            &path,
            format!("alice {}\nbob {}\n", sha256_hex(ALICE), sha256_hex(BOB)),
        )
        .unwrap();
        config.clients = Some(Arc::new(WatchedClients::open(&path).unwrap()));
        pool = pool.with_key("pool", Secret::new("sk-pooled")).unwrap();
    }
    let g = Gateway::new(host, config, pool).unwrap();
    let gw = g.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (up, gw, records)
}

/// One Claude Code hook event of `SESSION`, presenting `token`; the
/// agent's answer.
async fn hook(gw: &RunningGateway, token: &str, event: &str, members: Value) -> Value {
    let mut payload = json!({
        "session_id": SESSION, "hook_event_name": event, "cwd": "/work",
        "transcript_path": "/tmp/t.jsonl", "permission_mode": "default",
    });
    for (k, v) in members.as_object().unwrap() {
        payload[k] = v.clone();
    }
    let bearer = format!("Bearer {token}");
    let (status, answer) = raw(
        gw.addr(),
        "POST",
        "/v1/hooks/claude-code",
        &[("authorization", &bearer)],
        &payload,
    )
    .await;
    assert_eq!(status, 200, "{event}: {answer}");
    answer
}

async fn open(gw: &RunningGateway, token: &str) {
    let answer = hook(gw, token, "SessionStart", json!({"source": "startup"})).await;
    assert!(!answer.to_string().contains("block"), "{answer}");
    hook(gw, token, "UserPromptSubmit", json!({"prompt": "hi"})).await;
}

/// A model request naming `SESSION`, presenting `key` as its API key.
async fn model_request(gw: &RunningGateway, key: &str) -> (u16, Value) {
    let body = json!({"model": "m", "max_tokens": 16,
                      "messages": [{"role": "user", "content": "hi"}]});
    raw(
        gw.addr(),
        "POST",
        "/v1/messages",
        &[
            ("x-api-key", key),
            ("anthropic-version", "2023-06-01"),
            ("x-claude-code-session-id", SESSION),
        ],
        &body,
    )
    .await
}

fn refused_403(status: u16, answer: &Value) {
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["error"]["type"], "permission_error", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("claude-code:0c4f-owned-session"),
        "{answer}"
    );
}

/// The sessions the records name.
fn sessions(records: &RecordLog) -> Vec<String> {
    let mut ids: Vec<String> = records
        .records()
        .iter()
        .map(|r| r.session_id.clone())
        .collect();
    ids.dedup();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_owner_another_clients_request_is_refused_and_the_owners_joins() {
    let dir = tempfile::tempdir().unwrap();
    let (up, gw, records) = start(Some(dir.path())).await;
    open(&gw, ALICE).await;

    let (status, answer) = model_request(&gw, BOB).await;
    refused_403(status, &answer);
    assert!(up.at(messages::PATH).is_empty(), "nothing forwarded");
    // No credential at all: the clients file refuses it first.
    let (status, answer) = model_request(&gw, "").await;
    assert_eq!(status, 401, "{answer}");

    let (status, answer) = model_request(&gw, ALICE).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(up.at(messages::PATH).len(), 1);
    assert_eq!(
        sessions(&records),
        vec!["claude-code:0c4f-owned-session".to_owned()],
        "one session: no conversation of its own was opened for bob"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_owner_another_clients_hooks_neither_touch_nor_end_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (_up, gw, records) = start(Some(dir.path())).await;
    open(&gw, ALICE).await;
    let before = records.records().len();
    for (event, members) in [
        ("UserPromptSubmit", json!({"prompt": "mine now"})),
        (
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "t", "tool_input": {"command": "ls"}}),
        ),
        ("SessionEnd", json!({"reason": "exit"})),
    ] {
        for token in [BOB, TOKEN] {
            let answer = hook(&gw, token, event, members.clone()).await;
            assert!(
                answer.to_string().contains("another principal"),
                "{event}: {answer}"
            );
        }
    }
    assert_eq!(
        records.records().len(),
        before,
        "nothing emitted in alice's session"
    );
    // Still alice's, still open.
    let (status, answer) = model_request(&gw, ALICE).await;
    assert_eq!(status, 200, "{answer}");
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_owner_a_hooks_token_session_is_no_clients() {
    let dir = tempfile::tempdir().unwrap();
    let (up, gw, _records) = start(Some(dir.path())).await;
    open(&gw, TOKEN).await;
    let (status, answer) = model_request(&gw, ALICE).await;
    refused_403(status, &answer);
    assert!(up.at(messages::PATH).is_empty());
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_owner_without_clients_the_first_key_binds_the_session() {
    let (up, gw, _records) = start(None).await;
    open(&gw, TOKEN).await;
    // No credential never binds it.
    let (status, answer) = model_request(&gw, "").await;
    refused_403(status, &answer);
    let (status, answer) = model_request(&gw, "sk-ant-agents-key").await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = model_request(&gw, "sk-ant-someone-else").await;
    refused_403(status, &answer);
    let (status, answer) = model_request(&gw, "sk-ant-agents-key").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(up.at(messages::PATH).len(), 2);
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_owner_without_clients_the_hook_routes_stay_on_loopback() {
    let up = messages::serve(|_: &Value| Reply::Answer("done".into())).await;
    let (host, _records) = host(vec![allow_all()]);
    let hooks = Arc::new(HooksHost::new(host.clone(), HooksConfig::default()));
    let mut config = GatewayConfig::new(up.url());
    config.hooks = Some(SharedHooks::new(hooks, TOKEN));
    let g = Gateway::new(host, config, CredentialPool::new()).unwrap();
    let e = g
        .spawn("0.0.0.0:0".parse().unwrap())
        .await
        .expect_err("refused off loopback");
    assert!(e.to_string().contains("--clients-file"), "{e}");
}
