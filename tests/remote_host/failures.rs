//! Every way a service can fail — invalid or malformed answers, error
//! statuses, panics, an unreachable endpoint, slowness — fails closed with
//! its reserved reason.

use super::*;

#[tokio::test]
async fn invalid_verdicts_from_a_service_are_verdict_invalid() {
    let mut no_body = Verdict::allow();
    no_body.decision = Decision::Transform;
    let cases = vec![
        Verdict::deny("host_error:interceptor_failed"),
        no_body,
        Verdict::allow().with_approval(Map::new()),
        Verdict::allow().with_evidence(
            json!({"blob": "x".repeat(20_000)})
                .as_object()
                .unwrap()
                .clone(),
        ),
    ];
    for verdict in cases {
        let server = Scripted::new("liar", move |_| verdict.clone())
            .serve()
            .await;
        let (host, _) = host_with(&[("liar", &server)]);
        let session = host.session("s-invalid").unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(e.reason(), Some("host_error:verdict_invalid"));
        assert_eq!(e.record().decided_by, Some(0));
        server.shutdown().await.unwrap();
    }
}

/// A service that answers with raw wire messages no SDK would build.
#[derive(Clone)]
struct RawService {
    respond: Arc<dyn Fn() -> Result<pb::InterceptorResponse, Status> + Send + Sync>,
}

macro_rules! raw_rpcs {
    ($($method:ident: $req:ty),*) => {
        #[tonic::async_trait]
        impl PbInterceptor for RawService {
            $(async fn $method(&self, _: Request<$req>) -> Result<Response<pb::InterceptorResponse>, Status> {
                (self.respond)().map(Response::new)
            })*
            async fn describe(&self, _: Request<pb::DescribeRequest>) -> Result<Response<pb::Manifest>, Status> {
                Err(Status::unimplemented("raw"))
            }
            type MultiplexStream = hookwire_server::MultiplexStream;
            async fn multiplex(&self, _: Request<tonic::Streaming<pb::MultiplexRequest>>) -> Result<Response<Self::MultiplexStream>, Status> {
                Err(Status::unimplemented("raw"))
            }
        }
    };
}

raw_rpcs!(
    agent_startup: pb::AgentStartupRequest, input: pb::InputRequest,
    pre_model_call: pb::PreModelCallRequest, post_model_call: pb::PostModelCallRequest,
    pre_tool_call: pb::PreToolCallRequest, post_tool_call: pb::PostToolCallRequest,
    output: pb::OutputRequest, agent_shutdown: pb::AgentShutdownRequest
);

async fn serve_raw(
    respond: impl Fn() -> Result<pb::InterceptorResponse, Status> + Send + Sync + 'static,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let svc = InterceptorServer::new(RawService {
        respond: Arc::new(respond),
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    (format!("http://{addr}"), stop)
}

fn json_value(text: &str) -> Option<pb::JsonValue> {
    Some(pb::JsonValue { json: text.into() })
}

#[tokio::test]
async fn malformed_wire_responses_fail_closed() {
    let allow = || pb::Verdict {
        decision: pb::Decision::Allow as i32,
        ..Default::default()
    };
    let cases: Vec<(&str, pb::InterceptorResponse)> = vec![
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: None,
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict::default()),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    decision: 42,
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    evidence: json_value("{not json"),
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    evidence: json_value("\"uri\""),
                    ..allow()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(pb::Verdict {
                    decision: pb::Decision::Transform as i32,
                    transform: Some(pb::Transform {
                        path: "$target.cmd".into(),
                        value: json_value("184467440737095516160"),
                    }),
                    ..Default::default()
                }),
                extensions: Default::default(),
            },
        ),
        (
            "verdict_invalid",
            pb::InterceptorResponse {
                verdict: Some(allow()),
                extensions: [(
                    "Bad-Namespace".to_string(),
                    pb::JsonValue { json: "1".into() },
                )]
                .into_iter()
                .collect(),
            },
        ),
    ];
    for (expected, response) in cases {
        let (endpoint, stop) = serve_raw(move || Ok(response.clone())).await;
        let (b, _) = host();
        let host = b
            .bind(InterceptorBinding::remote("raw", endpoint))
            .build()
            .unwrap();
        let session = host.session("s-raw").unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(e.reason(), Some(format!("host_error:{expected}").as_str()));
        assert!(!e.proceeds());
        let _ = stop.send(());
    }
}

#[tokio::test]
async fn error_statuses_and_panics_are_interceptor_failed() {
    let (endpoint, stop) = serve_raw(|| Err(Status::internal("boom"))).await;
    let (b, _) = host();
    let host = b
        .bind(InterceptorBinding::remote("raw", endpoint))
        .build()
        .unwrap();
    let session = host.session("s-status").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    assert!(
        !e.verdict()
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("boom"),
        "no service text in the record"
    );
    let _ = stop.send(());

    let server = Scripted::new("panics", |_| panic!("interceptor bug"))
        .serve()
        .await;
    let (host, _) = host_with(&[("panics", &server)]);
    let session = host.session("s-panic").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unreachable_endpoint_is_interceptor_failed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (b, records) = host();
    let host = b
        .bind(InterceptorBinding::remote("gone", endpoint))
        .build()
        .unwrap();
    let session = host.session("s-gone").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    assert_eq!(records.records()[0].decided_by, Some(0));
    assert_eq!(
        records.records()[0].verdicts[0].name.as_deref(),
        Some("gone")
    );
}

#[tokio::test]
async fn slow_service_is_interceptor_timeout_within_the_bound() {
    let server = Scripted::allow_all("slow")
        .with_delay(Duration::from_secs(3))
        .serve()
        .await;
    let (b, _) = host();
    let host = b
        .bind(
            InterceptorBinding::remote("slow", server.endpoint())
                .timeout(Duration::from_millis(200)),
        )
        .build()
        .unwrap();
    let session = host.session("s-slow").unwrap();
    let started = Instant::now();
    let e = session.start(["bash"]).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        e.reason(),
        Some("host_error:interceptor_timeout"),
        "{:?}",
        e.verdict().message
    );
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    drop(server);
}

#[tokio::test]
async fn enforce_mode_without_interceptors_denies() {
    let (b, _) = host();
    let host = b.build().unwrap();
    let session = host.session("s-empty").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(e.reason(), Some("host_error:no_interceptor"));
    assert_eq!(e.record().decided_by, None);
    assert!(!e.proceeds());
}
