//! The OpenAI Agents SDK through the gateway: `Runner.run` (and
//! `Runner.run_streamed`) of an agent with a function tool, on the SDK's
//! default Responses model and on `OpenAIChatCompletionsModel`, against
//! one recording upstream serving both APIs.

use hookwire_client::InterceptorBinding;
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use super::*;
use hookwire_testkit::model_upstream::clients::{self, Sdk};
use hookwire_testkit::model_upstream::{openai, responses};

/// The items of one run of `kind`.
fn items<'a>(out: &'a Value, kind: &str) -> Vec<&'a Value> {
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_agents_run_only_the_permitted_tool_on_responses_and_chat_completions() {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let redactor = spawn_local(hookwire_demo::Redactor).await.unwrap();
    let up = openai().await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        InterceptorBinding::remote("redactor", redactor.endpoint()).at([Input]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let cases = [
        "chat=agents-chat",
        "responses=agents-responses",
        "responses-stream=agents-responses-stream",
        "chat-error",
        "responses-error",
    ];
    let out = clients::run(Sdk::Agents, &gw.base_url(), &cases).await;
    let sessions = ["agents-chat", "agents-responses", "agents-responses-stream"];
    for (out, session) in out.iter().zip(sessions) {
        // The function tool's body ran for ls only: the denied call never
        // reached the runner; the model's text says what was blocked.
        assert_eq!(out["executed"], json!(["ls"]), "{session}: {out}");
        assert_eq!(out["final_output"], "done: a.txt\nb.txt", "{session}");
        let calls = items(out, "tool_call_item");
        assert_eq!(calls.len(), 1, "{session}: {out}");
        assert_eq!(calls[0]["call_id"], "call_1");
        assert_eq!(items(out, "tool_call_output_item").len(), 1);
        assert!(
            items(out, "message_output_item")
                .iter()
                .any(|m| m["text"] == blocked("call_2")),
            "{session}: {out}"
        );
        assert_emitted(&records, session, &TOOL_LOOP);
        assert_denied_call(&records, session);
    }
    // The upstream's error reaches the runner as the openai SDK's class.
    for e in &out[3..] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["executed"], json!([]));
    }

    // Two turns per run, each redacted, none carrying the denied call.
    let (turns, calls) = (up.at(responses::PATH), up.chats());
    let redacted =
        |r: &&hookwire_testkit::model_upstream::Received| r.body.to_string().contains("[email]");
    assert_eq!(turns.iter().filter(redacted).count(), 4, "{turns:?}");
    assert_eq!(calls.iter().filter(redacted).count(), 2, "{calls:?}");
    for r in turns.iter().chain(&calls) {
        assert!(!r.body.to_string().contains("@example.com"), "{}", r.body);
    }
    for item in turns.iter().flat_map(|r| responses::items(&r.body)) {
        assert_ne!(item["call_id"], "call_2", "{item}");
    }
    for m in calls
        .iter()
        .flat_map(|r| r.body["messages"].as_array().unwrap().clone())
    {
        assert!(!m["tool_calls"].to_string().contains("call_2"), "{m}");
        assert_ne!(m["tool_call_id"], "call_2");
    }
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
    redactor.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_agents_a_failing_interceptor_raises_the_sdks_error_and_forwards_nothing() {
    let up = openai().await;
    let (h, records) = host(vec![down(), allow_all()]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let out = clients::run(
        Sdk::Agents,
        &gw.base_url(),
        &["chat=agents-down-chat", "responses=agents-down"],
    )
    .await;
    for e in &out {
        assert_eq!(e["error"], "PermissionDeniedError", "{e}");
        assert_eq!(e["status"], 403);
        assert_eq!(e["body"]["code"], "host_error:interceptor_failed");
        assert_eq!(e["executed"], json!([]), "the tool never ran");
    }
    assert!(up.seen().is_empty(), "nothing forwarded");
    for session in ["agents-down-chat", "agents-down"] {
        assert_failed_closed(&records, session);
    }
    stop(g, gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_agents_a_streamed_run_mediated_incrementally_runs_only_the_permitted_tool() {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let up = openai().await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |c| c.incremental_output = true).await;
    let out = clients::run(
        Sdk::Agents,
        &gw.base_url(),
        &["responses-stream=agents-inc"],
    )
    .await;
    let out = &out[0];
    assert_eq!(out["executed"], json!(["ls"]), "{out}");
    assert_eq!(out["final_output"], "done: a.txt\nb.txt", "{out}");
    assert_eq!(items(out, "tool_call_item").len(), 1, "{out}");
    assert_denied_call(&records, "agents-inc");
    // The final answer's text went out in segments, each covered first.
    assert!(post_model_calls(&records, "agents-inc") > 2);
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
}
