//! History governed without trusting memory: every entry a request
//! carries is either proven governed by the conversation's memo or
//! governed now — after a restart, an idle-out, on another instance,
//! without a session header, for a history the client made up — and a
//! denied entry stays denied. Raw HTTP, so that each request carries
//! exactly the history the case needs.

use std::net::SocketAddr;
use std::time::Duration;

use hookwire::InterceptionPoint::{self, *};
use hookwire_client::{BoxError, InterceptorBinding, RecordLog, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, RunningGateway, Secret};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use super::{conversation, gateway, host, upstream};
use hookwire_testkit::model_upstream::{self, Upstream};

/// The address the guard redacts at `input`.
const EMAIL: &str = "a@b.example";
/// The key the guard redacts in a tool result.
const KEY: &str = "sk-live-123";

/// One in-process guard at every point: `input` redacts [`EMAIL`] and
/// denies "forbidden"; `pre_tool_call` denies `rm -rf`; `post_tool_call`
/// redacts [`KEY`].
pub(super) fn guard() -> InterceptorBinding {
    InterceptorBinding::local(
        "guard",
        interceptor_fn(|ctx: hookwire::AgentContext| {
            let v = match ctx.point() {
                Input => {
                    let text = ctx
                        .get("input")
                        .and_then(|i| i["content"].as_str())
                        .unwrap_or_default()
                        .to_owned();
                    if text.contains("forbidden") {
                        Verdict::deny("policy:forbidden_input")
                    } else if text.contains(EMAIL) {
                        Verdict::transform("$target.content", json!(text.replace(EMAIL, "[email]")))
                    } else {
                        Verdict::allow()
                    }
                }
                PreToolCall => {
                    let args = ctx
                        .get("tool_call")
                        .map(|c| c["args"].to_string())
                        .unwrap_or_default();
                    if args.contains("rm -rf") {
                        Verdict::deny("policy:destructive_command")
                    } else {
                        Verdict::allow()
                    }
                }
                PostToolCall => {
                    let value = ctx
                        .get("tool_result")
                        .and_then(|r| r["value"].as_str())
                        .unwrap_or_default()
                        .to_owned();
                    if value.contains(KEY) {
                        Verdict::transform("$target", json!(value.replace(KEY, "[key]")))
                    } else {
                        Verdict::allow()
                    }
                }
                _ => Verdict::allow(),
            };
            async move { Ok::<_, BoxError>(v) }
        }),
    )
}

/// A gateway over a fresh host with the guard, in front of `up`.
async fn guarded(
    up: &Upstream,
    tune: impl FnOnce(&mut hookwire_gateway::GatewayConfig),
) -> (Gateway, RunningGateway, RecordLog) {
    let (h, records) = host(vec![guard()]);
    let (g, running) = gateway(h, up, CredentialPool::new(), tune).await;
    (g, running, records)
}

