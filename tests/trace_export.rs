//! Traces and records over OTLP, end to end with the real parts: an OTLP
//! collector (the `opentelemetry-proto` gRPC services) on 127.0.0.1:0, an
//! interceptor service with its own tracer provider on its own thread and
//! runtime, and a host with its own provider on the test's. The two sides
//! share no `tracing` subscriber, so every link between their spans went
//! through the `traceparent` header the host sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::{AgentContext, InterceptionPoint, Verdict};
use hookwire_client::{Host, InputRole, InterceptorBinding, ToolCall};
use hookwire_server::prelude::*;
use hookwire_telemetry::{OtlpExport, Telemetry};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{Map, json};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use tracing_subscriber::layer::SubscriberExt;

/// A tool argument no exported byte may contain.
const SECRET: &str = "s3cr3t-argument-7f1c9e";
/// The agent's own trace, carried in a context's `trace` member.
const AGENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN: &str = "00f067aa0ba902b7";

/// What the collector received, decoded and as the bytes on the wire.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    logs: Vec<ExportLogsServiceRequest>,
    bytes: Vec<u8>,
}

#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Received>>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let m = request.into_inner();
        let mut r = self.0.lock().unwrap();
        r.bytes.extend(m.encode_to_vec());
        r.traces.push(m);
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Collector {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let m = request.into_inner();
        let mut r = self.0.lock().unwrap();
        r.bytes.extend(m.encode_to_vec());
        r.logs.push(m);
        Ok(Response::new(ExportLogsServiceResponse::default()))
    }
}

async fn collector() -> (Collector, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let collector = Collector::default();
    let router = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(collector.clone()))
        .add_service(LogsServiceServer::new(collector.clone()));
    tokio::spawn(router.serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)));
    (collector, url)
}

/// Denies `bash`; allows everything else.
struct NoBash;

#[async_trait]
impl Interceptor for NoBash {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("no-bash", "1")
    }
    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        let name = ctx
            .get("tool_call")
            .and_then(|t| t.get("name"))
            .and_then(|n| n.as_str());
        if name == Some("bash") {
            Verdict::deny("no_bash")
        } else {
            Verdict::allow()
        }
    }
}

/// Flushes and stops a side's providers from a blocking thread, so the
/// exporter's client keeps its runtime running meanwhile.
async fn shut(telemetry: Telemetry) {
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .expect("providers shut down");
}

/// The interceptor service on its own thread, runtime and tracer
/// provider (service name `no-bash-service`); returns its endpoint and the
/// sender that stops it (after its spans are flushed).
fn service_side(
    collector: String,
) -> (
    String,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let telemetry = OtlpExport::new(collector)
                .service_name("no-bash-service")
                .build()
                .unwrap();
            let subscriber = tracing_subscriber::registry().with(telemetry.layer());
            let _default = tracing::subscriber::set_default(subscriber);
            let running = spawn_local(NoBash).await.unwrap();
            ready_tx.send(running.endpoint()).unwrap();
            tokio::task::spawn_blocking(move || stop_rx.recv())
                .await
                .unwrap()
                .unwrap();
            running.shutdown().await.unwrap();
            shut(telemetry).await;
        });
    });
    (ready_rx.recv().unwrap(), stop_tx, thread)
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attributes, key)? {
        Any::StringValue(s) => Some(s),
        _ => None,
    }
}

/// One exported span, flattened with the service that exported it.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: Vec<KeyValue>,
}

