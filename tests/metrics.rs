//! Prometheus metrics with the real parts: a host with remote services on
//! 127.0.0.1:0, an interceptor service and an approval service each
//! serving `/metrics` over HTTP, every exposition checked by
//! `promtool check metrics` (Debian's prometheus package, installed by
//! `scripts/setup.sh`) and its counted values asserted after a known
//! session; the shipped alert rules checked by `promtool check rules` and
//! their unit tests (gateway and host series) run by `promtool test rules`.
//! The gateway's series are in its own tests (`gateway/tests/gateway/metrics.rs`).

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire::{InterceptionPoint, Verdict};
use hookwire_approvals::{Access, ApprovalServer, ApproverIdentity};
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{
    ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, Host, HostMetrics, InputRole,
    InterceptorBinding, RecordLog, RecordSink, ShutdownReason, ToolCall, ToolResult,
    interceptor_fn,
};
use hookwire_server::Server;
use hookwire_server::metrics::ServerMetrics;
use hookwire_server::metrics::{SharedRegistry, render, serve_metrics};
use hookwire_testkit::{
    Scripted, approval_request, metric_sample as sample, metric_value as value, promtool,
    promtool_accepts, target_str, workspace_root,
};
use serde_json::json;
use tokio::net::TcpListener;

use InterceptionPoint::*;

/// Serves `registry` at `/metrics` on 127.0.0.1:0 until the test ends.
pub(crate) async fn expose(registry: SharedRegistry) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_metrics(listener, registry, std::future::pending()));
    addr
}

/// A sink that panics on every record: each one is a drop.
struct Panicking;

impl RecordSink for Panicking {
    fn record(&self, _: &hookwire::InterceptionRecord) {
        panic!("this sink always fails");
    }
}

/// Approves every request with `allow`.
struct Approve;

impl ApprovalResolver for Approve {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        Box::pin(async move { Ok(ApprovalResolution::approve(request, Verdict::allow()).into()) })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_session_is_counted_by_the_host_and_the_service_and_promtool_accepts_both() {
    // The service: denies `rm` tool calls with a policy reason.
    let service_registry: SharedRegistry = Arc::default();
    let service_metrics = ServerMetrics::register(&mut service_registry.lock().unwrap());
    let policy = Server::builder()
        .metrics(service_metrics)
        .service(Scripted::new("policy", |ctx| {
            if target_str(ctx, "cmd").is_some_and(|c| c.starts_with("rm ")) {
                Verdict::deny("no_rm").with_message("rm is not allowed")
            } else {
                Verdict::allow()
            }
        }))
        .spawn_local()
        .await
        .unwrap();
    let slow = Scripted::allow_all("slow")
        .with_delay(Duration::from_millis(400))
        .serve()
        .await;
    let service_scrape = expose(service_registry.clone()).await;

    // The host: its own registry, read by the text encoder.
    let mut registry = Registry::default();
    let metrics = HostMetrics::register(&mut registry);
    let records = RecordLog::new();
    let escalate = interceptor_fn(|_| async {
        Ok::<_, BoxError>(Verdict::escalate("needs_human").with_message("ask someone"))
    });
    let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    let host = Host::builder("metrics-agent", "hookwire")
        .metrics(metrics)
        .interceptor("base", allow)
        .bind(InterceptorBinding::remote("policy", policy.endpoint()).at([PreToolCall]))
        .bind(
            InterceptorBinding::remote("slow", slow.endpoint())
                .at([PreModelCall])
                .timeout(Duration::from_millis(60)),
        )
        .bind(InterceptorBinding::local("escalator", escalate).at([PostToolCall]))
        .approval_resolver(Approve)
        .record_sink(records.clone())
        .record_sink(Panicking)
        .build()
        .unwrap();

