//! What the gateway remembers of a conversation: its session (by header or
//! a derived key) until it idles out, result labels across replays, and
//! how content-part arrays are rendered to the interceptors.

use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionPoint::*;
use hookwire_gateway::CredentialPool;
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use super::{Reply, Seen, allow_all, conversation, gateway, host, http, sdk, spying, upstream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_follows_its_header_or_a_derived_key_and_idles_out_with_agent_shutdown() {
    let up = upstream(conversation).await;
    let (h, records) = host(vec![allow_all()]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |c| {
        c.idle_timeout = Duration::from_millis(300);
    })
    .await;
    sdk("chat", &gw.base_url(), Some("idle-1")).await;
    sdk("plain", &gw.base_url(), None).await;
    let derived: Vec<String> = records
        .records()
        .iter()
        .map(|r| r.session_id.clone())
        .filter(|s| s.starts_with("derived-"))
        .collect();
    assert!(!derived.is_empty(), "a session derived without the header");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while g.open_sessions() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(g.open_sessions(), 0, "idle conversations are reaped");
    for session in ["idle-1", derived[0].as_str()] {
        let recs = records.session(session);
        let last = recs.last().unwrap();
        assert_eq!(last.interception_point, AgentShutdown, "{session}");
        assert!(last.proceeds());
    }
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_parts_are_governed_by_their_text_and_other_parts_pass_through_named() {
    let seen: Seen = Arc::default();
    let up = upstream(|_| Reply::Answer("ok".into())).await;
    let (host, _) = host(vec![spying(&seen, |ctx| {
        let text = ctx.get("input").and_then(|i| i["content"].as_str());
        match text {
            Some(t) if t.contains("alice@x") => {
                Verdict::transform("$target.content", json!(t.replace("alice@x", "[email]")))
            }
            _ => Verdict::allow(),
        }
    })]);
    let (_g, running) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let image = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}});
    let (status, body) = http(
        running.addr(),
        "POST",
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "mail alice@x"}, image, {"type": "text", "text": " now"}]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "ok");
    let sent = &up.chats()[0].body["messages"][0]["content"];
    assert_eq!(
        sent,
        &json!([{"type": "text", "text": "mail [email] now"}, image]),
        "the text parts became one where the first was; the image untouched"
    );
    let seen = seen.lock().unwrap().clone();
    let input = seen.iter().find(|s| s.0 == Input).unwrap();
    assert_eq!(
        input.1["content"], "mail alice@x now",
        "the text parts joined"
    );
    assert_eq!(input.3["hookwire"]["content_parts"], json!(["image_url"]));
    let pre = seen.iter().find(|s| s.0 == PreModelCall).unwrap();
    assert_eq!(
        pre.2,
        json!([{"role": "user", "content": "mail [email] now"}]),
        "pre_model_call sees the neutral rendering, redacted"
    );
    assert_eq!(
        pre.3["hookwire"]["content_parts"],
        json!([{"message": 0, "types": ["image_url"]}])
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_labels_persist_for_the_conversation_and_resurface_on_replay() {
    let seen: Seen = Arc::default();
    let up = upstream(|_| Reply::Answer("noted".into())).await;
    let (host, _) = host(vec![spying(&seen, |ctx| {
        let text = ctx.get("input").and_then(|i| i["content"].as_str());
        if text.is_some_and(|t| t.contains("alice")) {
            Verdict::allow().with_label("pii")
        } else {
            Verdict::allow()
        }
    })]);
    let (_g, running) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let first = json!([{"role": "user", "content": "I am alice"}]);
    let (status, body) = http(
        running.addr(),
        "POST",
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": first}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = http(
        running.addr(),
        "POST",
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": [
            {"role": "user", "content": "I am alice"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what next?"}]}),
    )
    .await;
    assert_eq!(status, 200);
    // Another conversation carries none of them.
    let (status, _) = http(
        running.addr(),
        "POST",
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(status, 200);
    let seen = seen.lock().unwrap().clone();
    let labels_at = |point| {
        seen.iter()
            .filter(|s| s.0 == point)
            .map(|s| s.3["hookwire"]["source_labels"].clone())
            .collect::<Vec<_>>()
    };
    let pii = json!(["pii"]);
    assert_eq!(
        labels_at(PreModelCall),
        [pii.clone(), pii.clone(), Value::Null],
        "after the labelled input, on the replay too, and never in another conversation"
    );
    assert_eq!(labels_at(Output), [pii.clone(), pii, Value::Null]);
    assert!(
        labels_at(Input).iter().all(Value::is_null),
        "an input derives from nothing earlier"
    );
    running.shutdown().await.unwrap();
}
