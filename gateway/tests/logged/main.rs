//! The gateway's tests that capture every log line of their process, in
//! a binary of their own (`cargo test -p hookwire-gateway --test
//! logged`): the gateway builder here turns on
//! [`hookwire_testkit::process_logs`], a global TRACE subscriber kept for
//! the whole process, so that a case can check that no key reaches a log
//! (`extension`). In the `gateway` binary it would log everything its
//! other tests run, at TRACE, into one growing buffer.
//!
//! The official OpenAI Python SDK (pinned in
//! examples/gateway/requirements.txt, installed into .cache/venv by
//! scripts/setup.sh, driven by tests/gateway_sdk.py) talks to a
//! `hookwire_gateway::Gateway` in process, which forwards to the
//! recording Chat Completions mock of
//! [`hookwire_testkit::model_upstream::chat`]. Interceptors are real gRPC
//! services (the demo's policy and redactor, services answering with the
//! `hookwire` response extension) or in-process ones where the test must
//! hold a request open.
//!
//! This module holds the shared fixtures (the SDK runner, the host and
//! gateway builders, raw HTTP, a spying interceptor); the cases are in
//! its children by concern (`clients`: the admitted client tokens;
//! `retries`: a request held for approval joined by the SDK's retry;
//! `shared_hooks`: the coding agents' hook routes served beside the model
//! routes, one session per agent session; `shared_hooks_owner`: each such
//! session bound to its principal; the others by their names).

mod clients;
mod conversation;
mod denials;
mod extension;
mod history;
mod retries;
mod routes;
mod shared_hooks;
mod shared_hooks_owner;
mod stored;
mod streaming;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::{InterceptionPoint, InterceptionRecord};
use hookwire_client::{BoxError, Host, InterceptorBinding, RecordLog, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, RunningGateway};
use hookwire_server::prelude::*;
use serde_json::Value;

// ---------------------------------------------------------------------------
// The upstream: an OpenAI-compatible server that records what it receives
// (hookwire_testkit::model_upstream::chat). The cases import it from here.

use hookwire_testkit::model_upstream::chat::{conversation, serve as upstream};
use hookwire_testkit::model_upstream::{Reply, Upstream};

// ---------------------------------------------------------------------------
// The client: the official SDK in a child process.

/// Runs one case of tests/gateway_sdk.py and returns what it printed.
async fn sdk(case: &str, base_url: &str, arg: Option<&str>) -> Value {
    let script = hookwire_testkit::workspace_root().join("tests/gateway_sdk.py");
    let mut cmd = tokio::process::Command::new(hookwire_testkit::python_venv(&["openai"]));
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

/// An in-process interceptor allowing everything at every point.
fn allow_all() -> InterceptorBinding {
    InterceptorBinding::local(
        "allow",
        interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
}

/// A host over `bindings`, recording into the returned log and checking
/// every record against the schema.
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

/// A gateway in front of `up`, served on 127.0.0.1:0, with its config
/// tuned by `tune`; the process's log capture is on before it starts.
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

/// The interception points of `records`, in order.
fn points(records: &[InterceptionRecord]) -> Vec<InterceptionPoint> {
    records.iter().map(|r| r.interception_point).collect()
}

// ---------------------------------------------------------------------------
// Raw HTTP, for requests no SDK sends (content-part arrays, routes the
// gateway does not govern).

/// Sends one HTTP/1.1 request and returns the status and the JSON body
/// (with the headers every API's mock wants: a bearer key, which the
/// Messages mock also takes, and `anthropic-version`, which the OpenAI
/// mocks ignore).
async fn http(addr: SocketAddr, method: &str, path: &str, body: &Value) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer sk-client-own-key\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
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

/// Sends `method path` with `headers` (an `authorization` unless the
/// case names one or `x-api-key`) and `body`; the status and the JSON
/// body.
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\nconnection: close\r\n"
    );
    if !headers
        .iter()
        .any(|(k, _)| *k == "authorization" || *k == "x-api-key")
    {
        head.push_str("authorization: Bearer sk-client-own-key\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.to_string();
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
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
    // A JSON body comes whole or in one chunk.
    let json = payload
        .find('{')
        .and_then(|i| payload.rfind('}').map(|j| &payload[i..=j]))
        .unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// What an in-process interceptor saw: the point, then its `input`,
/// `messages` and `extensions` members.
type Seen = Arc<Mutex<Vec<(InterceptionPoint, Value, Value, Value)>>>;

/// An in-process interceptor that logs what it saw into `seen` and
/// answers `verdict`.
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
