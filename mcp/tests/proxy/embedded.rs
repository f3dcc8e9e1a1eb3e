//! The MCP proxy embedded through `Settings` and `run`, without the
//! command: Streamable HTTP served on loopback, one request of a client
//! without its token refused, then shut down; and the settings `run`
//! refuses before it listens.

use std::sync::Arc;
use std::time::Duration;

use hookwire_client::Host;
use hookwire_mcp::settings::{RawSettings, check_listen};
use hookwire_mcp::{Clients, Error, McpConfig, Settings, UpstreamSpec, token_sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn raw(listen: Option<std::net::SocketAddr>, clients: Option<Clients>) -> RawSettings {
    RawSettings {
        host: Host::builder("mcp-under-test", "hookwire").build().unwrap(),
        upstream: UpstreamSpec::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Vec::new(),
        },
        config: Arc::new(McpConfig::default()),
        listen,
        allow_remote: false,
        clients: clients.map(Into::into),
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
    let clients = Clients::parse(&format!("cursor {}", token_sha256("the-token"))).unwrap();
    let settings = Settings::try_from(raw(Some(addr), Some(clients))).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_mcp::run(settings, async move {
        let _ = stopped.await;
    }));

    let mut stream = loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(_) if !served.is_finished() => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("run stopped: {e}"),
        }
    };
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    // A client without its token is refused before anything is relayed.
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("run returns once shut down")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn settings_refuse_a_remote_address_and_http_without_clients() {
    let refused = check_listen("0.0.0.0:0".parse().unwrap(), false).unwrap_err();
    assert!(matches!(refused, Error::Config(_)), "{refused}");
    assert!(refused.to_string().contains("is not a loopback address"));

    let no_clients = raw(Some("127.0.0.1:0".parse().unwrap()), None);
    let refused = Settings::try_from(no_clients).err().expect("refused");
    assert!(
        refused
            .to_string()
            .contains("--listen needs --clients-file")
    );
}
