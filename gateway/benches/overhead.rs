//! The gateway's added latency per chat completion on loopback:
//! `cargo bench -p hookwire-gateway --bench overhead`.
//!
//! One test upstream (a fixed completion, served on 127.0.0.1:0) is called
//! directly and through the gateway, alternating in rounds so that both
//! see the same machine state; the gateway's host has one allow
//! interceptor, in-process (`hookwire.allow`) and then as a gRPC service
//! on loopback. Each request is one governed turn of one conversation
//! (`input`, `pre_model_call`, `post_model_call`, `output`). Prints p50
//! and p99 per path and the p50 added by the gateway, measured in the
//! same run (the target: at most 1 ms at p50 with one allow interceptor).

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use bytes::Bytes;
use hookwire::Verdict;
use hookwire_client::{BoxError, Host, InterceptorBinding, interceptor_fn};
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig};
use hookwire_server::prelude::{AgentContext, Interceptor, Manifest, async_trait, manifest};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

const ROUNDS: usize = 10;
const PER_ROUND: usize = 200;

struct Allow;

#[async_trait]
impl Interceptor for Allow {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("allow", "1.0.0")
    }
    async fn intercept(&self, _: &AgentContext) -> Verdict {
        Verdict::allow()
    }
}

async fn upstream() -> String {
    let completion = json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
    });
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let c = completion.clone();
            async move { axum::Json(c) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn call(client: &Client<HttpConnector, Full<Bytes>>, base: &str, i: usize) -> Duration {
    let body =
        json!({"model": "m", "messages": [{"role": "user", "content": format!("question {i}")}]});
    let req = hyper::Request::post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .header("x-hookwire-session", "bench")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let start = Instant::now();
    let resp = client.request(req).await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.into_body().collect().await.unwrap();
    start.elapsed()
}

async fn measure(label: &str, host: Host, up: &str) -> (Duration, Duration) {
    let gateway = Gateway::new(host, GatewayConfig::new(up), CredentialPool::new()).unwrap();
    let running = gateway.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let via = running.base_url();
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    for i in 0..100 {
        call(&client, up, i).await;
        call(&client, &via, i).await;
    }
    let (mut direct, mut gated) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        for i in 0..PER_ROUND {
            direct.push(call(&client, up, round * PER_ROUND + i).await);
        }
        for i in 0..PER_ROUND {
            gated.push(call(&client, &via, round * PER_ROUND + i).await);
        }
    }
    direct.sort();
    gated.sort();
    let (d50, g50) = (percentile(&direct, 0.5), percentile(&gated, 0.5));
    println!(
        "{label:<34} direct p50 {:>7.1} µs  p99 {:>7.1} µs | gateway p50 {:>7.1} µs  p99 {:>7.1} µs | added p50 {:>7.1} µs ({:.2}x)",
        d50.as_secs_f64() * 1e6,
        percentile(&direct, 0.99).as_secs_f64() * 1e6,
        g50.as_secs_f64() * 1e6,
        percentile(&gated, 0.99).as_secs_f64() * 1e6,
        (g50.as_secs_f64() - d50.as_secs_f64()) * 1e6,
        g50.as_secs_f64() / d50.as_secs_f64(),
    );
    running.shutdown().await.unwrap();
    (d50, g50)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let up = upstream().await;
        println!(
            "gateway overhead, {} requests per path, one governed turn each (4 emissions)",
            ROUNDS * PER_ROUND
        );
        let local = Host::builder("bench", "hookwire")
            .interceptor(
                "allow",
                interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) }),
            )
            .build()
            .unwrap();
        measure("one in-process allow interceptor", local, &up).await;
        let service = hookwire_server::spawn_local(Allow).await.unwrap();
        let remote = Host::builder("bench", "hookwire")
            .bind(InterceptorBinding::remote("allow", service.endpoint()))
            .build()
            .unwrap();
        measure("one gRPC allow service (loopback)", remote, &up).await;
    });
}
