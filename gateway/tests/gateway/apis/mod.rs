//! The gateway with the real clients on every API it speaks: each
//! official SDK (tests/sdk/) talks to a `hookwire_gateway::Gateway` over a
//! host with real gRPC interceptor services (the demo's policy and
//! redactor, a service that is down), which forwards to a recording mock
//! upstream of `hookwire_testkit::model_upstream`. Per SDK: a denied tool call never
//! runs, PII is transformed before the upstream sees it, a failing
//! interceptor forwards nothing, a streamed answer is mediated buffered
//! and incrementally, errors are the API's own shape, routes the gateway
//! does not govern answer in that shape, and the records equal the
//! emissions. Run them with `-- apis::`; the test names say the
//! API (`gateway_responses_*`, `gateway_messages_*`, `gateway_agents_*`).

mod agents;
mod mediation;
mod messages;
mod responses;

use std::time::Duration;

use hookwire::{InterceptionPoint, InterceptionRecord};
use hookwire_client::{BoxError, Host, InterceptorBinding, RecordLog, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, RunningGateway};
use hookwire_server::prelude::*;
use serde_json::Value;

use hookwire_testkit::model_upstream::Upstream;

use InterceptionPoint::*;

/// The points of a two-turn tool loop in which the model proposes two
/// calls, one is denied, the other's result goes back and the model
/// answers: what the records must equal.
pub const TOOL_LOOP: [InterceptionPoint; 10] = [
    AgentStartup,
    Input,
    PreModelCall,
    PostModelCall,
    PreToolCall,
    PreToolCall,
    PostToolCall,
    PreModelCall,
    PostModelCall,
    Output,
];

/// The points of one question answered.
pub const ONE_TURN: [InterceptionPoint; 5] =
    [AgentStartup, Input, PreModelCall, PostModelCall, Output];

/// The notice the gateway puts where the destructive call was: the demo
/// policy's reason and message.
pub fn blocked(call_id: &str) -> String {
    format!(
        "[hookwire] tool call \"bash\" ({call_id}) was blocked: policy:destructive_command \u{2014} bash may not delete or overwrite files recursively"
    )
}

/// The text of an answer the output guard withheld.
pub const WITHHELD: &str = "[hookwire] the response was withheld: policy:secret_in_output";

/// An in-process interceptor allowing everything.
pub fn allow_all() -> InterceptorBinding {
    InterceptorBinding::local(
        "allow",
        interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
}

/// A remote interceptor at `pre_model_call` whose service is down: every
/// call to it fails, closed.
pub fn down() -> InterceptorBinding {
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    InterceptorBinding::remote("down", gone)
        .at([PreModelCall])
        .timeout(Duration::from_millis(500))
}

/// An output guard at `point`: denies a model answer (`post_model_call`:
/// each segment of an incremental stream; `output`: the whole answer)
/// that carries an AWS key id.
pub fn secret_guard(point: InterceptionPoint) -> InterceptorBinding {
    let guard = interceptor_fn(move |ctx: AgentContext| async move {
        let member = match ctx.point() {
            PostModelCall => ctx.get("response").and_then(|r| r.get("content")),
            Output => ctx.get("output"),
            _ => None,
        };
        let leaks = ctx.point() == point && member.is_some_and(|c| c.to_string().contains("AKIA"));
        Ok::<_, BoxError>(if leaks {
            Verdict::deny("policy:secret_in_output")
        } else {
            Verdict::allow()
        })
    });
    InterceptorBinding::local("guard", guard)
}

/// A host recording every emission, schema-checked.
pub fn host(bindings: Vec<InterceptorBinding>) -> (Host, RecordLog) {
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

/// The gateway over `host`, forwarding to `up`, with the client's own
/// keys, serving on `127.0.0.1:0`.
pub async fn gateway(
    host: Host,
    up: &Upstream,
    tune: impl FnOnce(&mut GatewayConfig),
) -> (Gateway, RunningGateway) {
    let mut config = GatewayConfig::new(up.url());
    tune(&mut config);
    let g = Gateway::new(host, config, CredentialPool::new()).unwrap();
    let running = g
        .clone()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    (g, running)
}

/// Stops the gateway, then lets the host's channels close with it.
pub async fn stop(g: Gateway, gw: RunningGateway) {
    gw.shutdown().await.unwrap();
    drop(g);
}

/// The points of `records`, in order.
pub fn points(records: &[InterceptionRecord]) -> Vec<InterceptionPoint> {
    records.iter().map(|r| r.interception_point).collect()
}

/// The session's records equal `expected` up to (not counting) the
/// `agent_shutdown` an ended conversation adds.
pub fn assert_emitted(records: &RecordLog, session: &str, expected: &[InterceptionPoint]) {
    let mut got = points(&records.session(session));
    if got.last() == Some(&AgentShutdown) {
        got.pop();
    }
    assert_eq!(got, expected, "{session}");
}

/// The records of a session whose `pre_model_call` failed closed: the
/// turn up to it, its deny the spec's `host_error:interceptor_failed`.
pub fn assert_failed_closed(records: &RecordLog, session: &str) {
    assert_emitted(records, session, &[AgentStartup, Input, PreModelCall]);
    let recs = records.session(session);
    let denied = recs.iter().find(|r| !r.proceeds()).expect("a deny");
    assert_eq!(denied.interception_point, PreModelCall, "{session}");
    assert_eq!(
        denied.verdict.reason.as_deref(),
        Some("host_error:interceptor_failed")
    );
}

/// How many `post_model_call` records the session has.
pub fn post_model_calls(records: &RecordLog, session: &str) -> usize {
    records
        .session(session)
        .iter()
        .filter(|r| r.interception_point == PostModelCall)
        .count()
}

/// The denied `pre_tool_call` of the session names the policy's reason.
pub fn assert_denied_call(records: &RecordLog, session: &str) {
    let recs = records.session(session);
    let denied: Vec<_> = recs.iter().filter(|r| !r.proceeds()).collect();
    assert_eq!(denied.len(), 1, "{session}: {recs:?}");
    assert_eq!(denied[0].interception_point, PreToolCall);
    assert_eq!(
        denied[0].verdict.reason.as_deref(),
        Some("policy:destructive_command")
    );
}

/// A request carried the user's address redacted, never in the clear.
pub fn assert_redacted(body: &Value) {
    let text = body.to_string();
    assert!(!text.contains("@example.com"), "{text}");
    assert!(text.contains("[email]"), "{text}");
}
