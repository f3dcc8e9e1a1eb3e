//! A request held for an approval outlives the client's timeout; the
//! official SDK retries it. The retry joins the held run: one approval,
//! one upstream call, one set of records, and the answer reaches the
//! client that is still there.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hookwire::approval::ApprovalResolution;
use hookwire::{InterceptionPoint, ResolvedBy, Verdict};
use hookwire_approvals::{
    Access, AccessConfig, ApprovalQueue, ApprovalServer, ApproverConfig, ApproverIdentity,
    PrincipalConfig, RunningApprovalServer,
};
use hookwire_client::prometheus_client;
use hookwire_client::{
    BoxError, Host, InterceptorBinding, RecordLog, StreamResolver, interceptor_fn,
};
use hookwire_gateway::{CredentialPool, GatewayMetrics};
use hookwire_server::RunningServer;
use hookwire_testkit::Scripted;
use prometheus_client::registry::Registry;

use super::{conversation, gateway, http, sdk, upstream};

/// The gateway's token as the approval service's host (`test-host`).
const HOST_TOKEN: &str = "hwa_test_host_0123456789abcdef0123456789abcdef";

/// An approval service knowing the gateway (`test-host`) and one
/// approver, `ann`, who decides on its queue in process ([`approve_all`]).
fn approval_service() -> ApprovalServer {
    let access = AccessConfig::default()
        .host(PrincipalConfig::token("test-host", HOST_TOKEN))
        .approver(ApproverConfig::token(
            "ann",
            "hwa_test_ann_0123456789abcdef0123456789abcdef",
        ));
    ApprovalServer::new(Access::new(&access).expect("the test access list"))
}

/// An approval service, a policy escalating every tool call, a judge
/// granted the callback token (which notes that it saw one), and a host
/// whose approvals go to the service.
async fn approving_host() -> (RunningApprovalServer, RunningServer, Host, RecordLog) {
    approving_host_noting(Arc::default()).await
}

async fn approving_host_noting(
    judge_saw_token: Arc<AtomicBool>,
) -> (RunningApprovalServer, RunningServer, Host, RecordLog) {
    let service = approval_service()
        .heartbeat_interval(Duration::from_millis(200))
        .spawn_local()
        .await
        .expect("approval service");
    let policy = Scripted::escalating_at(
        "policy",
        &[InterceptionPoint::PreToolCall],
        "needs_approval",
        "a human approves shell commands",
    )
    .serve()
    .await;
    let resolver = StreamResolver::builder(service.endpoint())
        .deadline(Duration::from_secs(60))
        .host_name("test-host")
        .bearer_token(HOST_TOKEN)
        .build()
        .expect("resolver");
    let records = RecordLog::new();
    let host = Host::builder("gateway-under-test", "hookwire")
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .remote("policy", policy.endpoint())
        .bind(
            InterceptorBinding::local(
                "judge",
                interceptor_fn(move |ctx: hookwire::AgentContext| {
                    if ctx
                        .get("extensions")
                        .and_then(|e| e.pointer("/hookwire/callback/token"))
                        .is_some()
                    {
                        judge_saw_token.store(true, Ordering::SeqCst);
                    }
                    async { Ok::<_, BoxError>(Verdict::allow()) }
                }),
            )
            .receives_callback(),
        )
        .approval_resolver(resolver)
        .approval_deadline(Duration::from_secs(60))
        .build()
        .expect("host");
    (service, policy, host, records)
}