    let session = host.session("run-1").unwrap();
    let during = render(&registry);
    assert_eq!(value(&during, "hookwire_host_sessions_open", &[]), 1.0);
    assert!(session.start(["bash"]).await.unwrap().proceeds());
    let turn = session.input(json!("tidy up"), InputRole::User).await;
    assert!(turn.unwrap().proceeds());
    let call = ToolCall::new("c1", "bash", json!({"cmd": "rm -rf /"}));
    assert!(!session.pre_tool_call(&call).await.unwrap().proceeds());
    for _ in 0..2 {
        let e = session
            .pre_model_call("m", json!([{"role": "user", "content": "hi"}]))
            .await
            .unwrap();
        assert!(!e.proceeds());
    }
    let ls = ToolCall::new("c2", "bash", json!({"cmd": "ls"}));
    assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
    let result = ToolResult {
        value: json!("ok"),
        is_error: false,
    };
    assert!(
        session
            .post_tool_call(&ls, &result)
            .await
            .unwrap()
            .proceeds(),
        "the escalation was approved"
    );
    session.shutdown(ShutdownReason::Completed).await.unwrap();
    drop(session);

    let text = render(&registry);
    promtool_accepts("host", &text);
    let denies = "hookwire_host_denies_total";
    let at = |p: InterceptionPoint, reason: &'static str| {
        [
            ("point", p.as_str()),
            ("mode", "enforce"),
            ("reason", reason),
        ]
    };
    assert_eq!(value(&text, denies, &at(PreToolCall, "policy")), 1.0);
    assert_eq!(
        value(
            &text,
            denies,
            &at(PreModelCall, "host_error:interceptor_timeout")
        ),
        2.0
    );
    assert_eq!(
        sample(&text, denies, &[("reason", "no_rm")]),
        None,
        "policy reasons are folded unless the operator opts in"
    );
    let emissions = "hookwire_host_emissions_total";
    let decided = |p: InterceptionPoint, d: &'static str| {
        [("point", p.as_str()), ("mode", "enforce"), ("decision", d)]
    };
    assert_eq!(value(&text, emissions, &decided(PreToolCall, "deny")), 1.0);
    assert_eq!(value(&text, emissions, &decided(PreToolCall, "allow")), 1.0);
    assert_eq!(value(&text, emissions, &decided(PreModelCall, "deny")), 2.0);
    assert_eq!(
        value(&text, emissions, &decided(PostToolCall, "allow")),
        1.0
    );
    assert_eq!(
        value(&text, emissions, &decided(AgentStartup, "allow")),
        1.0
    );
    let shadow = [
        ("point", "pre_tool_call"),
        ("mode", "evaluate_only"),
        ("decision", "deny"),
    ];
    assert_eq!(
        value(&text, emissions, &shadow),
        0.0,
        "nothing ran in shadow"
    );
    let calls = "hookwire_host_interceptor_calls_total";
    let called = |i: &'static str, o: &'static str| [("interceptor", i), ("outcome", o)];
    assert_eq!(value(&text, calls, &called("slow", "timeout")), 2.0);
    assert_eq!(value(&text, calls, &called("slow", "ok")), 0.0);
    // A deny is an answered call: both policy calls are `ok`.
    assert_eq!(value(&text, calls, &called("policy", "ok")), 2.0);
    assert_eq!(value(&text, calls, &called("base", "ok")), 8.0);
    assert_eq!(
        value(
            &text,
            "hookwire_host_interceptor_call_duration_seconds_count",
            &[("interceptor", "slow")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "hookwire_host_approvals_total",
            &[("outcome", "approved")]
        ),
        1.0
    );
    assert_eq!(
        value(&text, "hookwire_host_approval_wait_seconds_count", &[]),
        1.0
    );
    assert_eq!(
        value(&text, "hookwire_host_record_sink_deliveries_total", &[]),
        8.0
    );
    assert_eq!(
        value(&text, "hookwire_host_record_sink_drops_total", &[]),
        8.0
    );
    assert_eq!(value(&text, "hookwire_host_emissions_in_flight", &[]), 0.0);
    assert_eq!(value(&text, "hookwire_host_sessions_open", &[]), 0.0);
    assert_eq!(records.records().len(), 8);
    records
        .records()
        .iter()
        .for_each(hookwire_testkit::check_record);

    let served = hookwire_testkit::scrape_metrics(service_scrape);
    promtool_accepts("interceptor service", &served);
    let requests = "hookwire_interceptor_requests_total";
    let answered = |p: InterceptionPoint, d: &'static str| {
        [
            ("service", "policy"),
            ("point", p.as_str()),
            ("decision", d),
        ]
    };
    assert_eq!(
        value(&served, requests, &answered(PreToolCall, "deny")),
        1.0
    );
    assert_eq!(
        value(&served, requests, &answered(PreToolCall, "allow")),
        1.0
    );
    assert_eq!(
        value(
            &served,
            "hookwire_interceptor_request_duration_seconds_count",
            &[("service", "policy"), ("point", "pre_tool_call")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &served,
            "hookwire_interceptor_requests_in_flight",
            &[("service", "policy")]
        ),
        0.0
    );
    policy.shutdown().await.unwrap();
    slow.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_deny_is_counted_under_its_mode_never_as_enforcement() {
    let mut registry = Registry::default();
    let metrics = HostMetrics::register(&mut registry);
    let deny = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("no_rm")) });
    let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    let host = Host::builder("agent", "hookwire")
        .metrics(metrics)
        .bind(InterceptorBinding::local("deny", deny).at([PreToolCall]))
        .interceptor("allow", allow)
        .build()
        .unwrap();
    let call = ToolCall::new("c", "bash", json!({}));
    // The same deny, enforced once and shadowed twice.
    let enforced = host.session("enforced").unwrap();
    enforced.start(["bash"]).await.unwrap();
    enforced.input(json!("go"), InputRole::User).await.unwrap();
    assert!(!enforced.pre_tool_call(&call).await.unwrap().proceeds());
    let shadow = host
        .session_builder("shadow")
        .mode(hookwire::Mode::EvaluateOnly)
        .open()
        .unwrap();
    shadow.start(["bash"]).await.unwrap();
    shadow.input(json!("go"), InputRole::User).await.unwrap();
    for id in ["c1", "c2"] {
        let e = shadow
            .pre_tool_call(&ToolCall::new(id, "bash", json!({})))
            .await
            .unwrap();
        assert!(e.proceeds() && !e.verdict().is_permit());
    }
    let text = render(&registry);
    promtool_accepts("host (shadow denies)", &text);
    let denies = |mode: &'static str| {
        value(
            &text,
            "hookwire_host_denies_total",
            &[
                ("point", "pre_tool_call"),
                ("mode", mode),
                ("reason", "policy"),
            ],
        )
    };
    assert_eq!(denies("enforce"), 1.0);
    assert_eq!(denies("evaluate_only"), 2.0);
    let emissions = |mode: &'static str, decision: &'static str| {
        value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", "pre_tool_call"),
                ("mode", mode),
                ("decision", decision),
            ],
        )
    };
    assert_eq!(emissions("enforce", "deny"), 1.0);
    assert_eq!(emissions("evaluate_only", "deny"), 2.0);
    assert_eq!(
        emissions("evaluate_only", "allow") + emissions("enforce", "allow"),
        0.0
    );
    // The shipped alert on host errors counts enforced denies only.
    let rules =
        std::fs::read_to_string(workspace_root().join("docs/prometheus/hookwire.rules.yml"))
            .unwrap();
    assert!(
        rules.contains(r#"hookwire_host_denies_total{mode="enforce",reason=~"host_error:.*"}"#),
        "{rules}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn opted_in_policy_reasons_are_labelled_verbatim() {
    let mut registry = Registry::default();
    let metrics = HostMetrics::register(&mut registry).verbatim_policy_reasons();
    let deny = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("no_rm")) });
    let host = Host::builder("agent", "hookwire")
        .metrics(metrics)
        .bind(InterceptorBinding::local("deny", deny).at([PreToolCall]))
        .interceptor(
            "allow",
            interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
        )
        .build()
        .unwrap();
    let session = host.session("s").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    session
        .pre_tool_call(&ToolCall::new("c", "bash", json!({})))
        .await
        .unwrap();
    let text = render(&registry);
    promtool_accepts("host (verbatim reasons)", &text);
    assert_eq!(
        value(
            &text,
            "hookwire_host_denies_total",
            &[("point", "pre_tool_call"), ("reason", "no_rm")]
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_approval_service_exposes_its_backlog_decisions_and_connections() {
    let registry: SharedRegistry = Arc::default();
    let server = ApprovalServer::new(Access::default()).metrics(&mut registry.lock().unwrap());
    let running = server.spawn_local().await.unwrap();
    let addr = expose(registry.clone()).await;
    let queue = running.queue().clone();

    let (link, _deliveries) = queue.connect_host("host-a");
    let watching = queue.subscribe();
    let first = link
        .submit("r1", approval_request(1), Duration::from_secs(60))
        .unwrap();
    link.submit("r2", approval_request(2), Duration::from_secs(60))
        .unwrap();
    link.submit("r3", approval_request(3), Duration::from_millis(50))
        .unwrap();
    queue
        .resolve(
            &first,
            &ApproverIdentity::in_process("alice"),
            ApprovalResolution::approve(&approval_request(1), Verdict::allow()),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let text = hookwire_testkit::scrape_metrics(addr);
    promtool_accepts("approval service", &text);
    assert_eq!(value(&text, "hookwire_approval_requests_total", &[]), 3.0);
    let left = |o: &'static str| [("outcome", o)];
    assert_eq!(
        value(
            &text,
            "hookwire_approval_decisions_total",
            &left("approved")
        ),
        1.0
    );
    assert_eq!(
        value(&text, "hookwire_approval_decisions_total", &left("expired")),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "hookwire_approval_decisions_total",
            &left("rejected")
        ),
        0.0
    );
    assert_eq!(value(&text, "hookwire_approval_pending", &[]), 1.0);
    assert_eq!(value(&text, "hookwire_approval_hosts_connected", &[]), 1.0);
    assert_eq!(
        value(&text, "hookwire_approval_approvers_connected", &[]),
        1.0
    );
    assert!(value(&text, "hookwire_approval_oldest_pending_age_seconds", &[]) >= 0.15);

    drop(watching);
    drop(link);
    let text = hookwire_testkit::scrape_metrics(addr);
    promtool_accepts("approval service, after", &text);
    assert_eq!(value(&text, "hookwire_approval_pending", &[]), 0.0);
    assert_eq!(
        value(
            &text,
            "hookwire_approval_decisions_total",
            &left("host_gone")
        ),
        1.0
    );
    assert_eq!(value(&text, "hookwire_approval_hosts_connected", &[]), 0.0);
    assert_eq!(
        value(&text, "hookwire_approval_approvers_connected", &[]),
        0.0
    );
    running.shutdown().await.unwrap();
}

#[test]
fn promtool_accepts_the_shipped_alert_rules() {
    let rules = workspace_root().join("docs/prometheus/hookwire.rules.yml");
    let out = Command::new(promtool())
        .args(["check", "rules"])
        .arg(&rules)
        .output()
        .expect("run promtool");
    assert!(
        out.status.success(),
        "promtool check rules {}:\n{}{}",
        rules.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    // 18 alerts and the 41 recorded queries of the Grafana dashboard
    // (deploy/grafana/generate.py writes that group).
    assert!(said.contains("SUCCESS: 59 rules found"), "{said}");
}

#[test]
fn the_shipped_alert_rules_fire_on_gateway_and_host_series_as_their_unit_tests_say() {
    let dir = workspace_root().join("docs/prometheus");
    let out = Command::new(promtool())
        .args(["test", "rules", "hookwire.rules.test.yml"])
        .current_dir(&dir)
        .output()
        .expect("run promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool test rules:\n{said}");
    assert!(said.contains("SUCCESS"), "{said}");
}
