//! Effect-bearing response extensions end to end, over real gRPC: an
//! interceptor's `hookwire` asks act only in `enforce` mode, from a
//! binding whose own verdict permitted, inside its grant. The same
//! interceptor in-process and served gives the same table; the gateway
//! (a real upstream on 127.0.0.1:0) applies only what the host released;
//! the reference agent routes only a released route. The pure table over
//! every mode × profile × verdict × grant is `client/src/effect/tests.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire::{Composition, Mode, Profile, Synthesis};
use hookwire_agent::{Agent, RoutedCall, ToolError, Tools, model_fn, tool_fn};
use hookwire_client::{
    ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, Effect, Emission, Host, InputRole,
    InterceptorBinding, ModelResponse, RecordLog, ToolCall, interceptor_fn,
};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig};
use hookwire_server::prelude::*;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use InterceptionPoint::*;

/// Answers `verdict` with `extension` under `hookwire` at `point`, and
/// allows everywhere else.
#[derive(Clone)]
struct Asking {
    point: InterceptionPoint,
    verdict: Verdict,
    extension: Value,
}

#[async_trait]
impl Interceptor for Asking {
    type Response = InterceptorResponse;

    fn manifest(&self) -> Manifest {
        manifest("asking", "1.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> InterceptorResponse {
        if ctx.point() != self.point {
            return Verdict::allow().into();
        }
        let mut r = InterceptorResponse::from(self.verdict.clone());
        r.extensions
            .insert("hookwire".into(), self.extension.clone());
        r
    }
}

/// Approves every consultation with `allow`.
struct Approve;

impl ApprovalResolver for Approve {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        Box::pin(async move { Ok(ApprovalResolution::approve(request, Verdict::allow()).into()) })
    }
}

