//! The gateway embedded through `Settings` and `run`, without the
//! command: served on loopback, one request answered, then shut down; and
//! the settings `run` refuses before it listens.

use std::time::Duration;

use hookwire_client::Host;
use hookwire_gateway::settings::{RawSettings, check_exposure};
use hookwire_gateway::{CredentialPool, Error, GatewayConfig, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn raw(listen: std::net::SocketAddr) -> RawSettings {
    RawSettings {
        host: Host::builder("gateway-under-test", "hookwire")
            .build()
            .unwrap(),
        governed_by: "no interceptor".into(),
        listen,
        config: GatewayConfig::new("http://127.0.0.1:9/v1"),
        pool: CredentialPool::new(),
        allow_anonymous: false,
        metrics_endpoint: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_the_settings_until_shut_down() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let settings = Settings::try_from(raw(addr)).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_gateway::run(settings, async move {
        let _ = stopped.await;
    }));

    let mut stream = loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(_) if !served.is_finished() => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("run stopped: {e}"),
        }
    };
    let body = "not json";
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    // A body that is not a request is refused by the gateway itself,
    // before any upstream is asked.
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("run returns once shut down")
        .unwrap()
        .unwrap();
}

#[test]
fn a_key_pool_every_remote_caller_could_spend_is_refused() {
    let refused = check_exposure("0.0.0.0:8080".parse().unwrap(), true, false, false).unwrap_err();
    assert!(matches!(refused, Error::Config(_)), "{refused}");
    assert!(refused.to_string().contains("holds a key pool"));
    assert!(check_exposure("0.0.0.0:8080".parse().unwrap(), true, true, false).is_ok());
    assert!(check_exposure("127.0.0.1:8080".parse().unwrap(), true, false, false).is_ok());
}
