//! The official `anthropic` SDK on the Messages API through the gateway
//! (`POST /v1/messages`, whole and streamed through `messages.stream`)
//! against the recording Messages upstream. The SDK takes the gateway's
//! root as its base URL (its paths carry `/v1`).

use hookwire_client::InterceptorBinding;
use hookwire_server::prelude::*;
use serde_json::json;

use super::*;
use hookwire_testkit::model_upstream::clients::{self, Sdk};
use hookwire_testkit::model_upstream::{GREETING, messages};

/// The base URL the Anthropic SDK takes for a gateway.
fn root(gw: &RunningGateway) -> String {
    format!("http://{}", gw.addr())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_messages_a_denied_tool_call_never_runs_and_pii_is_redacted_before_the_upstream() {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let redactor = spawn_local(hookwire_demo::Redactor).await.unwrap();
    let up = messages::serve(messages::conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        InterceptorBinding::remote("redactor", redactor.endpoint()).at([Input]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let cases = [
        "tools=msg-tools",
        "tools-stream=msg-tools-stream",
        "text=msg-pii",
        "text-stream=msg-pii-stream",
    ];
    let out = clients::run(Sdk::Anthropic, &root(&gw), &cases).await;

    for (out, session) in out.iter().zip(["msg-tools", "msg-tools-stream"]) {
        // Only the permitted tool_use reached the agent, which ran only
        // it; the text block says what was blocked, and why.
        assert_eq!(out["executed"], json!(["ls"]), "{session}: {out}");
        let turns = out["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2, "{session}: {out}");
        let first = &turns[0];
        assert_eq!(first["stop_reason"], "tool_use", "{session}: {out}");
        let calls = first["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{session}: {out}");
        assert_eq!(calls[0]["id"], "toolu_01");
        assert_eq!(calls[0]["input"], json!({"cmd": "ls"}));
        assert_eq!(first["text"], blocked("toolu_02"), "{session}");
        assert_eq!(turns[1]["text"], "done: a.txt\nb.txt", "{session}");
        assert_eq!(turns[1]["stop_reason"], "end_turn");
        assert_emitted(&records, session, &TOOL_LOOP);
        assert_denied_call(&records, session);
    }
    let (text, streamed) = (&out[2], &out[3]);
    assert_eq!(text["text"], GREETING, "{text}");
    assert_eq!(text["stop_reason"], "end_turn");
    assert_eq!(streamed["text"], GREETING, "{streamed}");
    assert_eq!(streamed["deltas"], GREETING);
    let events = streamed["events"].as_array().unwrap();
    assert_eq!(events.first(), Some(&json!("message_start")));
    assert_eq!(events.last(), Some(&json!("message_stop")));
    for session in ["msg-pii", "msg-pii-stream"] {
        assert_emitted(&records, session, &ONE_TURN);
    }

    // Every request went upstream redacted, with the system prompt as
    // sent, the client's key and version, and never the denied tool_use
    // or a result for it.
    let seen = up.at(messages::PATH);
    assert_eq!(seen.len(), 6, "{seen:?}");
    for r in &seen {
        assert_redacted(&r.body);
        let key = r.headers.get("x-api-key").cloned().or_else(|| {
            r.headers
                .get("authorization")
                .and_then(|a| a.strip_prefix("Bearer ").map(str::to_owned))
        });
        assert_eq!(key.as_deref(), Some("sk-ant-client-own-key"), "{r:?}");
        assert!(r.headers.contains_key("anthropic-version"));
        for m in r.body["messages"].as_array().unwrap() {
            let blocks = m["content"].as_array().cloned().unwrap_or_default();
            for b in blocks {
                assert_ne!(b["id"], "toolu_02", "{b}");
                assert_ne!(b["tool_use_id"], "toolu_02", "{b}");
            }
        }
    }
    assert_eq!(seen[4].body["system"], "You are terse.");
    assert_eq!(seen[5].body["stream"], true);
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
    redactor.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_messages_a_failing_interceptor_forwards_nothing() {
    let up = messages::serve(messages::conversation).await;
    let (h, records) = host(vec![down(), allow_all()]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let out = clients::run(
        Sdk::Anthropic,
        &root(&gw),
        &["text=msg-down", "text-stream=msg-down-stream"],
    )
    .await;
    for e in &out {
        assert_eq!(e["error"], "PermissionDeniedError", "{e}");
        assert_eq!(e["status"], 403);
        assert_eq!(e["body"]["type"], "error");
        assert_eq!(e["body"]["error"]["type"], "permission_error");
        let message = e["body"]["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("interceptor_failed"), "{e}");
    }
    assert!(up.seen().is_empty(), "nothing forwarded");
    for session in ["msg-down", "msg-down-stream"] {
        assert_failed_closed(&records, session);
    }
    stop(g, gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_messages_streams_are_mediated_buffered_and_incrementally_and_errors_keep_their_shape()
 {
    let up = messages::serve(messages::conversation).await;
    let (h, records) = host(vec![secret_guard(Output)]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let (h, inc_records) = host(vec![secret_guard(PostModelCall)]);
    let (inc, inc_gw) = gateway(h, &up, |c| c.incremental_output = true).await;
    let (url, inc_url) = (root(&gw), root(&inc_gw));
    let buffered_cases = [
        "secret-stream=msg-buffered",
        "error",
        "error-stream",
        "count-tokens",
    ];
    let (buffered, incremental) = tokio::join!(
        clients::run(Sdk::Anthropic, &url, &buffered_cases),
        clients::run(Sdk::Anthropic, &inc_url, &["secret-stream=msg-incremental"]),
    );

    // Buffered, the answer denied at `output`: nothing of it was
    // released; the client read the notice and Messages' own "refusal" stop reason.
    let withheld = &buffered[0];
    assert_eq!(withheld["deltas"], WITHHELD, "{withheld}");
    assert_eq!(withheld["text"], WITHHELD);
    assert_eq!(withheld["stop_reason"], "refusal");
    assert_eq!(
        withheld["events"].as_array().unwrap().last(),
        Some(&json!("message_stop"))
    );
    let denied = records.session("msg-buffered");
    assert!(
        denied
            .iter()
            .any(|r| r.interception_point == Output && !r.proceeds()),
        "{denied:?}"
    );
    // Incremental: the segments before the key, then the notice.
    let released = incremental[0]["deltas"].as_str().unwrap();
    assert!(released.starts_with("Hello from upstream."), "{released}");
    assert!(!released.contains("AKIA"), "{released}");
    assert!(released.ends_with(WITHHELD), "{released}");
    assert_eq!(incremental[0]["stop_reason"], "refusal");
    assert!(post_model_calls(&inc_records, "msg-incremental") > 1);

    // The upstream's errors reach the SDK as they were, as its own class.
    for e in &buffered[1..3] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["body"]["type"], "error");
        assert_eq!(e["body"]["error"]["type"], "rate_limit_error");
    }
    // `count_tokens`: answered by the gateway with its estimate (the SDK
    // reads it as its own type), never forwarded.
    let counted = &buffered[3];
    let tokens = counted["input_tokens"].as_u64().unwrap_or(0);
    assert!(tokens >= 1, "{counted}");
    assert!(
        up.seen().iter().all(|r| r.path == messages::PATH),
        "only /v1/messages is forwarded"
    );
    stop(g, gw).await;
    stop(inc, inc_gw).await;
}
