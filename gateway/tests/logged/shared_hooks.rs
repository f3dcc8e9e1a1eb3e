//! The gateway serving the coding agents' hook routes beside its model
//! routes (`SharedHooks`), driven with hook payloads and model requests
//! in the shapes Claude Code sends (its `x-claude-code-session-id`
//! header), over the coding-agent Rego policy of
//! `tests/fixtures/hooks/policy/`: a model request of an agent session
//! the hooks hold open is governed in that session, each tool result gets
//! the decision its hook made (released as it is, or the blocked notice),
//! and nothing is governed twice; a request of no open agent session is
//! the gateway's own conversation, whose `post_tool_call` withholds the
//! same result; a gateway session cannot take an agent session's id.

use std::sync::Arc;

use hookwire::InterceptionPoint as P;
use hookwire_client::{Host, RecordLog};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, RunningGateway, SharedHooks};
use hookwire_hooks::{HooksConfig, HooksHost};
use hookwire_policy::{Policies, PolicyOptions, PolicyService};
use serde_json::{Value, json};

use super::{points, raw};
use hookwire_testkit::model_upstream::{Reply, Upstream, messages};

const TOKEN: &str = "shared-hooks-token";
const SECRET: &str = "SECRET-123";
const SESSION: &str = "5b9d3c2e-shared-hooks";

async fn start() -> (Upstream, Gateway, RunningGateway, RecordLog) {
    let up = messages::serve(|_: &Value| Reply::Answer("done".into())).await;
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
    config.hooks = Some(SharedHooks::new(hooks, TOKEN));
    let g = Gateway::new(host, config, CredentialPool::new()).unwrap();
    let gw = g
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    (up, g, gw, records)
}

/// Posts one Claude Code hook payload of `SESSION` to the gateway's hook
/// route; the agent's answer.
async fn hook(gw: &RunningGateway, event: &str, members: Value) -> Value {
    let mut payload = json!({
        "session_id": SESSION, "hook_event_name": event, "cwd": "/work",
        "transcript_path": "/tmp/t.jsonl", "permission_mode": "default",
    });
    for (k, v) in members.as_object().unwrap() {
        payload[k] = v.clone();
    }
    let bearer = format!("Bearer {TOKEN}");
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

/// A tool turn's hooks: `cat a.txt` (a harmless result) and `cat
/// secret.txt` (the secret), each run and its result decided.
async fn hooked_tool_turn(gw: &RunningGateway) {
    hook(gw, "SessionStart", json!({"source": "startup"})).await;
    hook(gw, "UserPromptSubmit", json!({"prompt": "Read the files."})).await;
    for (id, file, out) in [
        ("toolu_A", "a.txt", "fine".to_owned()),
        ("toolu_B", "secret.txt", format!("db password: {SECRET}")),
    ] {
        let call = json!({"tool_name": "Bash", "tool_use_id": id,
                          "tool_input": {"command": format!("cat {file}")}});
        hook(gw, "PreToolUse", call.clone()).await;
        let mut post = call;
        post["tool_response"] =
            json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false});
        let answer = hook(gw, "PostToolUse", post).await;
        assert_eq!(answer["decision"] == "block", id == "toolu_B", "{answer}");
    }
}

/// The model request Claude Code sends after the tool turn, naming the
/// agent session `session`.
async fn model_request(gw: &RunningGateway, headers: &[(&str, &str)]) -> (u16, Value) {
    let body = json!({"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Read the files."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_A", "name": "Bash", "input": {"command": "cat a.txt"}},
            {"type": "tool_use", "id": "toolu_B", "name": "Bash", "input": {"command": "cat secret.txt"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_A", "content": "fine"},
            {"type": "tool_result", "tool_use_id": "toolu_B", "content": format!("db password: {SECRET}")}]}
    ]});
    let mut all = vec![
        ("x-api-key", "sk-ant-client"),
        ("anthropic-version", "2023-06-01"),
    ];
    all.extend_from_slice(headers);
    raw(gw.addr(), "POST", "/v1/messages?beta=true", &all, &body).await
}

