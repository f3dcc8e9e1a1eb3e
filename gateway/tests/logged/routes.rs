//! The fallback: routes the gateway does not govern answer 404 (or 405 for
//! another method on a governed route) in the API's error shape, and
//! nothing is forwarded.

use hookwire_gateway::CredentialPool;
use serde_json::json;

use super::{Reply, allow_all, gateway, host, http, upstream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_it_does_not_govern_answer_404_in_the_apis_shape_and_forward_nothing() {
    let up = upstream(|_| Reply::Answer("never".into())).await;
    let (host, _) = host(vec![allow_all()]);
    let (_g, running) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let (status, body) = http(
        running.addr(),
        "POST",
        "/v1/embeddings",
        &json!({"input": "x"}),
    )
    .await;
    assert_eq!(status, 404);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("POST /v1/embeddings"), "{message}");
    for governed in [
        "POST /v1/chat/completions",
        "POST /v1/responses",
        "POST /v1/messages",
    ] {
        assert!(message.contains(governed), "{message}");
    }
    assert_eq!(body["error"]["code"], "route_not_governed");
    // An Anthropic route the gateway does not govern (it governs
    // `POST /v1/messages`): the Anthropic shape.
    let (status, body) = http(running.addr(), "POST", "/v1/messages/batches", &json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "not_found_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/chat/completions")
    );
    let (status, body) = http(running.addr(), "GET", "/v1/chat/completions", &json!({})).await;
    assert_eq!(status, 405);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("use POST"),
        "{body}"
    );
    assert!(up.seen().is_empty(), "nothing was forwarded");
    running.shutdown().await.unwrap();
}

/// What Claude Code sends through `ANTHROPIC_BASE_URL`: `?beta=true`, a
/// `system` entry inside `messages`, and `count_tokens`. The system entry
/// is governed (the chain sees it at `pre_model_call`, and a deny over it
/// forwards nothing); `count_tokens` is answered here and never forwarded,
/// checked like a Messages request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_requests_are_accepted_and_their_system_entries_governed() {
    use hookwire_testkit::model_upstream::messages;
    let up = messages::serve(messages::conversation).await;
    let seen = super::Seen::default();
    let (host, _) = host(vec![super::spying(&seen, |ctx| {
        let mentions = ctx
            .get("messages")
            .is_some_and(|m| m.to_string().contains("FORBIDDEN-NOTE"));
        if mentions {
            hookwire::Verdict::deny("policy:forbidden_instructions")
        } else {
            hookwire::Verdict::allow()
        }
    })]);
    let (_g, running) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let body = |note: &str| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "You are Claude Code.",
               "messages": [{"role": "user", "content": "hello"},
                            {"role": "system", "content": note},
                            {"role": "user", "content": "hello again"}]})
    };

    let (status, answer) = http(
        running.addr(),
        "POST",
        "/v1/messages?beta=true",
        &body("Mind the repository."),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let forwarded = up.at(messages::PATH);
    assert_eq!(forwarded.len(), 1);
    assert_eq!(
        forwarded[0].body["messages"][1],
        json!({"role": "system", "content": "Mind the repository."})
    );
    let rendered = seen
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.0 == hookwire::InterceptionPoint::PreModelCall)
        .map(|s| s.2.clone())
        .expect("pre_model_call was emitted");
    assert!(
        rendered
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "system" && m["content"] == "Mind the repository."),
        "{rendered}"
    );

    // Denied over the system entry alone: refused, nothing forwarded.
    let (status, refused) = http(
        running.addr(),
        "POST",
        "/v1/messages?beta=true",
        &body("FORBIDDEN-NOTE"),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["type"], "permission_error");
    assert_eq!(up.at(messages::PATH).len(), 1);

    // count_tokens: an estimate, nothing forwarded, no point emitted; a
    // body /v1/messages would refuse is refused the same way.
    let emitted = seen.lock().unwrap().len();
    let (status, counted) = http(
        running.addr(),
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &json!({"model": "claude-sonnet-4-5",
                "messages": [{"role": "user", "content": "x".repeat(400)}]}),
    )
    .await;
    assert_eq!(status, 200, "{counted}");
    assert_eq!(counted["input_tokens"], 100);
    let (status, bad) = http(
        running.addr(),
        "POST",
        "/v1/messages/count_tokens",
        &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "tool", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["type"], "invalid_request_error");
    let (status, _) = http(
        running.addr(),
        "GET",
        "/v1/messages/count_tokens",
        &json!({}),
    )
    .await;
    assert_eq!(status, 405);
    assert_eq!(seen.lock().unwrap().len(), emitted);
    assert!(
        up.seen().iter().all(|r| r.path == messages::PATH),
        "count_tokens is never forwarded"
    );
    running.shutdown().await.unwrap();
}
