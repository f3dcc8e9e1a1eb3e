//! A gateway's Prometheus series, scraped over HTTP as Prometheus does:
//! requests by wire API, route template and status class (whole, streamed
//! under incremental mediation, denied before the upstream, an upstream
//! 500, an upstream timeout, an unmatched route, `/v1/models`), their
//! latency, the upstream's status classes, and the host's series from the
//! same registry; every exposition checked by `promtool check metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hookwire::Verdict;
use hookwire_client::{BoxError, Host, HostMetrics, InterceptorBinding, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig, GatewayMetrics};
use hookwire_server::metrics::{SharedRegistry, serve_metrics};
use hookwire_testkit::{metric_sample as sample, metric_value as value, promtool_accepts};
use serde_json::json;
use tokio::net::TcpListener;

use hookwire::InterceptionPoint::Input;

/// Serves `registry` at `/metrics` on 127.0.0.1:0 until the test ends.
async fn expose(registry: SharedRegistry) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_metrics(listener, registry, std::future::pending()));
    addr
}

/// The upstream of the gateway test: model `ok` answers, `fail` gets a
/// 500, `slow` answers after far longer than the gateway waits, a
/// streamed request gets two chunks; `/v1/models` lists one model.
async fn gateway_upstream() -> (SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::response::IntoResponse;
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let chat = move |body: axum::body::Bytes| {
        let log = log.clone();
        async move {
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let model = body["model"].as_str().unwrap_or("?").to_owned();
            log.lock().unwrap().push(model.clone());
            let answer = |text: &str| {
                json!({"id": "c", "object": "chat.completion", "created": 1, "model": model,
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]})
            };
            match model.as_str() {
                "fail" => (
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(
                        json!({"error": {"message": "upstream broke", "type": "server_error"}}),
                    ),
                )
                    .into_response(),
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    axum::Json(answer("too late")).into_response()
                }
                _ if body["stream"] == json!(true) => {
                    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
                        format!(
                            "data: {}\n\n",
                            json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                                   "model": model, "choices": [{"index": 0, "delta": delta,
                                   "finish_reason": finish}]})
                        )
                    };
                    let text = format!(
                        "{}{}{}data: [DONE]\n\n",
                        chunk(
                            json!({"role": "assistant", "content": "Hello "}),
                            json!(null)
                        ),
                        chunk(json!({"content": "there"}), json!(null)),
                        chunk(json!({}), json!("stop")),
                    );
                    ([("content-type", "text/event-stream")], text).into_response()
                }
                _ => axum::Json(answer("Hello")).into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .route(
            "/v1/models",
            axum::routing::get(|| async {
                axum::Json(json!({"object": "list", "data": [{"id": "ok", "object": "model"}]}))
            }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

/// One plain HTTP/1.1 request to the gateway; its status and body.
async fn gateway_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\
         Content-Type: application/json\r\nx-hookwire-session: metrics-run\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    (status, response)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_counts_its_requests_by_route_and_its_upstream_by_status_class_beside_its_host() {
    let (upstream, seen) = gateway_upstream().await;
    let registry: SharedRegistry = Arc::default();
    let (host_metrics, gateway_metrics) = {
        let mut r = registry.lock().unwrap();
        (
            HostMetrics::register(&mut r),
            GatewayMetrics::register(&mut r),
        )
    };
    let guard = interceptor_fn(|ctx: hookwire::AgentContext| async move {
        let forbidden = ctx.to_json().to_string().contains("forbidden");
        Ok::<_, BoxError>(if forbidden {
            Verdict::deny("no_forbidden")
        } else {
            Verdict::allow()
        })
    });
    let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    let host = Host::builder("gateway-metrics", "hookwire")
        .metrics(host_metrics)
        .bind(InterceptorBinding::local("guard", guard).at([Input]))
        .interceptor("allow", allow)
        .build()
        .unwrap();
    let mut config = GatewayConfig::new(format!("http://{upstream}/v1"));
    config.metrics = Some(gateway_metrics);
    config.incremental_output = true;
    config.upstream_timeout = Duration::from_millis(300);
    let gateway = Gateway::new(host, config, CredentialPool::new())
        .unwrap()
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let scrape = expose(registry.clone()).await;
    let addr = gateway.addr();
    let chat = |model: &str, text: &str, stream: bool| {
        json!({"model": model, "stream": stream,
               "messages": [{"role": "user", "content": text}]})
    };
    let path = "/v1/chat/completions";
    let (status, body) = gateway_call(addr, "POST", path, Some(chat("ok", "hi", false))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = gateway_call(addr, "POST", path, Some(chat("ok", "hi again", true))).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("there") && body.contains("[DONE]"), "{body}");
    let (status, body) =
        gateway_call(addr, "POST", path, Some(chat("fail", "once more", false))).await;
    assert_eq!(status, 500, "the upstream's error passes through: {body}");
    let (status, body) =
        gateway_call(addr, "POST", path, Some(chat("slow", "and again", false))).await;
    assert_eq!(status, 502, "{body}");
    let (status, body) = gateway_call(
        addr,
        "POST",
        path,
        Some(chat("ok", "forbidden words", false)),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = gateway_call(addr, "GET", "/v1/models", None).await;
    assert_eq!(status, 200);
    let (status, _) = gateway_call(addr, "POST", "/v1/unknown/route", None).await;
    assert_eq!(status, 404);
    assert_eq!(
        *seen.lock().unwrap(),
        ["ok", "ok", "fail", "slow"],
        "the denied input went nowhere"
    );

    let text = tokio::task::spawn_blocking(move || hookwire_testkit::scrape_metrics(scrape))
        .await
        .unwrap();
    promtool_accepts("gateway and host", &text);
    let chat_route = |status: &'static str| {
        [
            ("api", "chat_completions"),
            ("route", path),
            ("status", status),
        ]
    };
    let requests = "hookwire_gateway_requests_total";
    assert_eq!(value(&text, requests, &chat_route("2xx")), 2.0);
    assert_eq!(value(&text, requests, &chat_route("5xx")), 2.0);
    assert_eq!(value(&text, requests, &chat_route("4xx")), 1.0);
    assert_eq!(
        value(
            &text,
            requests,
            &[
                ("api", "models"),
                ("route", "/v1/models"),
                ("status", "2xx")
            ]
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            requests,
            &[("api", "other"), ("route", "unmatched"), ("status", "4xx")]
        ),
        1.0
    );
    let durations = "hookwire_gateway_request_duration_seconds";
    let on_chat = [("api", "chat_completions"), ("route", path)];
    assert_eq!(value(&text, &format!("{durations}_count"), &on_chat), 5.0);
    // The slow request waited the upstream timeout out: 0.3 s at least.
    assert!(value(&text, &format!("{durations}_sum"), &on_chat) >= 0.3);
    let upstream = |api: &'static str, class: &'static str| {
        value(
            &text,
            "hookwire_gateway_upstream_responses_total",
            &[("api", api), ("class", class)],
        )
    };
    assert_eq!(
        upstream("chat_completions", "2xx"),
        2.0,
        "whole and streamed"
    );
    assert_eq!(upstream("chat_completions", "5xx"), 1.0);
    assert_eq!(upstream("chat_completions", "error"), 1.0, "the timeout");
    assert_eq!(upstream("models", "2xx"), 1.0);
    assert_eq!(
        sample(
            &text,
            "hookwire_gateway_upstream_responses_total",
            &[("class", "4xx")]
        ),
        None,
        "the denied request never went upstream"
    );
    assert_eq!(
        value(&text, "hookwire_gateway_requests_in_flight", &[]),
        0.0
    );
    // The host's series in the same exposition.
    assert_eq!(
        value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", "input"),
                ("mode", "enforce"),
                ("decision", "deny")
            ]
        ),
        1.0
    );
    assert_eq!(value(&text, "hookwire_host_sessions_open", &[]), 1.0);
    gateway.shutdown().await.unwrap();
}
