//! The `hookwire` response extension: model and header overrides merged in
//! chain order, pooled credentials (never logged), an unknown credential
//! failing closed, and callback tokens for nested calls.

use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionPoint::*;
use hookwire_client::{BoxError, InterceptorBinding, interceptor_fn};
use hookwire_gateway::{CredentialPool, Secret};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use super::{Extending, allow_all, conversation, gateway, host, points, sdk, upstream};

const KEY_A: &str = "sk-team-a-0123456789abcdefSECRET";
const KEY_B: &str = "sk-team-b-fedcba9876543210SECRET";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overrides_merge_in_chain_order_and_headers_and_a_pooled_key_reach_the_upstream() {
    let first = spawn_local(Extending {
        name: "first",
        point: PreModelCall,
        extension: json!({
            "model": {"temperature": 0.1, "max_tokens": 50,
                      "system_prompt": {"mode": "prepend", "text": "Answer in French."}},
            "upstream": {"before_credentials": {
                "set_headers": {"X-Team": "blue", "authorization": "Bearer overwritten"},
                "clear_headers": ["x-stainless-lang"],
                "credential": "team-b"}},
        }),
    })
    .await
    .unwrap();
    let second = spawn_local(Extending {
        name: "second",
        point: PreModelCall,
        extension: json!({
            "model": {"temperature": 0.9, "model": "small-model"},
            "upstream": {"after_credentials": {"set_headers": {"x-after": "1"}}},
        }),
    })
    .await
    .unwrap();
    let up = upstream(conversation).await;
    let (h, records) = host(vec![
        InterceptorBinding::remote("first", first.endpoint()),
        InterceptorBinding::remote("second", second.endpoint()),
    ]);
    let pool = CredentialPool::new()
        .with_key("team-a", Secret::new(KEY_A))
        .unwrap()
        .with_key("team-b", Secret::new(KEY_B))
        .unwrap();
    let (g, gw) = gateway(h, &up, pool, |_| {}).await;

    let out = sdk("chat", &gw.base_url(), Some("overrides")).await;
    assert_eq!(out["content"], "Hello from upstream", "{out}");
    let models = sdk("models", &gw.base_url(), None).await;
    assert_eq!(models["models"], json!(["test-model", "small-model"]));

    let chats = up.chats();
    assert_eq!(chats.len(), 1);
    let body = &chats[0].body;
    // Later wins per key; keys only one binding set keep its value.
    assert_eq!(body["temperature"], 0.9);
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["model"], "small-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Answer in French.\n\nYou are terse."})
    );
    let headers = &chats[0].headers;
    assert_eq!(headers["x-team"], "blue");
    assert_eq!(headers["x-after"], "1");
    assert!(!headers.contains_key("x-stainless-lang"), "cleared");
    // The pooled key asked for, not the client's, not the header an
    // interceptor set before credential selection.
    assert_eq!(headers["authorization"], format!("Bearer {KEY_B}"));
    // /v1/models is relayed with a pooled key (round robin).
    let listed = up.seen();
    let listing = listed.iter().find(|r| r.path == "/v1/models").unwrap();
    assert!(
        [format!("Bearer {KEY_A}"), format!("Bearer {KEY_B}")]
            .contains(&listing.headers["authorization"])
    );

    // Recorded: who set what, and the label of the key (never the key).
    let applied = g.applied();
    let entry = applied
        .iter()
        .find(|a| a.session == "overrides")
        .expect("an applied entry");
    let o = &entry.overrides;
    assert_eq!(
        o.temperature.as_ref().map(|t| t.by.as_str()),
        Some("second")
    );
    assert_eq!(o.max_tokens.as_ref().map(|t| t.by.as_str()), Some("first"));
    assert_eq!(o.model.as_ref().map(|t| t.by.as_str()), Some("second"));
    assert_eq!(entry.credential.as_deref(), Some("team-b"));
    assert!(
        entry
            .headers_set_before
            .contains(&("x-team".into(), "first".into()))
    );
    assert_eq!(
        points(&records.session("overrides")),
        [AgentStartup, Input, PreModelCall, PostModelCall, Output]
    );

    // No key in the logs, the applied log, the gateway's Debug, or the
    // answers the SDK received.
    let logged = hookwire_testkit::process_logs().text();
    let applied_json = serde_json::to_string(&applied).unwrap();
    for text in [
        logged.as_str(),
        applied_json.as_str(),
        &format!("{g:?}"),
        &out.to_string(),
        &models.to_string(),
    ] {
        assert!(!text.contains("SECRET"), "a key leaked: {text}");
    }
    assert!(
        logged.contains("hookwire_gateway::applied"),
        "the applied entries are logged"
    );
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_credential_or_malformed_extension_fails_closed_without_naming_a_key() {
    let asks = spawn_local(Extending {
        name: "asks",
        point: PreModelCall,
        extension: json!({"upstream": {"before_credentials": {"credential": "team-z"}}}),
    })
    .await
    .unwrap();
    let up = upstream(conversation).await;
    let (h, _) = host(vec![
        InterceptorBinding::remote("asks", asks.endpoint()).at([PreModelCall]),
        allow_all(),
    ]);
    let pool = CredentialPool::new()
        .with_key("team-a", Secret::new(KEY_A))
        .unwrap();
    let (g, gw) = gateway(h, &up, pool, |_| {}).await;
    let out = sdk("plain", &gw.base_url(), None).await;
    assert_eq!(out["error"], "InternalServerError", "{out}");
    assert_eq!(out["body"]["code"], "hookwire_failed_closed");
    let message = out["body"]["message"].as_str().unwrap();
    assert!(
        message.contains("team-z") && message.contains("asks"),
        "{message}"
    );
    assert!(!out.to_string().contains("SECRET"));
    assert!(up.chats().is_empty(), "nothing forwarded");
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
    asks.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_token_is_honoured_while_its_request_runs_and_a_forged_or_replayed_one_is_refused()
 {
    let up = upstream(conversation).await;
    // An interceptor that, at the main request's pre_model_call, hands
    // its callback extension to the test and waits until the test has
    // made the nested calls (what an LLM judge would do in between).
    let (token_tx, token_rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let release = Arc::new(tokio::sync::Notify::new());
    let waiting = release.clone();
    let judge = interceptor_fn(move |ctx: AgentContext| {
        let token_tx = token_tx.clone();
        let waiting = waiting.clone();
        async move {
            if ctx.point() == PreModelCall {
                let callback = ctx
                    .get("extensions")
                    .and_then(|e| e.get("hookwire"))
                    .and_then(|h| h.get("callback"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let _ = token_tx.send(callback);
                waiting.notified().await;
            }
            Ok::<_, BoxError>(Verdict::allow())
        }
    });
    // Only the judge is granted the token; the bystander sees every
    // context of the same request without it.
    let bystander: super::Seen = Default::default();
    let (h, records) = host(vec![
        InterceptorBinding::local("judge", judge).receives_callback(),
        super::spying(&bystander, |_| Verdict::allow()),
    ]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    let base = gw.base_url();
    let main = tokio::spawn({
        let base = base.clone();
        async move { sdk("chat", &base, Some("judged")).await }
    });
    let mut token_rx = token_rx;
    let callback = tokio::time::timeout(Duration::from_secs(30), token_rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(callback["base_url"], base.as_str());
    assert_eq!(callback["header"], "x-hookwire-callback");
    assert_eq!(callback["depth"], 1);
    let token = callback["token"].as_str().unwrap().to_owned();

    // Honoured: passes without interception (the judge is not asked
    // again, which would deadlock this test).
    let nested = sdk("callback", &base, Some(&token)).await;
    assert_eq!(nested["content"], "Hello from upstream", "{nested}");
    // Forged: refused, nothing forwarded.
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    let refused = sdk("callback", &base, Some(&forged)).await;
    assert_eq!(refused["error"], "AuthenticationError", "{refused}");
    assert_eq!(refused["status"], 401);
    assert_eq!(refused["body"]["code"], "invalid_callback_token");

    release.notify_one();
    let main = main.await.unwrap();
    assert_eq!(main["content"], "Hello from upstream", "{main}");
    // Replayed after its request finished: refused.
    let replayed = sdk("callback", &base, Some(&token)).await;
    assert_eq!(replayed["status"], 401, "{replayed}");
    assert!(
        replayed["body"]["message"]
            .as_str()
            .unwrap()
            .contains("already spent")
    );

    let chats = up.chats();
    assert_eq!(chats.len(), 2, "the main request and one nested call");
    let nested_req = chats
        .iter()
        .find(|r| r.headers["x-hookwire-depth"] == "1")
        .expect("the nested call went upstream at depth 1");
    assert!(!nested_req.headers.contains_key("x-hookwire-callback"));
    // One pre_model_call: the nested call was not intercepted.
    let recs = records.session("judged");
    assert_eq!(
        recs.iter()
            .filter(|r| r.interception_point == PreModelCall)
            .count(),
        1
    );
    let callbacks: Vec<_> = g.applied().into_iter().filter(|a| a.callback).collect();
    assert_eq!(callbacks.len(), 3);
    assert_eq!(callbacks[0].session, "judged");
    assert_eq!(callbacks[0].outcome, "relayed:200");
    assert_eq!(
        callbacks[0].callback_binding.as_deref(),
        Some("judge"),
        "the token the judge got is its own: the nested call is the judge's"
    );
    assert_eq!(callbacks[1].outcome, "failed:401");
    // The bystander saw the request's contexts, never the token.
    let seen = bystander.lock().unwrap().clone();
    assert!(seen.iter().any(|(p, ..)| *p == PreModelCall));
    for (point, _, _, extensions) in &seen {
        assert!(
            extensions.pointer("/hookwire/callback").is_none(),
            "{point}: {extensions}"
        );
        assert!(!extensions.to_string().contains(&token), "{point}");
    }
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}
