//! The host's bounds, tested from outside: a session holds at most
//! `MAX_OPEN_CALLS` tool calls waiting for their `post_tool_call` (the
//! oldest is forgotten, its post then refused out of order, and counted);
//! a transform whose result breaks the §12.3 bounds is denied
//! `host_error:context_invalid` with its record and never reaches the tool
//! (in-process and served); a service that declares the `Multiplex`
//! stream but refuses it is called unary, with a log line naming the
//! fallback; and a `Describe` that never answers does not cost the first
//! emission its timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hookwire::{AgentContext, Verdict};
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{
    BoxError, Error, Host, HostMetrics, InputRole, MAX_OPEN_CALLS, RecordLog, Session, ToolCall,
    ToolResult, interceptor_fn,
};
use hookwire_server::metrics::render;
use hookwire_testkit::{LogCapture, Scripted, host_with, metric_value};
use serde_json::{Value, json};

use crate::multiplex::{Killable, call, counted, host_with as stream_host, started};

async fn turn(session: &Session) {
    assert!(session.start(["bash"]).await.unwrap().proceeds());
    let input = session.input(json!("go"), InputRole::User).await.unwrap();
    assert!(input.proceeds());
}

fn ok() -> ToolResult {
    ToolResult {
        value: json!("out"),
        is_error: false,
    }
}

#[tokio::test]
async fn a_session_forgets_its_oldest_open_tool_call_past_the_bound() {
    let mut registry = Registry::default();
    let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    let host = Host::builder("agent", "hookwire")
        .metrics(HostMetrics::register(&mut registry))
        .interceptor("allow", allow)
        .build()
        .unwrap();
    let session = host.session("s-open").unwrap();
    turn(&session).await;
    let over = 3;
    let calls: Vec<ToolCall> = (0..MAX_OPEN_CALLS + over)
        .map(|i| ToolCall::new(format!("c{i}"), "bash", json!({"cmd": "ls"})))
        .collect();
    for c in &calls {
        assert!(session.pre_tool_call(c).await.unwrap().proceeds());
    }
    let forgotten = metric_value(
        &render(&registry),
        "hookwire_host_open_calls_forgotten_total",
        &[("point", "pre_tool_call")],
    );
    assert_eq!(forgotten, over as f64);

    // The oldest `over` calls were forgotten: their posts are refused out
    // of order, before any sequence is taken.
    for c in &calls[..over] {
        let refused = session.post_tool_call(c, &ok()).await.unwrap_err();
        let Error::OutOfOrder { reason, .. } = &refused else {
            panic!("{refused:?}");
        };
        assert!(reason.contains("forgot past the bound"), "{reason}");
    }
    // The table held exactly the bound: every other call still pairs.
    for c in &calls[over..] {
        assert!(session.post_tool_call(c, &ok()).await.unwrap().proceeds());
    }
    // And each pair closed: a second post is out of order.
    let again = session.post_tool_call(&calls[over], &ok()).await;
    assert!(matches!(again, Err(Error::OutOfOrder { .. })));
}

/// About 7 MB: more than the §12.3 context bound (5 MiB).
fn seven_megabytes() -> Value {
    Value::String("x".repeat(7_000_000))
}

/// Rewrites `$target.cmd` into 7 MB at `pre_tool_call`; allows elsewhere.
fn inflate(ctx: &AgentContext) -> Verdict {
    if ctx.point() == hookwire::InterceptionPoint::PreToolCall {
        Verdict::transform("$target.cmd", seven_megabytes())
    } else {
        Verdict::allow()
    }
}

/// Runs one `pre_tool_call` through `host`, whose chain inflates the
/// target, and checks the tool never sees it: denied
/// `host_error:context_invalid`, the target as the agent sent it, a
/// record saying why.
async fn inflated_is_denied(host: &Host, records: &RecordLog) {
    let session = host.session("s-inflate").unwrap();
    turn(&session).await;
    let sent = ToolCall::new("c1", "bash", json!({"cmd": "ls"}));
    let e = session.pre_tool_call(&sent).await.unwrap();
    let mut tool_saw = Vec::new();
    if e.proceeds() {
        tool_saw.push(e.target().cloned());
    }
    assert!(tool_saw.is_empty(), "the tool ran");
    assert_eq!(e.reason(), Some("host_error:context_invalid"));
    assert_eq!(e.target(), Some(&json!({"cmd": "ls"})), "never applied");
    let record = records.session("s-inflate").pop().unwrap();
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("host_error:context_invalid")
    );
    let message = record.verdict.message.as_deref().unwrap_or_default();
    assert!(message.contains("out of bounds"), "{message}");
    assert_eq!(record.decided_by, None);
}