fn spans(received: &Received) -> Vec<Span> {
    let mut out = Vec::new();
    for request in &received.traces {
        for rs in &request.resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| text(&r.attributes, "service.name"))
                .unwrap_or_default()
                .to_owned();
            for ss in &rs.scope_spans {
                for s in &ss.spans {
                    out.push(Span {
                        service: service.clone(),
                        name: s.name.clone(),
                        trace_id: hex::encode(&s.trace_id),
                        span_id: hex::encode(&s.span_id),
                        parent: hex::encode(&s.parent_span_id),
                        attributes: s.attributes.clone(),
                    });
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn host_and_service_spans_form_one_trace_and_records_arrive_as_payload_free_logs() {
    let (collector, url) = collector().await;
    let (endpoint, stop_service, service_thread) = service_side(url.clone());

    // The host: its own provider, the test thread's subscriber.
    let telemetry = OtlpExport::new(url)
        .service_name("agent-host")
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let default = tracing::subscriber::set_default(subscriber);
    // Shown nothing optional: the traced session's `trace` is withheld,
    // a fact its records carry beside the §10.3 record.
    let no_bash = InterceptorBinding::remote("no-bash", endpoint).visible(Vec::<String>::new());
    let host = hookwire_testkit::validated(Host::builder("agent", "hookwire"))
        .bind(no_bash)
        .default_timeout(Duration::from_secs(10))
        .record_sink(telemetry.record_sink())
        .build()
        .unwrap();

    let plain = host.session("plain").unwrap();
    assert!(plain.start(["bash"]).await.unwrap().proceeds());
    // §3.1 rule 3: the tool call belongs to a turn an input opened.
    let input = plain.input(json!("list the files"), InputRole::User).await;
    assert!(input.unwrap().proceeds());
    let call = ToolCall::new("c1", "bash", json!({"cmd": SECRET}));
    let denied = plain.pre_tool_call(&call).await.unwrap();
    assert!(!denied.proceeds());

    // The same deny in a shadow session: recorded, not enforced.
    let shadow = host
        .session_builder("shadow")
        .mode(hookwire::Mode::EvaluateOnly)
        .open()
        .unwrap();
    assert!(shadow.start(["bash"]).await.unwrap().proceeds());
    let input = shadow.input(json!("list the files"), InputRole::User).await;
    assert!(input.unwrap().proceeds());
    let shadowed = shadow.pre_tool_call(&call).await.unwrap();
    assert!(shadowed.proceeds(), "evaluate_only proceeds");
    assert!(!shadowed.verdict().is_permit(), "but the verdict denied");

    let mut members = Map::new();
    members.insert(
        "trace".into(),
        json!({"trace_id": AGENT_TRACE, "span_id": AGENT_SPAN}),
    );
    let traced = host.session_with("traced", members).unwrap();
    assert!(traced.start(["ls"]).await.unwrap().proceeds());

    drop(host);
    drop(default);
    shut(telemetry).await;
    stop_service.send(()).unwrap();
    tokio::task::spawn_blocking(move || service_thread.join())
        .await
        .unwrap()
        .unwrap();

    let received = std::mem::take(&mut *collector.0.lock().unwrap());
    let all = spans(&received);
    let named =
        |name: &str| -> Vec<Span> { all.iter().filter(|s| s.name == name).cloned().collect() };
    let emissions = named("hookwire.emission");
    let dispatches = named("hookwire.dispatch");
    let handles = named("hookwire.handle");
    assert_eq!(emissions.len(), 7, "{all:#?}");
    assert_eq!(dispatches.len(), 7, "{all:#?}");
    assert_eq!(handles.len(), 7, "{all:#?}");

    for e in &emissions {
        assert_eq!(e.service, "agent-host");
        let d = dispatches
            .iter()
            .find(|d| d.parent == e.span_id)
            .unwrap_or_else(|| panic!("no dispatch under {e:#?}"));
        assert_eq!(d.trace_id, e.trace_id);
        assert_eq!(d.service, "agent-host");
        assert_eq!(text(&d.attributes, "hookwire.binding"), Some("no-bash"));
        assert!(
            text(&d.attributes, "hookwire.endpoint")
                .unwrap()
                .starts_with("http://127.0.0.1:")
        );
        assert_eq!(text(&d.attributes, "hookwire.outcome"), Some("ok"));
        let h = handles
            .iter()
            .find(|h| h.parent == d.span_id)
            .unwrap_or_else(|| panic!("no service span under {d:#?}"));
        assert_eq!(
            h.trace_id, e.trace_id,
            "the service joined the host's trace"
        );
        assert_eq!(h.service, "no-bash-service");
        assert_eq!(
            text(&h.attributes, "hookwire.point"),
            text(&e.attributes, "hookwire.point")
        );
    }

    let by_point = |session: &str, point: InterceptionPoint| {
        emissions
            .iter()
            .find(|e| {
                text(&e.attributes, "hookwire.session_id") == Some(session)
                    && text(&e.attributes, "hookwire.point") == Some(point.as_str())
            })
            .unwrap_or_else(|| panic!("no emission {session}/{point}"))
            .clone()
    };
    let deny = by_point("plain", InterceptionPoint::PreToolCall);
    assert_eq!(text(&deny.attributes, "hookwire.decision"), Some("deny"));
    assert_eq!(text(&deny.attributes, "hookwire.reason"), Some("no_bash"));
    assert_eq!(text(&deny.attributes, "hookwire.mode"), Some("enforce"));
    // A shadow deny says it was not enforced (§8).
    let shadow_deny = by_point("shadow", InterceptionPoint::PreToolCall);
    assert_eq!(
        text(&shadow_deny.attributes, "hookwire.decision"),
        Some("deny")
    );
    assert_eq!(
        text(&shadow_deny.attributes, "hookwire.mode"),
        Some("evaluate_only")
    );
    assert!(
        matches!(
            attr(&deny.attributes, "hookwire.sequence"),
            Some(Any::IntValue(2))
        ),
        "{:?}",
        deny.attributes
    );
    let startup = by_point("plain", InterceptionPoint::AgentStartup);
    assert_eq!(
        text(&startup.attributes, "hookwire.decision"),
        Some("allow")
    );
    assert_eq!(text(&startup.attributes, "hookwire.reason"), None);
    assert_eq!(startup.parent, "", "a root span without a context trace");
    assert_ne!(startup.trace_id, deny.trace_id, "one trace per emission");

    // The context's `trace` is continued: same trace, the agent's span as
    // the emission's parent.
    let continued = by_point("traced", InterceptionPoint::AgentStartup);
    assert_eq!(continued.trace_id, AGENT_TRACE);
    assert_eq!(continued.parent, AGENT_SPAN);

    // The record's facts beyond §10.3 ride on the span: what the binding
    // was not shown. A record without facts adds no attribute.
    let withheld = r#"{"hookwire":{"visibility":{"no-bash":["trace"]}}}"#;
    assert_eq!(
        text(&continued.attributes, "hookwire.extensions"),
        Some(withheld)
    );
    assert_eq!(text(&startup.attributes, "hookwire.extensions"), None);

    // One log record per emission, in its emission's trace and span.
    let logs: Vec<_> = received
        .logs
        .iter()
        .flat_map(|r| &r.resource_logs)
        .flat_map(|r| &r.scope_logs)
        .flat_map(|s| &s.log_records)
        .collect();
    assert_eq!(logs.len(), 7, "{logs:#?}");
    let mut seen = HashMap::new();
    for log in &logs {
        let e = emissions
            .iter()
            .find(|e| e.span_id == hex::encode(&log.span_id))
            .expect("a log record carries its emission's span id");
        assert_eq!(hex::encode(&log.trace_id), e.trace_id);
        assert_eq!(log.event_name, "hookwire.interception_record");
        assert_eq!(
            text(&log.attributes, "hookwire.point"),
            text(&e.attributes, "hookwire.point")
        );
        assert_eq!(
            text(&log.attributes, "hookwire.decision"),
            text(&e.attributes, "hookwire.decision")
        );
        assert_eq!(
            text(&log.attributes, "hookwire.mode"),
            text(&e.attributes, "hookwire.mode")
        );
        let Some(Any::StringValue(body)) = log.body.as_ref().and_then(|b| b.value.as_ref()) else {
            panic!("record body")
        };
        let record: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            record["session_id"],
            *text(&log.attributes, "hookwire.session_id").unwrap()
        );
        // The body is the closed §10.3 record; the facts are an attribute,
        // as on the emission span.
        assert!(record.get("extensions").is_none(), "{record}");
        assert_eq!(
            text(&log.attributes, "hookwire.extensions"),
            text(&e.attributes, "hookwire.extensions")
        );
        seen.insert(e.span_id.clone(), record);
    }
    assert_eq!(seen.len(), 7, "one record per emission");
    let with_facts = logs
        .iter()
        .filter(|l| text(&l.attributes, "hookwire.extensions") == Some(withheld))
        .count();
    assert_eq!(
        with_facts, 1,
        "only the traced session had a member withheld"
    );

    // Nothing exported carries the tool's arguments.
    let bytes = String::from_utf8_lossy(&received.bytes);
    assert!(
        bytes.contains("no_bash"),
        "the exported bytes are the ones inspected"
    );
    assert!(!bytes.contains(SECRET), "a tool argument was exported");
}