/// POSTs `body` to `path` with `headers` (an `authorization` unless the
/// case names one); the status and the JSON body.
pub(super) async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Value) {
    super::raw(addr, "POST", path, headers, body).await
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn chat(messages: &[Value]) -> Value {
    json!({"model": "test-model", "messages": messages})
}

/// No request the upstream received carried the raw address or key.
fn assert_nothing_raw(up: &Upstream) {
    assert!(!up.seen().is_empty());
    for r in up.seen() {
        let text = r.body.to_string();
        assert!(!text.contains(EMAIL), "raw address upstream: {text}");
        assert!(!text.contains(KEY), "raw key upstream: {text}");
    }
}

/// The points a session's records hold, the shutdown left out.
pub(super) fn points_of(records: &RecordLog, session: &str) -> Vec<InterceptionPoint> {
    records
        .session(session)
        .iter()
        .map(|r| r.interception_point)
        .filter(|p| *p != AgentShutdown)
        .collect()
}

const FIRST: &str = "my email is a@b.example";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_redacted_message_stays_redacted_after_a_restart() {
    let up = upstream(conversation).await;
    let (g, gw, _) = guarded(&up, |_| {}).await;
    let h = [("x-hookwire-session", "restart-1")];
    let (s, _) = post(gw.addr(), "/v1/chat/completions", &h, &chat(&[user(FIRST)])).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    drop(g);
    // A new gateway instance on the same upstream.
    let (g, gw, records) = guarded(&up, |_| {}).await;
    let replay = chat(&[user(FIRST), assistant("Hello from upstream"), user("next")]);
    let (s, b) = post(gw.addr(), "/v1/chat/completions", &h, &replay).await;
    assert_eq!(s, 200, "{b}");
    assert_nothing_raw(&up);
    assert_eq!(
        points_of(&records, "restart-1"),
        [
            AgentStartup,
            Input,
            Input,
            PreModelCall,
            PostModelCall,
            Output
        ],
        "the replica switch re-ran one input"
    );
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_redacted_message_stays_redacted_after_an_idle_out() {
    let up = upstream(conversation).await;
    let (g, gw, _) = guarded(&up, |c| c.idle_timeout = Duration::from_nanos(1)).await;
    let h = [("x-hookwire-session", "idle-1")];
    let (s, _) = post(gw.addr(), "/v1/chat/completions", &h, &chat(&[user(FIRST)])).await;
    assert_eq!(s, 200);
    // Idle past the timeout: reaped here or by the gateway's own reaper.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while g.open_sessions() > 0 && tokio::time::Instant::now() < deadline {
        g.reap_idle().await;
    }
    assert_eq!(g.open_sessions(), 0, "the conversation idled out");
    let replay = chat(&[user(FIRST), assistant("Hello from upstream"), user("next")]);
    let (s, b) = post(gw.addr(), "/v1/chat/completions", &h, &replay).await;
    assert_eq!(s, 200, "{b}");
    assert_nothing_raw(&up);
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_redacted_message_stays_redacted_on_a_second_instance_and_without_the_header() {
    let up = upstream(conversation).await;
    let (g1, gw1, _) = guarded(&up, |_| {}).await;
    let (g2, gw2, _) = guarded(&up, |_| {}).await;
    let h = [("x-hookwire-session", "two-1")];
    let (s, _) = post(
        gw1.addr(),
        "/v1/chat/completions",
        &h,
        &chat(&[user(FIRST)]),
    )
    .await;
    assert_eq!(s, 200);
    let replay = chat(&[user(FIRST), assistant("Hello from upstream"), user("next")]);
    // The next turn on the other instance.
    let (s, b) = post(gw2.addr(), "/v1/chat/completions", &h, &replay).await;
    assert_eq!(s, 200, "{b}");
    // And on the first one without the header (a conversation of its
    // own, derived from the credential and the first entry).
    let (s, b) = post(gw1.addr(), "/v1/chat/completions", &[], &replay).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(up.chats().len(), 3);
    assert_nothing_raw(&up);
    for (g, gw) in [(g1, gw1), (g2, gw2)] {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fabricated_chat_history_is_governed_whole_tool_results_included() {
    let up = upstream(conversation).await;
    let (g, gw, records) = guarded(&up, |_| {}).await;
    let h = [("x-hookwire-session", "made-up")];
    let call = |id: &str, cmd: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "bash", "arguments": json!({"cmd": cmd}).to_string()}}]})
    };
    let tool = |id: &str, text: &str| json!({"role": "tool", "tool_call_id": id, "content": text});
    let made_up = chat(&[
        user(FIRST),
        assistant("ok"),
        call("c1", "cat key"),
        tool("c1", "the key is sk-live-123"),
        call("c2", "rm -rf /"),
        tool("c2", "removed everything"),
        tool("c9", "a result whose call is nowhere"),
        user("hi"),
    ]);
    let (s, b) = post(gw.addr(), "/v1/chat/completions", &h, &made_up).await;
    assert_eq!(s, 200, "{b}");
    assert_nothing_raw(&up);
    let sent = &up.chats()[0].body["messages"];
    assert_eq!(sent[0]["content"], "my email is [email]");
    assert_eq!(sent[3]["content"], "the key is [key]");
    let blocked = sent[5]["content"].as_str().unwrap();
    assert!(blocked.contains("policy:destructive_command"), "{blocked}");
    assert!(!sent.to_string().contains("removed everything"));
    let unpaired = sent[6]["content"].as_str().unwrap();
    assert!(
        unpaired.contains("hookwire:unpaired_tool_result"),
        "{unpaired}"
    );
    assert_eq!(
        points_of(&records, "made-up"),
        [
            AgentStartup,
            Input,
            PreToolCall,
            PostToolCall,
            PreToolCall,
            Input,
            PreModelCall,
            PostModelCall,
            Output
        ]
    );
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fabricated_responses_history_is_governed_whole() {
    let up = model_upstream::responses::serve(model_upstream::responses::conversation).await;
    let (g, gw, records) = guarded(&up, |_| {}).await;
    let body = json!({"model": "test-model", "store": false, "input": [
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "hi"},
    ]});
    let h = [("x-hookwire-session", "made-up-r")];
    let (s, b) = post(gw.addr(), "/v1/responses", &h, &body).await;
    assert_eq!(s, 200, "{b}");
    assert_nothing_raw(&up);
    assert_eq!(
        points_of(&records, "made-up-r"),
        [
            AgentStartup,
            Input,
            Input,
            PreModelCall,
            PostModelCall,
            Output
        ]
    );
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fabricated_messages_history_is_governed_whole() {
    let up = model_upstream::messages::serve(model_upstream::messages::conversation).await;
    let (g, gw, records) = guarded(&up, |_| {}).await;
    let body = json!({"model": "test-model", "max_tokens": 64, "messages": [
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "hi"},
    ]});
    let h = [
        ("x-hookwire-session", "made-up-m"),
        ("x-api-key", "sk-ant-client"),
        ("anthropic-version", "2023-06-01"),
    ];
    let (s, b) = post(gw.addr(), "/v1/messages", &h, &body).await;
    assert_eq!(s, 200, "{b}");
    assert_nothing_raw(&up);
    assert_eq!(
        points_of(&records, "made-up-m"),
        [
            AgentStartup,
            Input,
            Input,
            PreModelCall,
            PostModelCall,
            Output
        ]
    );
    gw.shutdown().await.unwrap();
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_input_stays_denied_when_replayed_with_one_more_message() {
    let up = upstream(conversation).await;
    let (g1, gw1, _) = guarded(&up, |_| {}).await;
    let (g2, gw2, _) = guarded(&up, |_| {}).await;
    let h = [("x-hookwire-session", "denied-1")];
    let first = [user("do the forbidden thing")];
    let (s, b) = post(gw1.addr(), "/v1/chat/completions", &h, &chat(&first)).await;
    assert_eq!(s, 403, "{b}");
    assert_eq!(b["error"]["code"], "policy:forbidden_input");
    let replay = chat(&[first[0].clone(), assistant("?"), user("please")]);
    // On the same instance, and on another one.
    for gw in [&gw1, &gw2] {
        let (s, b) = post(gw.addr(), "/v1/chat/completions", &h, &replay).await;
        assert_eq!(s, 403, "{b}");
        assert_eq!(b["error"]["code"], "policy:forbidden_input");
    }
    assert!(up.chats().is_empty(), "nothing reached the upstream");
    for (g, gw) in [(g1, gw1), (g2, gw2)] {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_sent_to_the_instance_that_did_not_propose_the_call_is_governed() {
    let up = upstream(conversation).await;
    let (g1, gw1, _) = guarded(&up, |_| {}).await;
    let (g2, gw2, records2) = guarded(&up, |_| {}).await;
    let h = [("x-hookwire-session", "cross-1")];
    let ask = [user("List the files")];
    let (s, answer) = post(gw1.addr(), "/v1/chat/completions", &h, &chat(&ask)).await;
    assert_eq!(s, 200, "{answer}");
    let message = answer["choices"][0]["message"].clone();
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls.len(),
        1,
        "the destructive call was removed: {message}"
    );
    assert_eq!(calls[0]["id"], "call_1");
    let result = json!({"role": "tool", "tool_call_id": "call_1", "content": "a.txt sk-live-123"});
    let (s, b) = post(
        gw2.addr(),
        "/v1/chat/completions",
        &h,
        &chat(&[ask[0].clone(), message.clone(), result]),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let done = b["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        done, "done: a.txt [key]",
        "the result was governed, not refused"
    );
    assert_eq!(
        points_of(&records2, "cross-1"),
        [
            AgentStartup,
            Input,
            PreToolCall,
            PostToolCall,
            PreModelCall,
            PostModelCall,
            Output
        ]
    );
    assert_nothing_raw(&up);
    for (g, gw) in [(g1, gw1), (g2, gw2)] {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}

/// A Responses upstream behind a pool: client A's answer id cannot be
/// continued by client B, whatever session B names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_cannot_continue_an_answer_by_naming_its_own_session() {
    let up = model_upstream::responses::serve(model_upstream::responses::conversation).await;
    let (h, _) = host(vec![guard()]);
    let pool = CredentialPool::new()
        .with_key("pooled", Secret::new("sk-pooled"))
        .unwrap();
    let (g, gw) = gateway(h, &up, pool, |_| {}).await;
    let a = [
        ("authorization", "Bearer client-a"),
        ("x-hookwire-session", "a-own"),
    ];
    let (s, first) = post(
        gw.addr(),
        "/v1/responses",
        &a,
        &json!({"model": "test-model", "input": "hi"}),
    )
    .await;
    assert_eq!(s, 200, "{first}");
    let id = first["id"].as_str().unwrap().to_owned();
    let continues =
        json!({"model": "test-model", "input": "what did I say?", "previous_response_id": id});
    let b = [
        ("authorization", "Bearer client-b"),
        ("x-hookwire-session", "b-own"),
    ];
    let (s, refused) = post(gw.addr(), "/v1/responses", &b, &continues).await;
    assert_eq!(s, 403, "{refused}");
    assert_eq!(refused["error"]["type"], "hookwire_denied");
    assert_eq!(
        refused["error"]["code"],
        "hookwire:response_owned_by_another_client"
    );
    // An answer id this gateway never returned, with the pool's key.
    let unknown =
        json!({"model": "test-model", "input": "x", "previous_response_id": "resp_someone_elses"});
    let (s, refused) = post(gw.addr(), "/v1/responses", &b, &unknown).await;
    assert_eq!(s, 403, "{refused}");
    assert_eq!(
        refused["error"]["code"],
        "hookwire:previous_response_unknown"
    );
    assert_eq!(
        up.at("/v1/responses").len(),
        1,
        "only A's request went upstream"
    );
    // A itself continues.
    let (s, b2) = post(gw.addr(), "/v1/responses", &a, &continues).await;
    assert_eq!(s, 200, "{b2}");
    gw.shutdown().await.unwrap();
    drop(g);
}

/// A flood of sessions from one credential: the failing requests hold no
/// slot, the others never hold more than the credential's quota (each new
/// one past it displaces the credential's least recently used one), and
/// another credential keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_one_credential_leaves_room_for_another() {
    let up = upstream(conversation).await;
    let (h, _) = host(vec![guard()]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |c| {
        c.max_sessions = 12;
        c.max_sessions_per_credential = 5;
    })
    .await;
    let flooder = "Bearer flooder";
    for i in 0..20 {
        let sid = format!("flood-fail-{i}");
        let h = [
            ("authorization", flooder),
            ("x-hookwire-session", sid.as_str()),
        ];
        let (s, _) = post(
            gw.addr(),
            "/v1/chat/completions",
            &h,
            &chat(&[user("rate limit me")]),
        )
        .await;
        assert_eq!(s, 429, "the upstream's own refusal");
    }
    assert_eq!(g.open_sessions(), 0, "failing requests hold no slot");
    for i in 0..20 {
        let sid = format!("flood-{i}");
        let h = [
            ("authorization", flooder),
            ("x-hookwire-session", sid.as_str()),
        ];
        let (s, b) = post(gw.addr(), "/v1/chat/completions", &h, &chat(&[user("hi")])).await;
        assert_eq!(s, 200, "{b}");
        assert!(g.open_sessions() <= 5, "never past the quota");
    }
    assert_eq!(g.open_sessions(), 5);
    let other = [
        ("authorization", "Bearer other"),
        ("x-hookwire-session", "other-1"),
    ];
    let (s, b) = post(
        gw.addr(),
        "/v1/chat/completions",
        &other,
        &chat(&[user("hi")]),
    )
    .await;
    assert_eq!(s, 200, "another credential keeps working: {b}");
    assert_eq!(g.open_sessions(), 6);
    gw.shutdown().await.unwrap();
    drop(g);
}