/// Waits (bounded) until `probe` holds.
async fn until(what: &str, probe: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !probe() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Approves, as asked, every request that reaches `queue` from now on
/// (the calls of one answer wait one after the other).
fn approve_all(queue: &ApprovalQueue) -> tokio::task::JoinHandle<()> {
    let queue = queue.clone();
    tokio::spawn(async move {
        loop {
            for p in queue.pending() {
                let _ = queue
                    .resolve(
                        &p.id,
                        &ApproverIdentity::in_process("ann"),
                        ApprovalResolution::approve(&p.request, Verdict::allow()),
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// The value of `series` in the registry's text.
fn counter(registry: &Registry, series: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines()
        .filter(|l| l.starts_with(series))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_retry_of_a_request_held_for_approval_joins_it() {
    let up = upstream(conversation).await;
    let judge_saw_token = Arc::new(AtomicBool::new(false));
    let (service, _policy, host, records) = approving_host_noting(judge_saw_token.clone()).await;
    let mut registry = Registry::default();
    let metrics = GatewayMetrics::register(&mut registry);
    let (_g, gw) = gateway(host, &up, CredentialPool::new(), |c| {
        c.metrics = Some(metrics.clone());
    })
    .await;

    // The SDK waits 1 s per attempt and retries twice.
    let base = gw.base_url();
    let client = tokio::spawn(async move { sdk("retried", &base, Some("1")).await });
    let queue = service.queue().clone();
    until("the first tool call waits for approval", || {
        queue.pending().len() == 1
    })
    .await;
    let held: Vec<serde_json::Value> = queue
        .pending()
        .iter()
        .map(|p| p.request.context.to_json())
        .collect();
    let registry = Arc::new(registry);
    let r = registry.clone();
    until("the SDK's retry joined the held request", move || {
        counter(&r, "hookwire_gateway_retries_joined_total") >= 1.0
    })
    .await;
    let approver = approve_all(&queue);

    let out = client.await.unwrap();
    approver.abort();
    assert!(
        out["retries"].as_u64().is_some_and(|n| n >= 1),
        "the SDK retried: {out}"
    );
    assert_eq!(out["finish_reason"], "tool_calls", "{out}");
    assert_eq!(
        out["calls"].as_array().map(Vec::len),
        Some(2),
        "both approved calls reach the client: {out}"
    );
    assert_eq!(up.chats().len(), 1, "the upstream was called once");
    // The escalated contexts reached the approval service without the
    // request's callback token, which the granted judge did see.
    assert!(judge_saw_token.load(Ordering::SeqCst));
    for ctx in held {
        assert!(
            ctx.pointer("/extensions/hookwire/callback").is_none(),
            "{ctx}"
        );
        assert!(!ctx.to_string().contains("hwcb_"), "{ctx}");
    }
    let approved = records
        .records()
        .iter()
        .filter(|r| r.resolved_by == Some(ResolvedBy::Approval))
        .count();
    assert_eq!(approved, 2, "one approval per tool call, none twice");
    assert!(queue.pending().is_empty(), "no second approval was opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_settled_after_the_client_left_is_collected_by_its_retry() {
    let up = upstream(conversation).await;
    let (service, _policy, host, records) = approving_host().await;
    let (_g, gw) = gateway(host, &up, CredentialPool::new(), |_| {}).await;
    let addr = gw.addr();
    let body = serde_json::json!({
        "model": "test-model",
        "messages": [{"role": "user", "content": "List the files"}],
    });

    // The client sends and goes away while the calls wait for approval.
    let first = {
        let body = body.clone();
        tokio::spawn(async move { http(addr, "POST", "/v1/chat/completions", &body).await })
    };
    let queue = service.queue().clone();
    until("the first tool call waits for approval", || {
        queue.pending().len() == 1
    })
    .await;
    first.abort();
    let _ = first.await;
    let approver = approve_all(&queue);
    until("the run recorded its output", || {
        records
            .records()
            .iter()
            .any(|r| r.interception_point == InterceptionPoint::PostModelCall)
            && records
                .records()
                .iter()
                .filter(|r| r.resolved_by == Some(ResolvedBy::Approval))
                .count()
                == 2
    })
    .await;

    // The same request again (no retry header: every client of the run
    // is gone) collects the held answer.
    let before = records.records().len();
    let (status, answer) = http(addr, "POST", "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(up.chats().len(), 1, "the upstream was called once");
    assert!(queue.pending().is_empty(), "no second approval");
    assert_eq!(records.records().len(), before, "nothing ran again");
    approver.abort();
}
