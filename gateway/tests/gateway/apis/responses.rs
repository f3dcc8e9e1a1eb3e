//! The official `openai` SDK on the Responses API through the gateway
//! (`POST /v1/responses`, whole and streamed) against the recording
//! Responses upstream.

use hookwire_client::InterceptorBinding;
use hookwire_server::prelude::*;
use serde_json::json;

use super::*;
use hookwire_testkit::model_upstream::clients::{self, Sdk};
use hookwire_testkit::model_upstream::{GREETING, responses};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_responses_a_denied_tool_call_never_runs_and_pii_is_redacted_before_the_upstream() {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let redactor = spawn_local(hookwire_demo::Redactor).await.unwrap();
    let up = responses::serve(responses::conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        InterceptorBinding::remote("redactor", redactor.endpoint()).at([Input]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let cases = [
        "tools=resp-tools",
        "tools-stream=resp-tools-stream",
        "text=resp-pii",
        "text-stream=resp-pii-stream",
    ];
    let out = clients::run(Sdk::OpenAi, &gw.base_url(), &cases).await;

    for (out, session) in out.iter().zip(["resp-tools", "resp-tools-stream"]) {
        // The model proposed ls and rm -rf /: only ls reached the agent,
        // which ran only it; the text says what was blocked, and why.
        assert_eq!(out["executed"], json!(["ls"]), "{session}: {out}");
        let turns = out["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2, "{session}: {out}");
        let calls = turns[0]["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{session}: {out}");
        assert_eq!(calls[0]["call_id"], "call_1");
        assert_eq!(calls[0]["arguments"], json!({"cmd": "ls"}).to_string());
        assert_eq!(turns[0]["text"], blocked("call_2"), "{session}");
        assert_eq!(turns[1]["text"], "done: a.txt\nb.txt", "{session}");
        assert_eq!(turns[1]["status"], "completed");
        assert_emitted(&records, session, &TOOL_LOOP);
        assert_denied_call(&records, session);
    }
    let (text, streamed) = (&out[2], &out[3]);
    assert_eq!(text["text"], GREETING, "{text}");
    assert_eq!(text["status"], "completed");
    assert_eq!(streamed["text"], GREETING, "{streamed}");
    assert_eq!(streamed["deltas"], GREETING);
    let events = streamed["events"].as_array().unwrap();
    assert_eq!(events.first(), Some(&json!("response.created")));
    assert_eq!(events.last(), Some(&json!("response.completed")));
    for session in ["resp-pii", "resp-pii-stream"] {
        assert_emitted(&records, session, &ONE_TURN);
    }

    // Every request went upstream with the address redacted, the
    // instructions as sent, and never the denied call or its output.
    let seen = up.at(responses::PATH);
    assert_eq!(seen.len(), 6, "{seen:?}");
    for r in &seen {
        assert_redacted(&r.body);
        for item in responses::items(&r.body) {
            assert_ne!(item["call_id"], "call_2", "{item}");
        }
        assert_eq!(r.headers["authorization"], "Bearer sk-client-own-key");
    }
    assert_eq!(seen[4].body["instructions"], "You are terse.");
    assert_eq!(seen[5].body["stream"], true);
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
    redactor.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_responses_a_failing_interceptor_forwards_nothing() {
    let up = responses::serve(responses::conversation).await;
    let (h, records) = host(vec![down(), allow_all()]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let out = clients::run(
        Sdk::OpenAi,
        &gw.base_url(),
        &["text=resp-down", "text-stream=resp-down-stream"],
    )
    .await;
    for e in &out {
        assert_eq!(e["error"], "PermissionDeniedError", "{e}");
        assert_eq!(e["status"], 403);
        assert_eq!(e["body"]["type"], "hookwire_denied");
        assert_eq!(e["body"]["code"], "host_error:interceptor_failed");
    }
    assert!(up.seen().is_empty(), "nothing forwarded");
    for session in ["resp-down", "resp-down-stream"] {
        assert_failed_closed(&records, session);
    }
    stop(g, gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_responses_streams_are_mediated_buffered_and_incrementally_and_errors_keep_their_shape()
 {
    let up = responses::serve(responses::conversation).await;
    let (h, records) = host(vec![secret_guard(Output)]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    let (h, inc_records) = host(vec![secret_guard(PostModelCall)]);
    let (inc, inc_gw) = gateway(h, &up, |c| c.incremental_output = true).await;
    let (url, inc_url) = (gw.base_url(), inc_gw.base_url());
    let buffered_cases = [
        "secret-stream=resp-buffered",
        "error",
        "error-stream",
        "retrieve",
    ];
    let (buffered, incremental) = tokio::join!(
        clients::run(Sdk::OpenAi, &url, &buffered_cases),
        clients::run(Sdk::OpenAi, &inc_url, &["secret-stream=resp-incremental"]),
    );

    // Buffered, the answer denied at `output`: nothing of it was
    // released; the client read the notice and the API's own "filtered" ending.
    let withheld = &buffered[0];
    assert_eq!(withheld["deltas"], WITHHELD, "{withheld}");
    assert_eq!(withheld["status"], "incomplete");
    assert_eq!(withheld["incomplete"], "content_filter");
    assert_eq!(
        withheld["events"].as_array().unwrap().last(),
        Some(&json!("response.incomplete"))
    );
    let denied = records.session("resp-buffered");
    assert!(
        denied
            .iter()
            .any(|r| r.interception_point == Output && !r.proceeds()),
        "{denied:?}"
    );
    // Incremental: the segments before the key were released, then the
    // notice; the key never reached the client.
    let released = incremental[0]["deltas"].as_str().unwrap();
    assert!(released.starts_with("Hello from upstream."), "{released}");
    assert!(!released.contains("AKIA"), "{released}");
    assert!(released.ends_with(WITHHELD), "{released}");
    assert_eq!(incremental[0]["status"], "incomplete");
    assert!(post_model_calls(&inc_records, "resp-incremental") > 1);

    // The upstream's errors reach the SDK as they were, as its own class.
    for e in &buffered[1..3] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["body"]["code"], "rate_limit_exceeded");
        assert_eq!(e["body"]["message"], "Rate limit reached for test-model.");
    }
    // A route the gateway does not govern: refused in the OpenAI shape,
    // naming the routes it governs, never forwarded.
    let ungoverned = &buffered[3];
    let status = ungoverned["status"].as_u64().unwrap_or(0);
    assert!((400..500).contains(&status), "{ungoverned}");
    assert!(ungoverned["body"]["type"].is_string(), "{ungoverned}");
    let message = ungoverned["body"]["message"].as_str().unwrap_or("");
    assert!(message.contains("/v1/responses"), "{ungoverned}");
    assert!(
        up.seen().iter().all(|r| r.path == responses::PATH),
        "only governed routes are forwarded"
    );
    stop(g, gw).await;
    stop(inc, inc_gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_responses_a_stored_conversation_is_one_session_and_its_denied_call_is_answered_upstream()
 {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let up = responses::serve(responses::conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, |_| {}).await;
    // `chain` names no session: the gateway maps it by its
    // previous_response_id.
    let cases = [
        "chain",
        "chain-stream=resp-chain-stream",
        "unknown-previous",
    ];
    let out = clients::run(Sdk::OpenAi, &gw.base_url(), &cases).await;
    for out in &out[..2] {
        assert_eq!(out["executed"], json!(["ls"]), "{out}");
        let turns = out["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2, "{out}");
        assert_eq!(turns[0]["calls"].as_array().unwrap().len(), 1, "{out}");
        assert_eq!(turns[0]["calls"][0]["call_id"], "call_1");
        assert_eq!(turns[0]["text"], blocked("call_2"));
        let done = turns[1]["text"].as_str().unwrap_or("");
        assert!(
            done.starts_with("done: ") && done.contains("a.txt\nb.txt"),
            "{out}"
        );
        assert!(!done.contains("| ok"), "the denied call never ran: {out}");
    }
    // Unknown to the upstream: its own 404, as the SDK's own class.
    assert_eq!(out[2]["error"], "NotFoundError", "{}", out[2]);
    assert_eq!(out[2]["body"]["code"], "previous_response_not_found");

    // The upstream stored both calls it proposed: the gateway answered the
    // one it withheld from the client, which never ran it.
    let seen = up.at(responses::PATH);
    assert_eq!(seen.len(), 5, "{seen:?}");
    for continued in [&seen[1], &seen[3]] {
        let items = responses::items(&continued.body);
        let withheld = items
            .iter()
            .find(|i| i["call_id"] == "call_2")
            .unwrap_or_else(|| panic!("an output for call_2: {}", continued.body));
        assert_eq!(withheld["type"], "function_call_output");
        assert!(
            withheld["output"].to_string().contains("blocked"),
            "{withheld}"
        );
    }
    // Each stored conversation is one session: the named one, and the one
    // the gateway derived and followed by the response id.
    assert_emitted(&records, "resp-chain-stream", &TOOL_LOOP);
    let mut derived: Vec<String> = records
        .records()
        .iter()
        .filter(|r| r.interception_point == PreToolCall && r.session_id != "resp-chain-stream")
        .map(|r| r.session_id.clone())
        .collect();
    derived.dedup();
    assert_eq!(derived.len(), 1, "{derived:?}");
    assert_emitted(&records, &derived[0], &TOOL_LOOP);
    assert_denied_call(&records, &derived[0]);
    stop(g, gw).await;
    policy.shutdown().await.unwrap();
}
