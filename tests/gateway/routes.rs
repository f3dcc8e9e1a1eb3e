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
