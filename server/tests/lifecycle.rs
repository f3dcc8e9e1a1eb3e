//! Serving and stopping: health, graceful shutdown with a call in flight,
//! health watchers, tower layers and the per-connection concurrency limit.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{call, connect, decision, request};
use hookwire::InterceptionPoint;
use hookwire::pb;
use hookwire_server::prelude::*;
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const SERVICE: &str = "hookwire.v1.Interceptor";

/// Counts calls in flight at `output`, and signals when one has started.
#[derive(Default)]
struct Gate {
    started: Notify,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    delay_ms: u64,
}

#[async_trait]
impl Interceptor for Gate {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("gate", "0.1.0")
    }
    async fn output(&self, _ctx: &AgentContext) -> Verdict {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.started.notify_one();
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Verdict::allow().with_reason("slow_done")
    }
}

fn gate(delay_ms: u64) -> Arc<Gate> {
    Arc::new(Gate {
        delay_ms,
        ..Gate::default()
    })
}

async fn health_status(health: &mut HealthClient<Channel>, service: &str) -> ServingStatus {
    let response = health
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap()
        .into_inner();
    ServingStatus::try_from(response.status).unwrap()
}

#[tokio::test]
async fn health_is_serving_then_shutdown_drains_the_call_in_flight() {
    let service = gate(400);
    let server = spawn_local(Arc::clone(&service)).await.unwrap();
    let endpoint = server.endpoint();
    let channel = Channel::from_shared(endpoint.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();

    let mut health = HealthClient::new(channel.clone());
    assert_eq!(
        health_status(&mut health, SERVICE).await,
        ServingStatus::Serving
    );
    assert_eq!(health_status(&mut health, "").await, ServingStatus::Serving);

    let mut client = pb::interceptor_client::InterceptorClient::new(channel);
    let slow =
        tokio::spawn(async move { call(&mut client, request(InterceptionPoint::Output)).await });
    service.started.notified().await;

    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .expect("shutdown completes")
        .unwrap();
    // The call was in flight when shutdown began; it completed first.
    let response = slow.await.unwrap().unwrap();
    assert_eq!(common::reason(&response), Some("slow_done"));
    assert_eq!(service.in_flight.load(Ordering::SeqCst), 0);

    // Nothing listens any more.
    let refused = Channel::from_shared(endpoint).unwrap().connect().await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn a_health_watcher_sees_not_serving_and_does_not_block_shutdown() {
    let server = spawn_local(gate(0)).await.unwrap();
    let channel = Channel::from_shared(server.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: SERVICE.into(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);

    let stopping = tokio::spawn(server.shutdown());
    let last = watch.message().await.unwrap().unwrap();
    assert_eq!(last.status, ServingStatus::NotServing as i32);
    let end = tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("the watch stream ends on shutdown");
    assert!(matches!(end, Ok(None) | Err(_)));
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("a watcher does not hold the server open")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn dropping_the_handle_shuts_down() {
    let server = spawn_local(gate(0)).await.unwrap();
    let endpoint = server.endpoint();
    drop(server);
    let mut refused = true;
    for _ in 0..50 {
        if Channel::from_shared(endpoint.clone())
            .unwrap()
            .connect()
            .await
            .is_ok()
        {
            refused = false;
            tokio::time::sleep(Duration::from_millis(20)).await;
        } else {
            refused = true;
            break;
        }
    }
    assert!(refused, "the server still accepts connections after drop");
}

#[tokio::test]
async fn serve_with_listener_stops_on_its_signal() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(Server::builder().service(gate(0)).serve_with_listener(
        listener,
        async {
            let _ = stopped.await;
        },
    ));
    let mut client = connect(endpoint).await;
    let response = call(&mut client, request(InterceptionPoint::Output))
        .await
        .unwrap();
    assert_eq!(decision(&response), pb::Decision::Allow);
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returns after the signal")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_tower_layer_sees_every_request() {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let counting = tower::util::MapRequestLayer::new(move |req: http::Request<Body>| {
        counter.fetch_add(1, Ordering::SeqCst);
        req
    });
    let server = Server::builder()
        .layer(counting)
        .service(gate(0))
        .spawn_local()
        .await
        .unwrap();
    let mut client = connect(server.endpoint()).await;
    for point in [InterceptionPoint::Input, InterceptionPoint::Output] {
        call(&mut client, request(point)).await.unwrap();
    }
    client.describe(pb::DescribeRequest {}).await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_concurrency_limit_serialises_calls_on_a_connection() {
    let service = gate(100);
    let server = Server::builder()
        .concurrency_limit_per_connection(1)
        .service(Arc::clone(&service))
        .spawn_local()
        .await
        .unwrap();
    let client = connect(server.endpoint()).await;
    let calls = (0..4).map(|_| {
        let mut client = client.clone();
        tokio::spawn(async move { call(&mut client, request(InterceptionPoint::Output)).await })
    });
    for done in futures::future::join_all(calls).await {
        let response = done.unwrap().unwrap();
        assert_eq!(decision(&response), pb::Decision::Allow);
    }
    assert_eq!(service.max_in_flight.load(Ordering::SeqCst), 1);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_a_limit_calls_run_concurrently() {
    let service = gate(200);
    let server = spawn_local(Arc::clone(&service)).await.unwrap();
    let client = connect(server.endpoint()).await;
    let calls = (0..4).map(|_| {
        let mut client = client.clone();
        tokio::spawn(async move { call(&mut client, request(InterceptionPoint::Output)).await })
    });
    for done in futures::future::join_all(calls).await {
        done.unwrap().unwrap();
    }
    assert!(service.max_in_flight.load(Ordering::SeqCst) > 1);
    server.shutdown().await.unwrap();
}