#[tokio::test]
async fn a_transform_past_the_size_bound_never_reaches_the_tool_in_process() {
    let records = RecordLog::new();
    let later = Arc::new(AtomicUsize::new(0));
    let seen = later.clone();
    let host = Host::builder("agent", "hookwire")
        .interceptor(
            "inflate",
            interceptor_fn(|ctx| async move { Ok::<_, BoxError>(inflate(&ctx)) }),
        )
        .interceptor(
            "later",
            interceptor_fn(move |ctx: AgentContext| {
                if ctx.point() == hookwire::InterceptionPoint::PreToolCall {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
                async { Ok::<_, BoxError>(Verdict::allow()) }
            }),
        )
        .record_sink(records.clone())
        .build()
        .unwrap();
    inflated_is_denied(&host, &records).await;
    assert_eq!(later.load(Ordering::SeqCst), 0, "the fold stopped there");
}

#[tokio::test]
async fn a_transform_past_the_size_bound_never_reaches_the_tool_served() {
    let server = Scripted::new("inflate", inflate).serve().await;
    let (host, records) = host_with(&[("inflate", &server)]);
    inflated_is_denied(&host, &records).await;
    server.shutdown().await.unwrap();
}

/// A subscriber for this test's thread, at `WARN`, writing into the
/// returned buffer.
fn warnings() -> (LogCapture, tracing::subscriber::DefaultGuard) {
    let capture = LogCapture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    (capture, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn a_declared_stream_the_service_refuses_falls_back_to_unary() {
    let (logs, _guard) = warnings();
    let (mut service, _) = counted(false);
    service.refuse_streams = true;
    let (unary, streams) = (service.unary.clone(), service.streams.clone());
    let server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    let (host, records) = stream_host(&server.endpoint(), Duration::from_secs(5), Some(1));
    // The very first emission finds the stream refused, and is sent unary.
    let s = started(&host, "s-0").await;
    for i in 0..3 {
        let e = s.pre_tool_call(&call(&format!("c{i}"), 0)).await.unwrap();
        assert!(e.proceeds(), "{:?}", e.verdict());
    }
    assert_eq!(records.records().len(), 5);
    assert_eq!(unary.load(Ordering::SeqCst), 5, "every emission unary");
    assert_eq!(streams.load(Ordering::SeqCst), 1, "the stream tried once");
    let text = logs.text();
    assert!(
        text.contains("refused it as UNIMPLEMENTED: falling back to unary calls"),
        "{text}"
    );
}

#[tokio::test]
async fn a_describe_that_never_answers_does_not_cost_the_first_emission_its_timeout() {
    let (mut service, _) = counted(false);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    service.describe_gate = Some(gate.clone());
    let (unary, described) = (service.unary.clone(), service.described.clone());
    let server = Killable::serve("127.0.0.1:0".parse().unwrap(), service);
    // Shorter than the probe's own bound: waiting for `Describe` would
    // take the whole of it.
    let (host, records) = stream_host(&server.endpoint(), Duration::from_millis(1500), None);
    let s = host.session("s-hung").unwrap();
    let e = s.start(["bash"]).await.unwrap();
    assert!(e.proceeds(), "{:?}", e.verdict());
    assert_eq!(described.load(Ordering::SeqCst), 0, "Describe still held");
    assert_eq!(unary.load(Ordering::SeqCst), 1, "sent unary meanwhile");
    let e = s.input(json!("go"), InputRole::User).await.unwrap();
    assert!(e.proceeds(), "{:?}", e.verdict());
    assert_eq!(described.load(Ordering::SeqCst), 0, "Describe still held");
    assert_eq!(records.records().len(), 2);
    gate.add_permits(64);
}
