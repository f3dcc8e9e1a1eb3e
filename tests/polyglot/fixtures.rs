//! Host fixtures the scenarios share: the recording passthrough bound
//! before the service, hosts connected by `Describe`, exact JSON equality,
//! an approving resolver, and a scripted model with logging tools.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire::json;
use hookwire::{AgentContext, Verdict};
use hookwire_agent::{Model, ToolError, Tools, model_fn, tool_fn};
use hookwire_client::{
    ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, Host, HostBuilder, IdentityProvider,
    InterceptorBinding, ModelResponse, RecordLog, ToolCall, interceptor_fn,
};
use hookwire_testkit as testkit;
use serde_json::{Value, json};

use crate::service::Service;

pub const REMOTE: &str = "svc";
/// How long `connect` waits for the service's `Describe`.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Every context an in-process interceptor saw, in emission order.
pub type Seen = Arc<Mutex<Vec<AgentContext>>>;

/// An explicit allow-all (§7: a deliberate passthrough is a registered
/// interceptor) that also records what it was handed: registered first, it
/// sees exactly the context the remote service is sent next.
pub fn passthrough() -> (InterceptorBinding, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let binding = InterceptorBinding::local(
        "passthrough",
        interceptor_fn(move |ctx: AgentContext| {
            log.lock().unwrap().push(ctx);
            async { Ok::<_, BoxError>(Verdict::allow()) }
        }),
    );
    (binding, seen)
}

/// The passthrough at every point, then the service at the points its
/// manifest declares.
pub async fn host_with_passthrough(service: &Service) -> (Host, RecordLog, Seen) {
    let (b, records) = testkit::host();
    connect_with_passthrough(b, service, records).await
}

/// The same under the `null` identity provider: the default `jcs-sha256`
/// provider refuses integers beyond ±(2^53 − 1) (§4.4, §10.2) before any
/// interceptor sees them, and these tests send the whole 64-bit range.
pub async fn exact_host_with_passthrough(service: &Service) -> (Host, RecordLog, Seen) {
    let (b, records) = testkit::host();
    let b = b.identity_provider(IdentityProvider::Null);
    connect_with_passthrough(b, service, records).await
}

pub async fn connect_with_passthrough(
    b: HostBuilder,
    service: &Service,
    records: RecordLog,
) -> (Host, RecordLog, Seen) {
    let (pass, seen) = passthrough();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .expect("Describe answered");
    (host, records, seen)
}

/// The verdict's reason, empty without one.
pub fn reason(e: &hookwire_client::Emission) -> &str {
    e.reason().unwrap_or_default()
}

/// JSON text equality on top of value equality: tells `1` from `1.0` and
/// `0.0` from `-0.0`. Members are compared in name order (the map keeps
/// insertion order where serde_json's `preserve_order` is on).
pub fn assert_exact(actual: &Value, expected: &Value, what: &str) {
    assert_eq!(actual, expected, "{what}");
    assert_eq!(
        json::encode(&by_name(actual)),
        json::encode(&by_name(expected)),
        "{what} (as text)"
    );
}

/// `value` with every object's members in name order.
fn by_name(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut names: Vec<&String> = map.keys().collect();
            names.sort_unstable();
            Value::Object(
                names
                    .into_iter()
                    .map(|name| (name.clone(), by_name(&map[name])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(by_name).collect()),
        other => other.clone(),
    }
}

/// Approves every liftable deny with `allow`, remembering the requests.
#[derive(Clone, Default)]
pub struct Approver {
    /// Every request it was asked to resolve.
    pub requests: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl ApprovalResolver for Approver {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        self.requests.lock().unwrap().push(request.clone());
        Box::pin(async move { Ok(ApprovalResolution::approve(request, Verdict::allow()).into()) })
    }
}

/// A model response asking for the tool calls of `list`.
pub fn calls(list: &[(&str, &str, Value)]) -> ModelResponse {
    ModelResponse {
        content: Value::Null,
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.clone()))
            .collect(),
        finish_reason: "tool_calls".into(),
    }
}

/// A model response that answers `text`.
pub fn answer(text: &str) -> ModelResponse {
    ModelResponse {
        content: json!(text),
        tool_calls: Vec::new(),
        finish_reason: "stop".into(),
    }
}

/// Every tool invocation: its name and arguments.
pub type Invocations = Arc<Mutex<Vec<(String, Value)>>>;

/// A scripted model (and what it was shown) plus tools that log their
/// invocations: `bash`, `wire_transfer`, `read_file` (which returns an AWS
/// key) and `echo`.
pub fn scripted(
    responses: Vec<ModelResponse>,
) -> (impl Model, Arc<Mutex<Vec<Vec<Value>>>>, Tools, Invocations) {
    let script = Arc::new(Mutex::new(VecDeque::from(responses)));
    let shown: Arc<Mutex<Vec<Vec<Value>>>> = Arc::default();
    let shown_log = shown.clone();
    let model = model_fn("mock-model", move |messages: Vec<Value>| {
        shown_log.lock().unwrap().push(messages);
        let next = script.lock().unwrap().pop_front();
        futures::future::ready(next.ok_or_else(|| BoxError::from("script exhausted")))
    });
    let invoked: Invocations = Arc::default();
    let tool = |name: &'static str, result: fn(&Value) -> Value| {
        let log = invoked.clone();
        tool_fn(name, move |args: Value| {
            log.lock().unwrap().push((name.to_owned(), args.clone()));
            futures::future::ready(Ok::<_, ToolError>(result(&args)))
        })
    };
    let tools = Tools::new()
        .with(tool("bash", |_| json!({"stdout": "total 0\n", "code": 0})))
        .with(tool(
            "wire_transfer",
            |a| json!({"status": "sent", "amount": a["amount"]}),
        ))
        .with(tool(
            "read_file",
            |_| json!({"content": "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"}),
        ))
        .with(tool("echo", |a| a.clone()));
    (model, shown, tools, invoked)
}
