//! Declared hosts over real gRPC services on 127.0.0.1:0: `hookwire.grpc`
//! metadata reaches the service on every call, and `connect` fills an
//! absent `at` from the service's `Describe` manifest.

use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{Host, InputRole, RecordLog, ShutdownReason, ToolCall};
use hookwire_server::prelude::*;
use hookwire_testkit::serve_gated;
use serde_json::{Value, json};

/// Denies every tool call; allows the rest.
struct NoTools(Vec<InterceptionPoint>);

#[async_trait]
impl Interceptor for NoTools {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest("no-tools", "1.0.0");
        m.points = self.0.clone();
        m
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        Verdict::deny("policy:no_tools")
    }
}

/// An environment variable of this process with a header-safe value
/// (tests may not set variables: the workspace forbids `unsafe`).
fn some_variable() -> (String, String) {
    std::env::vars()
        .find(|(k, v)| {
            k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && !v.is_empty()
                && v.len() < 512
                && v.bytes().all(|b| (0x21..0x7f).contains(&b))
        })
        .expect("some environment variable")
}

async fn run_session(host: &Host) -> Vec<hookwire::InterceptionRecord> {
    let s = host.session("s").unwrap();
    s.start(["bash"]).await.unwrap();
    s.input(json!("hello"), InputRole::User).await.unwrap();
    s.pre_tool_call(&ToolCall::new("c1", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    s.shutdown(ShutdownReason::Completed).await.unwrap();
    let records = host.record_buffer().unwrap().session("s");
    records.iter().for_each(hookwire_testkit::check_record);
    records
}

fn reasons(records: &[hookwire::InterceptionRecord]) -> Vec<Value> {
    records
        .iter()
        .map(|r| json!([r.interception_point.as_str(), r.verdict.reason]))
        .collect()
}

#[tokio::test]
async fn metadata_from_the_environment_is_sent_on_every_call() {
    let (var, value) = some_variable();
    let policy = serve_gated(NoTools(vec![]), &format!("Bearer {value}")).await;
    let endpoint = policy.endpoint();
    let doc = |metadata: Value| {
        json!({
            "declaration": "agent-hooks-declaration/1.0",
            "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                          "config": {"endpoint": endpoint, "metadata": metadata}}],
        })
    };
    let registry = Registry::standard();
    let with = Declaration::from_value(&doc(
        json!({"authorization": {"env": var, "prefix": "Bearer "}}),
    ))
    .unwrap();
    let host = Host::declared("agent", "hookwire")
        .load(&with, &registry)
        .unwrap();
    let records = run_session(&host).await;
    assert_eq!(
        reasons(&records),
        [
            json!(["agent_startup", null]),
            json!(["input", null]),
            json!(["pre_tool_call", "policy:no_tools"]),
            json!(["agent_shutdown", null]),
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.declaration.as_deref() == Some("agent-hooks-declaration/1.0"))
    );

    let without = Declaration::from_value(&doc(json!({}))).unwrap();
    let host = Host::declared("agent", "hookwire")
        .load(&without, &registry)
        .unwrap();
    let s = host.session("s").unwrap();
    assert!(!s.start(["bash"]).await.unwrap().proceeds());
    s.shutdown(ShutdownReason::Completed).await.unwrap();
    let records = host.record_buffer().unwrap().session("s");
    records.iter().for_each(hookwire_testkit::check_record);
    assert_eq!(records.len(), 2);
    assert!(
        records
            .iter()
            .all(|r| r.verdict.reason.as_deref() == Some("host_error:interceptor_failed")),
        "{:?}",
        reasons(&records)
    );
    policy.shutdown().await.unwrap();
}

#[tokio::test]
async fn connect_fills_an_absent_at_from_describe_and_keeps_a_stated_one() {
    let service = spawn_local(NoTools(vec![InterceptionPoint::PreToolCall]))
        .await
        .unwrap();
    let d = Declaration::from_value(&json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [
            {"id": "described", "kind": "hookwire.grpc", "config": {"endpoint": service.endpoint()}},
            {"id": "stated", "kind": "hookwire.grpc", "config": {"endpoint": service.endpoint()}, "at": ["input", "output"]},
            {"id": "pass", "kind": "hookwire.allow"},
        ],
    }))
    .unwrap();
    let registry = Registry::standard();
    let log = RecordLog::new();
    let host = Host::declared("agent", "hookwire")
        .record_sink(log.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .connect(&d, &registry, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(
        host.chain(InterceptionPoint::PreToolCall),
        ["described", "pass"]
    );
    assert_eq!(host.chain(InterceptionPoint::Input), ["stated", "pass"]);
    assert_eq!(host.chain(InterceptionPoint::AgentStartup), ["pass"]);
    // `load` keeps the resolved form: every surface point.
    let loaded = Host::declared("agent", "hookwire")
        .load(&d, &registry)
        .unwrap();
    assert_eq!(
        loaded.chain(InterceptionPoint::AgentStartup),
        ["described", "pass"]
    );

    // A service that does not answer Describe refuses the connect.
    service.shutdown().await.unwrap();
    let e = Host::declared("agent", "hookwire")
        .connect(&d, &registry, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(
        e.refusal().unwrap().class,
        hookwire_client::declaration::RefusalClass::BindingRejected
    );
}
