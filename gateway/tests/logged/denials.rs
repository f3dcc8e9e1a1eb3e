//! What the interceptors deny or fail: a tool call, a tool result, an
//! input, an output, an interceptor that is down, a transform the gateway
//! cannot write back; and upstream errors, which pass through as they are.

use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionPoint::*;
use hookwire_client::{BoxError, InterceptorBinding, interceptor_fn};
use hookwire_gateway::CredentialPool;
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use super::{
    Reply, Seen, allow_all, conversation, gateway, host, http, points, sdk, spying, upstream,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_call_never_reaches_the_agent_and_the_loop_goes_on() {
    let policy = spawn_local(hookwire_demo::Policy).await.unwrap();
    let redactor = spawn_local(hookwire_demo::Redactor).await.unwrap();
    let up = upstream(conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]),
        InterceptorBinding::remote("redactor", redactor.endpoint()).at([Input]),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;

    for (case, session) in [("tools", "tools"), ("tools-stream", "tools-stream")] {
        let out = sdk(case, &gw.base_url(), None).await;
        let turns = out["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2, "{case}: {out}");
        // The model proposed ls and rm -rf /: only ls reaches the agent;
        // the content says what was blocked, and why.
        let first = &turns[0];
        assert_eq!(first["finish_reason"], "tool_calls", "{case}");
        let calls = first["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{case}: {first}");
        assert_eq!(calls[0]["id"], "call_1");
        assert_eq!(calls[0]["arguments"], json!({"cmd": "ls"}).to_string());
        assert_eq!(
            first["content"],
            "[hookwire] tool call \"bash\" (call_2) was blocked: policy:destructive_command \u{2014} bash may not delete or overwrite files recursively",
            "the reason, then the policy's message for the model"
        );
        // The result of the permitted call went upstream and the model
        // answered.
        assert_eq!(turns[1]["content"], "done: a.txt\nb.txt", "{case}");
        assert_eq!(turns[1]["finish_reason"], "stop");
        let recs = records.session(session);
        assert_eq!(
            points(&recs),
            [
                AgentStartup,
                Input,
                PreModelCall,
                PostModelCall,
                PreToolCall,
                PreToolCall,
                PostToolCall,
                PreModelCall,
                PostModelCall,
                Output
            ],
            "{case}"
        );
        let denied = recs
            .iter()
            .find(|r| !r.proceeds())
            .expect("the destructive call was denied");
        assert_eq!(denied.interception_point, PreToolCall);
        assert_eq!(
            denied.verdict.reason.as_deref(),
            Some("policy:destructive_command")
        );
    }
    // No request the upstream received ever carried the denied call back
    // as a call (only the notice names it), and the e-mail address the
    // client keeps in its history went upstream redacted every time.
    assert_eq!(up.chats().len(), 4);
    for r in up.chats() {
        assert!(
            !r.body.to_string().contains("bob@example.com"),
            "{}",
            r.body
        );
        assert!(
            r.body.to_string().contains("Report to [email]"),
            "{}",
            r.body
        );
        for m in r.body["messages"].as_array().unwrap() {
            assert!(!m["tool_calls"].to_string().contains("call_2"), "{m}");
            assert_ne!(m["tool_call_id"], "call_2");
        }
    }
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
    policy.shutdown().await.unwrap();
    redactor.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_denied_at_post_tool_call_is_replaced_before_the_upstream() {
    let up = upstream(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages.last().is_some_and(|m| m["role"] == "tool") {
            conversation(body)
        } else {
            Reply::Calls(vec![("call_env", "bash", json!({"cmd": "env"}))])
        }
    })
    .await;
    let no_secrets = interceptor_fn(|ctx: AgentContext| async move {
        let leaks = ctx.point() == PostToolCall
            && ctx
                .get("tool_result")
                .is_some_and(|r| r.to_string().contains("AWS_SECRET"));
        Ok::<_, BoxError>(if leaks {
            Verdict::deny("policy:secret_in_tool_result")
                .with_message("the result held a credential; ask for one without it")
        } else {
            Verdict::allow()
        })
    });
    let (h, _records) = host(vec![InterceptorBinding::local("secrets", no_secrets)]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    let out = sdk("tools", &gw.base_url(), None).await;
    let turns = out["turns"].as_array().unwrap();
    assert_eq!(turns[0]["tool_calls"][0]["id"], "call_env", "{out}");
    let chats = up.chats();
    assert_eq!(chats.len(), 2);
    let tool_message = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(!tool_message.to_string().contains("AWS_SECRET"));
    let content: Value = serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content,
        json!({"error": "blocked", "interception_point": "post_tool_call",
               "reason": "policy:secret_in_tool_result",
               "message": "the result held a credential; ask for one without it"})
    );
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_interceptor_or_a_denied_input_leaves_the_upstream_untouched() {
    // An interceptor service that is down: every call fails, closed.
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let up = upstream(conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("down", gone)
            .at([PreModelCall])
            .timeout(Duration::from_millis(500)),
        allow_all(),
    ]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    for case in ["plain", "plain-stream"] {
        let out = sdk(case, &gw.base_url(), None).await;
        assert_eq!(out["error"], "PermissionDeniedError", "{case}: {out}");
        assert_eq!(out["status"], 403);
        assert_eq!(out["body"]["type"], "hookwire_denied");
        assert_eq!(out["body"]["code"], "host_error:interceptor_failed");
    }
    assert!(up.chats().is_empty(), "nothing forwarded");
    assert!(
        records
            .records()
            .iter()
            .any(|r| r.interception_point == PreModelCall && !r.proceeds())
    );
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);

    let no_hello = interceptor_fn(|ctx: AgentContext| async move {
        let hello = ctx.point() == Input
            && ctx.get("input").and_then(|i| i.get("content")) == Some(&json!("hello"));
        Ok::<_, BoxError>(if hello {
            Verdict::deny("policy:no_hello").with_message("greet in another way")
        } else {
            Verdict::allow()
        })
    });
    let (h, _) = host(vec![InterceptorBinding::local("no-hello", no_hello)]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    let out = sdk("plain", &gw.base_url(), None).await;
    assert_eq!(out["status"], 403, "{out}");
    assert_eq!(out["body"]["code"], "policy:no_hello");
    // The agent is told why, in the API's own error message.
    let said = out["body"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("policy:no_hello"), "{out}");
    assert!(said.contains("greet in another way"), "{out}");
    assert!(up.chats().is_empty(), "nothing forwarded");
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_pass_through_and_a_denied_output_is_withheld() {
    let up = upstream(|_| {
        Reply::Error(
            429,
            json!({"error": {"message": "slow down", "type": "rate_limit_error",
                             "param": null, "code": "rate_limited"}}),
        )
    })
    .await;
    let (h, _) = host(vec![allow_all()]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    let out = sdk("plain", &gw.base_url(), None).await;
    assert_eq!(out["error"], "RateLimitError", "{out}");
    assert_eq!(out["status"], 429);
    assert_eq!(out["body"]["code"], "rate_limited");
    assert_eq!(out["body"]["message"], "slow down");
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);

    let up = upstream(conversation).await;
    let no_hello = interceptor_fn(|ctx: AgentContext| async move {
        let leaks = ctx.point() == Output
            && ctx
                .get("output")
                .is_some_and(|o| o.to_string().contains("Hello"));
        Ok::<_, BoxError>(if leaks {
            Verdict::deny("policy:no_greetings")
        } else {
            Verdict::allow()
        })
    });
    let (h, _) = host(vec![InterceptorBinding::local("quiet", no_hello)]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    for case in ["plain", "plain-stream"] {
        let out = sdk(case, &gw.base_url(), None).await;
        assert_eq!(out["finish_reason"], "content_filter", "{case}: {out}");
        assert_eq!(
            out["content"],
            "[hookwire] the response was withheld: policy:no_greetings"
        );
    }
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_model_call_transform_the_gateway_cannot_write_back_fails_closed() {
    let seen: Seen = Arc::default();
    let up = upstream(|_| Reply::Answer("never".into())).await;
    let (host, records) = host(vec![spying(&seen, |ctx| {
        if ctx.point() == PreModelCall {
            Verdict::transform(
                "$target",
                json!([{"role": "user", "content": "injected"}, {"role": "user", "content": "more"}]),
            )
        } else {
            Verdict::allow()
        }
    })]);
    let (_g, running) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let (status, body) = http(
        running.addr(),
        "POST",
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["type"], "hookwire_host_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("number of messages"), "{message}");
    assert!(up.chats().is_empty(), "nothing went upstream");
    assert!(points(&records.records()).contains(&PreModelCall));
    running.shutdown().await.unwrap();
}