/// The tool results of the last request the mock received, by id.
fn results_upstream(up: &Upstream) -> Vec<(String, String)> {
    let seen = up.at(messages::PATH);
    let last = seen.last().expect("a request reached the mock");
    assert!(!last.body.to_string().contains(SECRET), "{}", last.body);
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(messages::tool_results)
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_owned(),
                messages::text_of(&b["content"]),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_a_hooked_result_gets_its_hooks_decision_in_the_one_session() {
    let (up, g, gw, records) = start().await;
    hooked_tool_turn(&gw).await;
    let (status, answer) = model_request(
        &gw,
        &[(hookwire_hooks::CLAUDE_CODE_SESSION_HEADER, SESSION)],
    )
    .await;
    assert_eq!(status, 200, "{answer}");

    let results = results_upstream(&up);
    assert_eq!(results[0], ("toolu_A".to_owned(), "fine".to_owned()));
    assert_eq!(results[1].0, "toolu_B");
    assert!(
        results[1].1.contains("policy:secret_in_output"),
        "{results:?}"
    );

    // One session: the hooks' points, then the gateway's model points;
    // no input, tool point or output of the gateway's own.
    let key = HooksHost::session_key(hookwire_hooks::Agent::ClaudeCode, SESSION);
    let all = records.records();
    assert!(all.iter().all(|r| r.session_id == key), "{all:?}");
    assert_eq!(
        points(&all),
        [
            P::AgentStartup,
            P::Input,
            P::PreToolCall,
            P::PostToolCall,
            P::PreToolCall,
            P::PostToolCall,
            P::PreModelCall,
            P::PostModelCall,
        ]
    );
    assert_eq!(
        all[5].verdict.reason.as_deref(),
        Some("policy:secret_in_output")
    );

    // The stop closes the turn the hooks opened.
    hook(&gw, "Stop", json!({"last_assistant_message": "done"})).await;
    hook(&gw, "SessionEnd", json!({"reason": "other"})).await;
    let tail: Vec<P> = points(&records.session(&key))[8..].to_vec();
    assert_eq!(tail, [P::Output, P::AgentShutdown]);
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_a_request_of_no_open_agent_session_is_governed_whole_by_the_gateway() {
    let (up, g, gw, records) = start().await;
    let (status, answer) = model_request(
        &gw,
        &[(hookwire_hooks::CLAUDE_CODE_SESSION_HEADER, "not-open")],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let results = results_upstream(&up);
    assert_eq!(results[0].1, "fine");
    assert!(
        results[1].1.contains("policy:secret_in_output"),
        "{results:?}"
    );
    let all = records.records();
    assert!(
        all.iter().all(|r| r.session_id.starts_with("derived-")),
        "{all:?}"
    );
    assert_eq!(
        points(&all),
        [
            P::AgentStartup,
            P::Input,
            P::PreToolCall,
            P::PostToolCall,
            P::PreToolCall,
            P::PostToolCall,
            P::PreModelCall,
            P::PostModelCall,
            P::Output,
        ]
    );
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hooks_a_gateway_session_cannot_take_an_open_agent_sessions_id() {
    let (up, g, gw, records) = start().await;
    hook(&gw, "SessionStart", json!({"source": "startup"})).await;
    let key = HooksHost::session_key(hookwire_hooks::Agent::ClaudeCode, SESSION);
    let (status, answer) = model_request(&gw, &[("x-hookwire-session", &key)]).await;
    assert_eq!(status, 400, "{answer}");
    assert!(up.at(messages::PATH).is_empty());
    assert_eq!(points(&records.session(&key)), [P::AgentStartup]);
    // The hook route wants its own token, not a model client's key.
    let (status, _) = raw(
        gw.addr(),
        "POST",
        "/v1/hooks/claude-code",
        &[("authorization", "Bearer sk-ant-client")],
        &json!({"session_id": SESSION, "hook_event_name": "Stop"}),
    )
    .await;
    assert_eq!(status, 401);
    gw.shutdown().await.unwrap();
    drop(g);
}