fn allow_all(name: &str) -> InterceptorBinding {
    InterceptorBinding::local(
        name,
        interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
}

fn effects_fact(record: &hookwire::InterceptionRecord) -> Value {
    record
        .extensions
        .get("hookwire")
        .and_then(|h| h.get("effects"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A grant for one binding: none declared, or these kinds.
type Grant = Option<&'static [Effect]>;

fn granted(binding: InterceptorBinding, grant: Grant) -> InterceptorBinding {
    match grant {
        None => binding,
        Some(kinds) => binding.may_effect(kinds.iter().copied()),
    }
}

// ---------------------------------------------------------------------------
// In-process and served: one table.

/// What one `pre_tool_call` came to.
#[derive(Debug, PartialEq)]
struct Outcome {
    reason: Option<String>,
    proceeds: bool,
    released: Vec<(String, Map<String, Value>)>,
    fact: Value,
}

async fn pre_tool_call(
    subject: InterceptorBinding,
    mode: Mode,
    composition: Composition,
) -> Outcome {
    let records = RecordLog::new();
    let host = Host::builder("effects-agent", "hookwire")
        .mode(mode)
        .composition(composition)
        .bind(subject)
        .bind(allow_all("other"))
        .approval_resolver(Approve)
        .record_sink(records.clone())
        .default_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let session = host.session("s").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let e: Emission = session
        .pre_tool_call(&ToolCall::new("c1", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    Outcome {
        reason: e.record().verdict.reason.clone(),
        proceeds: e.proceeds(),
        released: e.response_extensions().to_vec(),
        fact: effects_fact(e.record()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_and_served_interceptors_meet_the_same_table() {
    let route = json!({"route": {"executor": "sandbox"}});
    let first_deny = Composition::new(Profile::SequentialFirstDeny);
    let mut unanimous = Composition::new(Profile::ParallelUnanimous);
    unanimous.on_disagreement = Some(Synthesis::Approval);
    let released = |fate: &str| json!({"subject": {"kinds": ["route"], "fate": fate}});
    // (mode, composition, own verdict, grant) -> (proceeds, fate, released?)
    let cases: [(Mode, Composition, Verdict, Grant, bool, &str); 9] = [
        (
            Mode::Enforce,
            first_deny,
            Verdict::allow(),
            None,
            true,
            "released",
        ),
        (
            Mode::Enforce,
            first_deny,
            Verdict::allow(),
            Some(&[Effect::Route]),
            true,
            "released",
        ),
        (
            Mode::Enforce,
            first_deny,
            Verdict::warn("policy:note", "noted"),
            Some(&[Effect::Route]),
            true,
            "released",
        ),
        (
            Mode::Enforce,
            first_deny,
            Verdict::allow(),
            Some(&[Effect::Headers]),
            false,
            "refused",
        ),
        (
            Mode::Enforce,
            first_deny,
            Verdict::deny("policy:no"),
            Some(&[Effect::Route]),
            false,
            "not_permitted",
        ),
        (
            Mode::Enforce,
            first_deny,
            Verdict::escalate("policy:ask"),
            Some(&[Effect::Route]),
            true,
            "not_permitted",
        ),
        // A plain deny the profile offers as a disagreement, approved.
        (
            Mode::Enforce,
            unanimous,
            Verdict::deny("policy:no"),
            Some(&[Effect::Route]),
            true,
            "not_permitted",
        ),
        (
            Mode::EvaluateOnly,
            first_deny,
            Verdict::allow(),
            Some(&[Effect::Route]),
            true,
            "evaluate_only",
        ),
        (
            Mode::EvaluateOnly,
            first_deny,
            Verdict::allow(),
            Some(&[]),
            true,
            "refused",
        ),
    ];
    for (mode, composition, verdict, grant, proceeds, fate) in cases {
        let asking = Asking {
            point: PreToolCall,
            verdict: verdict.clone(),
            extension: route.clone(),
        };
        let server = spawn_local(asking.clone()).await.unwrap();
        let local = pre_tool_call(
            granted(InterceptorBinding::local("subject", asking), grant),
            mode,
            composition,
        )
        .await;
        let remote = pre_tool_call(
            granted(
                InterceptorBinding::remote("subject", server.endpoint()),
                grant,
            ),
            mode,
            composition,
        )
        .await;
        let case = format!("{mode:?} {} {verdict:?} {grant:?}", composition.profile);
        assert_eq!(local, remote, "{case}");
        assert_eq!(local.proceeds, proceeds, "{case}");
        assert_eq!(local.fact, released(fate), "{case}");
        if fate == "released" {
            assert_eq!(local.released.len(), 1, "{case}");
            assert_eq!(local.released[0].0, "subject");
            assert_eq!(local.released[0].1["hookwire"], route);
        } else {
            assert!(local.released.is_empty(), "{case}: {:?}", local.released);
        }
        if fate == "refused" {
            assert_eq!(
                local.reason.as_deref(),
                Some("host_error:verdict_invalid"),
                "{case}"
            );
        }
        server.shutdown().await.unwrap();
    }
}

// ---------------------------------------------------------------------------
// Through the gateway.

/// One request the upstream received.
#[derive(Debug, Clone)]
struct Received {
    headers: HashMap<String, String>,
    body: Value,
}

#[derive(Clone, Default)]
struct Upstream(Arc<Mutex<Vec<Received>>>);

async fn upstream_chat(State(up): State<Upstream>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    up.0.lock().unwrap().push(Received {
        headers,
        body: body.clone(),
    });
    axum::Json(json!({
        "id": "chatcmpl-up", "object": "chat.completion", "created": 1_700_000_000,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "hello"}}],
    }))
    .into_response()
}

/// An OpenAI-compatible upstream on 127.0.0.1:0 that records every chat
/// request; its base URL and its log.
async fn upstream() -> (String, Upstream) {
    let up = Upstream::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(upstream_chat))
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), up)
}

/// `POST /v1/chat/completions` to the gateway at `addr` over plain
/// HTTP/1.1: the status and the JSON body.
async fn chat(addr: std::net::SocketAddr, session: &str) -> (u16, Value) {
    let body = json!({"model": "test-model", "temperature": 1.0,
                      "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         authorization: Bearer sk-client\r\nx-hookwire-session: {session}\r\nx-client: kept\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

/// A gateway over a host with `subject` (then an allow-all) and, when
/// given, an approval resolver; each case gets its own.
async fn gateway_case(
    subject: InterceptorBinding,
    mode: Mode,
    composition: Composition,
) -> (u16, Value, Vec<Received>, Vec<hookwire::InterceptionRecord>) {
    let (url, up) = upstream().await;
    let records = RecordLog::new();
    let host = Host::builder("gateway-under-test", "hookwire")
        .mode(mode)
        .composition(composition)
        .bind(subject)
        .bind(allow_all("allow"))
        .approval_resolver(Approve)
        .record_sink(records.clone())
        .default_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let g = Gateway::new(host, GatewayConfig::new(url), CredentialPool::new()).unwrap();
    let running = g
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (status, body) = chat(running.addr(), "effects").await;
    running.shutdown().await.unwrap();
    drop(g);
    let seen = up.0.lock().unwrap().clone();
    (status, body, seen, records.session("effects"))
}

/// What the gateway's tests ask at `pre_model_call`: an override, a
/// header set and cleared, and a replaced body.
fn upstream_asks() -> Value {
    json!({
        "model": {"temperature": 0.2},
        "upstream": {"before_credentials": {"set_headers": {"x-team": "blue"},
                                            "clear_headers": ["x-client"]},
                     "after_credentials": {"body": {"model": "swapped",
                                                    "messages": [{"role": "user", "content": "replaced"}]}}},
    })
}

fn pre_model(records: &[hookwire::InterceptionRecord]) -> &hookwire::InterceptionRecord {
    records
        .iter()
        .find(|r| r.interception_point == PreModelCall)
        .expect("a pre_model_call record")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_applies_only_what_the_host_released() {
    let first_deny = Composition::new(Profile::SequentialFirstDeny);
    let all: &[Effect] = &[Effect::ModelParams, Effect::Headers, Effect::UpstreamBody];
    let asking = |verdict: Verdict| Asking {
        point: PreModelCall,
        verdict,
        extension: upstream_asks(),
    };

    // Enforced, granted (served): the override, the headers and the body
    // reach the upstream.
    let server = spawn_local(asking(Verdict::allow())).await.unwrap();
    let subject =
        InterceptorBinding::remote("subject", server.endpoint()).may_effect(all.iter().copied());
    let (status, _, seen, records) = gateway_case(subject, Mode::Enforce, first_deny).await;
    assert_eq!(status, 200);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["model"], "swapped");
    assert_eq!(seen[0].body["messages"][0]["content"], "replaced");
    assert_eq!(
        seen[0].headers.get("x-team").map(String::as_str),
        Some("blue")
    );
    assert!(!seen[0].headers.contains_key("x-client"));
    assert_eq!(
        effects_fact(pre_model(&records)),
        json!({"subject": {"kinds": ["model_params", "headers", "upstream_body"], "fate": "released"}})
    );
    server.shutdown().await.unwrap();

    // The same service behind an evaluate_only host: forwarded as the
    // client sent it.
    let server = spawn_local(asking(Verdict::allow())).await.unwrap();
    let subject =
        InterceptorBinding::remote("subject", server.endpoint()).may_effect(all.iter().copied());
    let (status, _, seen, records) = gateway_case(subject, Mode::EvaluateOnly, first_deny).await;
    assert_eq!(status, 200);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["temperature"], 1.0);
    assert_eq!(seen[0].body["messages"][0]["content"], "hi");
    assert!(!seen[0].headers.contains_key("x-team"));
    assert_eq!(
        seen[0].headers.get("x-client").map(String::as_str),
        Some("kept")
    );
    assert_eq!(
        effects_fact(pre_model(&records))["subject"]["fate"],
        "evaluate_only"
    );
    server.shutdown().await.unwrap();

    // An escalation the approval seam lifted: forwarded, unmodified.
    let subject = InterceptorBinding::local("subject", asking(Verdict::escalate("policy:ask")))
        .may_effect(all.iter().copied());
    let (status, _, seen, records) = gateway_case(subject, Mode::Enforce, first_deny).await;
    assert_eq!(status, 200);
    assert_eq!(seen[0].body["model"], "test-model");
    assert!(!seen[0].headers.contains_key("x-team"));
    assert_eq!(
        effects_fact(pre_model(&records))["subject"]["fate"],
        "not_permitted"
    );

    // A plain deny under parallel/unanimous, lifted as a disagreement by
    // the approval seam: forwarded, unmodified.
    let mut unanimous = Composition::new(Profile::ParallelUnanimous);
    unanimous.on_disagreement = Some(Synthesis::Approval);
    let subject = InterceptorBinding::local("subject", asking(Verdict::deny("policy:no")))
        .may_effect(all.iter().copied());
    let (status, _, seen, records) = gateway_case(subject, Mode::Enforce, unanimous).await;
    assert_eq!(status, 200);
    assert_eq!(seen[0].body["temperature"], 1.0);
    assert_eq!(
        effects_fact(pre_model(&records))["subject"]["fate"],
        "not_permitted"
    );

    // Granted the model parameters only, or held to transform paths, or
    // read-only: the answer is refused and nothing goes upstream.
    for grant in [
        (|b: InterceptorBinding| b.may_effect([Effect::ModelParams]))
            as fn(InterceptorBinding) -> InterceptorBinding,
        |b| b.may_transform(["$target"]),
        |b| b.may_transform(Vec::<String>::new()),
    ] {
        let server = spawn_local(asking(Verdict::allow())).await.unwrap();
        let subject = grant(InterceptorBinding::remote("subject", server.endpoint()));
        let (status, body, seen, records) = gateway_case(subject, Mode::Enforce, first_deny).await;
        assert_eq!(status, 403, "{body}");
        assert!(seen.is_empty(), "nothing forwarded");
        let pre = pre_model(&records);
        assert_eq!(
            pre.verdict.reason.as_deref(),
            Some("host_error:verdict_invalid")
        );
        assert_eq!(
            pre.extensions["hookwire"]["mutation_refused"],
            json!(["subject"])
        );
        assert_eq!(
            pre.extensions["hookwire"]["effects"]["subject"]["fate"],
            "refused"
        );
        server.shutdown().await.unwrap();
    }
}

// ---------------------------------------------------------------------------
// Through the agent loop.

async fn routed_over_grpc(
    mode: Mode,
    verdict: Verdict,
    grant: Grant,
) -> (usize, usize, Vec<RoutedCall>) {
    let server = spawn_local(Asking {
        point: PreToolCall,
        verdict,
        extension: json!({"route": {"executor": "sandbox"}}),
    })
    .await
    .unwrap();
    let host = Host::builder("agent", "hookwire")
        .mode(mode)
        .bind(granted(
            InterceptorBinding::remote("router", server.endpoint()),
            grant,
        ))
        .approval_resolver(Approve)
        .default_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let ran: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let tools = |name: &'static str| {
        let ran = ran.clone();
        Tools::new().with(tool_fn("bash", move |_args: Value| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push(name);
                Ok::<_, ToolError>(json!("ok"))
            }
        }))
    };
    let replies = Arc::new(Mutex::new(vec![
        ModelResponse {
            content: json!("done"),
            tool_calls: Vec::new(),
            finish_reason: "stop".into(),
        },
        ModelResponse {
            content: Value::Null,
            tool_calls: vec![ToolCall::new("c1", "bash", json!({"cmd": "ls"}))],
            finish_reason: "tool_calls".into(),
        },
    ]));
    let model = model_fn("mock", move |_messages: Vec<Value>| {
        let next = replies.lock().unwrap().pop();
        async move { next.ok_or_else(|| BoxError::from("script exhausted")) }
    });
    let mut agent = Agent::new(host.session("s").unwrap(), model, tools("local"))
        .executor("sandbox", tools("sandbox"));
    let (turn, _) = agent.run_once(json!("go"), InputRole::User).await.unwrap();
    server.shutdown().await.unwrap();
    let ran = ran.lock().unwrap().clone();
    let count = |n: &str| ran.iter().filter(|r| **r == n).count();
    (count("sandbox"), count("local"), turn.routed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_routes_a_served_interceptors_call_only_when_the_host_released_the_route() {
    let route: Grant = Some(&[Effect::Route]);
    let (sandbox, local, routed) = routed_over_grpc(Mode::Enforce, Verdict::allow(), route).await;
    assert_eq!((sandbox, local), (1, 0));
    assert_eq!(routed.len(), 1);
    assert_eq!(routed[0].executor, "sandbox");
    // Shadow mode, a lifted escalation: the agent's own tools.
    for (mode, verdict) in [
        (Mode::EvaluateOnly, Verdict::allow()),
        (Mode::Enforce, Verdict::escalate("policy:ask")),
    ] {
        let (sandbox, local, routed) = routed_over_grpc(mode, verdict, route).await;
        assert_eq!((sandbox, local), (0, 1), "{mode:?}");
        assert!(routed.is_empty());
    }
    // Outside the grant: the call is refused, it runs nowhere.
    let (sandbox, local, _) = routed_over_grpc(Mode::Enforce, Verdict::allow(), Some(&[])).await;
    assert_eq!((sandbox, local), (0, 0));
}
