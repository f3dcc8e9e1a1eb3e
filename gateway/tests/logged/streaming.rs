//! One governance over both transports: input redaction on a plain and a
//! streamed answer alike, and incremental mediation of a stream, which
//! releases checked segments and withholds the rest after a deny.

use hookwire::InterceptionPoint::*;
use hookwire_client::{BoxError, InterceptorBinding, interceptor_fn};
use hookwire_gateway::CredentialPool;
use hookwire_server::prelude::*;
use serde_json::json;

use super::{Reply, allow_all, conversation, gateway, host, points, sdk, upstream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pii_is_redacted_before_the_upstream_streaming_and_not() {
    let redactor = spawn_local(hookwire_demo::Redactor).await.unwrap();
    let up = upstream(conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("redactor", redactor.endpoint()).at([Input]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;

    let plain = sdk("chat", &gw.base_url(), Some("pii-plain")).await;
    assert_eq!(plain["content"], "Hello from upstream", "{plain}");
    assert_eq!(plain["finish_reason"], "stop");
    let streamed = sdk("chat-stream", &gw.base_url(), Some("pii-stream")).await;
    assert_eq!(streamed["content"], "Hello from upstream", "{streamed}");
    assert_eq!(streamed["finish_reason"], "stop");

    let chats = up.chats();
    assert_eq!(chats.len(), 2);
    let original = "Write to ann@example.com about the report.";
    for (received, stream) in chats.iter().zip([false, true]) {
        let user = &received.body["messages"][1]["content"];
        assert_eq!(
            user.as_str(),
            Some(hookwire_demo::redact(original).as_str())
        );
        assert!(!received.body.to_string().contains("ann@example.com"));
        assert_eq!(received.body["stream"] == json!(true), stream);
        // No pooled key: the client's own key goes upstream.
        assert_eq!(
            received.headers["authorization"],
            "Bearer sk-client-own-key"
        );
        assert_eq!(received.headers["x-hookwire-depth"], "0");
    }
    for session in ["pii-plain", "pii-stream"] {
        assert_eq!(
            points(&records.session(session)),
            [AgentStartup, Input, PreModelCall, PostModelCall, Output],
            "{session}"
        );
    }
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
    // Shutting the gateway down ends every open session.
    let ended = records.session("pii-plain");
    assert_eq!(ended.last().unwrap().interception_point, AgentShutdown);
    redactor.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_mediation_releases_segments_and_a_deny_withholds_the_rest() {
    let up = upstream(|body| {
        let last = &body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["content"] == "hello" {
            Reply::Answer("Hello from upstream. The key is AKIA0123456789 and more. Bye.".into())
        } else {
            conversation(body)
        }
    })
    .await;
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let guard = interceptor_fn(|ctx: AgentContext| async move {
        let leaks = ctx.point() == PostModelCall
            && ctx
                .get("response")
                .and_then(|r| r.get("content"))
                .is_some_and(|c| c.to_string().contains("AKIA"));
        Ok::<_, BoxError>(if leaks {
            Verdict::deny("policy:secret_in_output")
        } else {
            Verdict::allow()
        })
    });
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        InterceptorBinding::local("guard", guard),
    ]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |c| {
        c.incremental_output = true;
    })
    .await;

    let out = sdk("plain-stream", &gw.base_url(), None).await;
    let content = out["content"].as_str().unwrap();
    assert!(content.starts_with("Hello from upstream."), "{out}");
    assert!(!content.contains("AKIA"), "withheld: {out}");
    assert!(
        content.ends_with("[hookwire] the response was withheld: policy:secret_in_output"),
        "{out}"
    );
    assert_eq!(out["finish_reason"], "content_filter");
    let posts = records
        .records()
        .iter()
        .filter(|r| r.interception_point == PostModelCall)
        .count();
    assert!(posts > 3, "one post_model_call per segment, got {posts}");

    // The tool loop, mediated incrementally: the denied call is removed,
    // the permitted one reaches the agent, the answer completes.
    let tools = sdk("tools-stream", &gw.base_url(), None).await;
    let turns = tools["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{tools}");
    assert_eq!(turns[0]["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(turns[0]["tool_calls"][0]["id"], "call_1");
    assert!(
        turns[0]["content"]
            .as_str()
            .unwrap()
            .contains("(call_2) was blocked: policy:destructive_command")
    );
    assert_eq!(turns[1]["content"], "done: a.txt\nb.txt");
    assert_eq!(turns[1]["finish_reason"], "stop");
    let outcomes: Vec<String> = g.applied().iter().map(|a| a.outcome.clone()).collect();
    assert!(
        outcomes.contains(&"withheld:post_model_call".to_owned()),
        "{outcomes:?}"
    );
    gw.shutdown().await.unwrap();
    drop(g);
    policy.shutdown().await.unwrap();
}
