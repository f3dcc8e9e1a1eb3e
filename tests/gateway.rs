//! `hookwire gateway` with a real client: the official OpenAI Python SDK
//! (pinned in examples/gateway/requirements.txt, installed into
//! .cache/venv by scripts/setup.sh) talks to the gateway, which forwards
//! to an OpenAI-compatible upstream this test serves on 127.0.0.1:0 and
//! that records every request it receives (tests/model_upstream/chat.rs).
//! Interceptors are real gRPC services (the demo's policy and redactor,
//! services answering with the `hookwire` response extension) or
//! in-process ones where the test must hold a request open.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::{InterceptionPoint, InterceptionRecord};
use hookwire_client::{BoxError, Host, InterceptorBinding, RecordLog, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, RunningGateway, Secret};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

use InterceptionPoint::*;

// ---------------------------------------------------------------------------
// The upstream: an OpenAI-compatible server that records what it receives
// (tests/model_upstream/chat.rs).

use crate::model_upstream::chat::{conversation, serve as upstream};
use crate::model_upstream::{Reply, Upstream};

// ---------------------------------------------------------------------------
// The client: the official SDK in a child process.

fn python() -> PathBuf {
    let root = hookwire_testkit::workspace_root();
    let python = root.join(".cache/venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import openai"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the openai SDK is missing from {}: run scripts/setup.sh",
        python.display()
    );
    python
}

/// Runs one case of tests/gateway_sdk.py and returns what it printed.
async fn sdk(case: &str, base_url: &str, arg: Option<&str>) -> Value {
    let script = hookwire_testkit::workspace_root().join("tests/gateway_sdk.py");
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script)
        .arg(case)
        .arg(base_url)
        .env("OPENAI_API_KEY", "sk-client-own-key")
        .kill_on_drop(true);
    if let Some(a) = arg {
        cmd.arg(a);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the SDK case finishes within 60 s")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "gateway_sdk.py {case} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {stdout}"));
    assert_eq!(v["sdk_version"], "3.57.0", "the pinned SDK");
    v
}

// ---------------------------------------------------------------------------
// Interceptors and the gateway.

/// A gRPC interceptor service answering with a verdict and the `hookwire`
/// response extension at one point.
struct Extending {
    name: &'static str,
    point: InterceptionPoint,
    extension: Value,
}

#[async_trait]
impl Interceptor for Extending {
    type Response = InterceptorResponse;

    fn manifest(&self) -> Manifest {
        manifest(self.name, "1.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> InterceptorResponse {
        hookwire_testkit::check_context(ctx);
        let mut r = InterceptorResponse::from(Verdict::allow());
        if ctx.point() == self.point {
            r.extensions
                .insert("hookwire".into(), self.extension.clone());
        }
        r
    }
}

fn allow_all() -> InterceptorBinding {
    InterceptorBinding::local(
        "allow",
        interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
}

fn host(bindings: Vec<InterceptorBinding>) -> (Host, RecordLog) {
    let records = RecordLog::new();
    let mut b = Host::builder("gateway-under-test", "hookwire")
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .default_timeout(Duration::from_secs(30));
    for binding in bindings {
        b = b.bind(binding);
    }
    (b.build().unwrap(), records)
}

async fn gateway(
    host: Host,
    up: &Upstream,
    pool: CredentialPool,
    tune: impl FnOnce(&mut GatewayConfig),
) -> (Gateway, RunningGateway) {
    hookwire_testkit::process_logs();
    let mut config = GatewayConfig::new(up.url());
    tune(&mut config);
    let g = Gateway::new(host, config, pool).unwrap();
    let running = g
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    (g, running)
}

fn points(records: &[InterceptionRecord]) -> Vec<InterceptionPoint> {
    records.iter().map(|r| r.interception_point).collect()
}

// ---------------------------------------------------------------------------
// The cases.

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
            "[hookwire] tool call \"bash\" (call_2) was blocked: policy:destructive_command"
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
               "reason": "policy:secret_in_tool_result"})
    );
    gw.shutdown().await.unwrap();
    // The host's channels close with the gateway, so that each service
    // can drain.
    drop(g);
}

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
    let (h, records) = host(vec![InterceptorBinding::local("judge", judge)]);
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
    assert_eq!(callbacks[1].outcome, "failed:401");
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
            Verdict::deny("policy:no_hello")
        } else {
            Verdict::allow()
        })
    });
    let (h, _) = host(vec![InterceptorBinding::local("no-hello", no_hello)]);
    let (g, gw) = gateway(h, &up, CredentialPool::new(), |_| {}).await;
    let out = sdk("plain", &gw.base_url(), None).await;
    assert_eq!(out["status"], 403, "{out}");
    assert_eq!(out["body"]["code"], "policy:no_hello");
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

// ---------------------------------------------------------------------------
// Raw HTTP, for requests no SDK sends (content-part arrays, routes the
// gateway does not govern).

/// Sends one HTTP/1.1 request and returns the status and the JSON body.
async fn http(addr: SocketAddr, method: &str, path: &str, body: &Value) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer sk-client-own-key\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the gateway answers within 30 s")
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    let status: u16 = text[9..12].parse().unwrap();
    let (_, payload) = text.split_once("\r\n\r\n").unwrap();
    // A short JSON body comes whole or in one chunk.
    let json = payload
        .find('{')
        .and_then(|i| payload.rfind('}').map(|j| &payload[i..=j]))
        .unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// What an in-process interceptor saw: the point, then its `input`,
/// `messages` and `extensions` members.
type Seen = Arc<Mutex<Vec<(InterceptionPoint, Value, Value, Value)>>>;

fn spying(seen: &Seen, verdict: fn(&hookwire::AgentContext) -> Verdict) -> InterceptorBinding {
    let log = seen.clone();
    InterceptorBinding::local(
        "spy",
        interceptor_fn(move |ctx: hookwire::AgentContext| {
            let member = |k: &str| ctx.get(k).cloned().unwrap_or(Value::Null);
            log.lock().unwrap().push((
                ctx.point(),
                member("input"),
                member("messages"),
                member("extensions"),
            ));
            let v = verdict(&ctx);
            async move { Ok::<_, BoxError>(v) }
        }),
    )
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
