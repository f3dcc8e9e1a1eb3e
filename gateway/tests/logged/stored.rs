//! A Responses conversation continued by `previous_response_id` on an
//! instance that never served it (another replica, a restart, an
//! idle-out): the history is read back from the upstream and governed
//! whole with the request, so the tool output answering a call another
//! instance proposed is governed, not refused; and with a key pool the
//! answer is continued only by the principal whose tag it carries.

use hookwire::InterceptionPoint::*;
use hookwire_client::RecordLog;
use hookwire_gateway::{CredentialPool, Gateway, RunningGateway, Secret};
use serde_json::{Value, json};

use super::history::{guard, points_of, post};
use super::{gateway, host};
use hookwire_testkit::model_upstream::{Upstream, responses};

fn pool() -> CredentialPool {
    CredentialPool::new()
        .with_key("pooled", Secret::new("sk-pooled"))
        .unwrap()
}

async fn guarded(up: &Upstream, pooled: bool) -> (Gateway, RunningGateway, RecordLog) {
    let (h, records) = host(vec![guard()]);
    let pool = if pooled {
        pool()
    } else {
        CredentialPool::new()
    };
    let (g, gw) = gateway(h, up, pool, |_| {}).await;
    (g, gw, records)
}

fn tools() -> Value {
    json!([{"type": "function", "name": "bash", "parameters": {"type": "object"}}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_tool_loop_continued_on_the_other_instance_is_governed_with_a_pool() {
    tool_loop_across_instances(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_tool_loop_continued_on_the_other_instance_is_governed_with_the_clients_key() {
    tool_loop_across_instances(false).await;
}

async fn tool_loop_across_instances(pooled: bool) {
    let up = responses::serve(responses::conversation).await;
    let (g1, gw1, _) = guarded(&up, pooled).await;
    let (g2, gw2, records2) = guarded(&up, pooled).await;
    let a = [
        ("authorization", "Bearer client-a"),
        ("x-hookwire-session", "stored-1"),
    ];
    let ask = json!({"model": "test-model", "input": "List the files", "tools": tools()});
    let (s, first) = post(gw1.addr(), "/v1/responses", &a, &ask).await;
    assert_eq!(s, 200, "{first}");
    let calls: Vec<&Value> = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call")
        .collect();
    assert_eq!(calls.len(), 1, "the destructive call was removed: {first}");
    assert_eq!(calls[0]["call_id"], "call_1");
    let tagged = &up.at("/v1/responses")[0].body["metadata"]["hookwire_owner"];
    if pooled {
        assert!(
            tagged.as_str().is_some_and(|t| t.len() == 32),
            "the pooled answer carries its owner's tag: {tagged}"
        );
    } else {
        assert!(
            tagged.is_null(),
            "the client's own key needs no tag: {tagged}"
        );
    }

    // The output goes to the instance that never saw the conversation.
    let output = json!({"model": "test-model", "tools": tools(),
        "previous_response_id": first["id"],
        "input": [{"type": "function_call_output", "call_id": "call_1",
                   "output": "a.txt sk-live-123"}]});
    let (s, done) = post(gw2.addr(), "/v1/responses", &a, &output).await;
    assert_eq!(s, 200, "governed, not refused as unpaired: {done}");
    let text = done["output"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("a.txt [key]"), "{done}");
    assert_eq!(
        points_of(&records2, "stored-1"),
        [
            AgentStartup,
            Input,
            PreToolCall,
            PostToolCall,
            PreModelCall,
            PostModelCall,
            Output
        ],
        "the stored user entry opened the turn, the call from the stored answer was governed"
    );
    // Upstream: the history was read back, the output went redacted, and
    // the call the client never got was answered with the blocked notice.
    assert_eq!(
        up.at(&format!("/v1/responses/{}", first["id"].as_str().unwrap()))
            .len(),
        1
    );
    let sent = &up.at("/v1/responses")[1].body;
    let sent = sent.to_string();
    assert!(
        !sent.contains("sk-live-123") && sent.contains("[key]"),
        "{sent}"
    );
    assert!(
        sent.contains("call_2") && sent.contains("hookwire:call_not_answered"),
        "{sent}"
    );
    for (g, gw) in [(g1, gw1), (g2, gw2)] {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principal_cannot_continue_an_answer_on_an_instance_that_never_saw_it() {
    let up = responses::serve(responses::conversation).await;
    let (g1, gw1, _) = guarded(&up, true).await;
    let (g2, gw2, _) = guarded(&up, true).await;
    let a = [("authorization", "Bearer client-a")];
    let (s, first) = post(
        gw1.addr(),
        "/v1/responses",
        &a,
        &json!({"model": "test-model", "input": "hi"}),
    )
    .await;
    assert_eq!(s, 200, "{first}");
    let continues = json!({"model": "test-model", "input": "what did I say?",
                           "previous_response_id": first["id"]});
    let b = [("authorization", "Bearer client-b")];
    let (s, refused) = post(gw2.addr(), "/v1/responses", &b, &continues).await;
    assert_eq!(s, 403, "{refused}");
    assert_eq!(
        refused["error"]["code"],
        "hookwire:response_owned_by_another_client"
    );
    assert_eq!(
        up.at("/v1/responses").len(),
        1,
        "nothing of B's went upstream"
    );
    // A continues on the instance that never saw it.
    let (s, answer) = post(gw2.addr(), "/v1/responses", &a, &continues).await;
    assert_eq!(s, 200, "{answer}");
    for (g, gw) in [(g1, gw1), (g2, gw2)] {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}
