//! Bounds at the host's edge: a large transform over gRPC is enforced
//! (the response decode limit is above the §12.3 context bound, for a
//! host whose bound lets the transformed context through), and a
//! verdict whose `reason` exceeds hookwire's bound is
//! `host_error:verdict_invalid` the same way in-process and over gRPC.

use hookwire::{ContextLimits, REASON_MAX_BYTES, Verdict};
use hookwire_client::{Host, InputRole, RecordLog};
use hookwire_server::prelude::*;
use hookwire_server::spawn_local;
use serde_json::json;

/// Answers every input with the verdict its content asks for.
struct Answers;

#[async_trait]
impl Interceptor for Answers {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("answers", "1.0.0")
    }

    async fn input(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        let content = ctx
            .get("input")
            .and_then(|i| i.get("content"))
            .and_then(|c| c.as_str())
            .unwrap_or_default();
        match content {
            // A transform carrying 4.5 MB back: over tonic's 4 MiB default.
            "big transform" => Verdict::transform("$target.content", json!("t".repeat(4_500_000))),
            "long reason" => Verdict::deny("r".repeat(3_000_000)),
            _ => Verdict::allow(),
        }
    }
}

async fn decide(host: &Host, content: &str) -> (Verdict, serde_json::Value) {
    let session = host.session("s").unwrap();
    session.start(["t"]).await.unwrap();
    let e = session
        .input(json!(content), InputRole::User)
        .await
        .unwrap();
    let target = e.target().cloned().unwrap_or_default();
    (e.verdict().clone(), target)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_transform_is_enforced_over_grpc() {
    let server = spawn_local(Answers).await.unwrap();
    // The transformed context carries the 4.5 MB target twice (as itself
    // and as `input.content`): past the default 5 MiB bound, within this
    // host's.
    let limits = ContextLimits {
        max_bytes: 12 * 1024 * 1024,
        ..ContextLimits::default()
    };
    let host = Host::builder("agent", "hookwire")
        .remote("answers", server.endpoint())
        .limits(limits)
        .build()
        .unwrap();
    let (verdict, target) = decide(&host, "big transform").await;
    assert_eq!(verdict.reason, None, "{:?}", verdict.reason);
    assert_eq!(verdict.decision, hookwire::Decision::Transform);
    assert_eq!(target["content"].as_str().map(str::len), Some(4_500_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_reason_is_verdict_invalid_in_process_and_over_grpc() {
    let server = spawn_local(Answers).await.unwrap();
    let records = RecordLog::new();
    let remote = Host::builder("agent", "hookwire")
        .remote("answers", server.endpoint())
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .build()
        .unwrap();
    let local = Host::builder("agent", "hookwire")
        .interceptor("answers", Answers)
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .build()
        .unwrap();
    for host in [&remote, &local] {
        let (verdict, _) = decide(host, "long reason").await;
        assert_eq!(
            verdict.reason.as_deref(),
            Some("host_error:verdict_invalid")
        );
        let message = verdict.message.unwrap_or_default();
        assert!(message.contains(&REASON_MAX_BYTES.to_string()), "{message}");
        assert!(message.len() < 200, "the reason's content stays out");
    }
    // Neither record carries the 3 MB reason.
    for r in records.records() {
        assert!(serde_json::to_string(&r.verdict.to_json()).unwrap().len() < 1024);
    }
}
