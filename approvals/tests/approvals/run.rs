//! The approval service embedded through `Settings` and `run`, without
//! the command: served on loopback, one decision asked over gRPC, then
//! shut down; and the settings `run` refuses before it binds anything.

use std::net::SocketAddr;
use std::time::Duration;

use hookwire::pb;
use hookwire_approvals::settings::RawSettings;
use hookwire_approvals::{Access, AccessConfig, ApproverConfig, Error, NotifyConfig, Settings};

fn raw(grpc: SocketAddr) -> RawSettings {
    let approver = ApproverConfig::token("ann", "ann-token");
    RawSettings {
        grpc,
        web: None,
        name: None,
        heartbeat: None,
        tls: None,
        allow_plaintext: false,
        access: Access::new(&AccessConfig::default().approver(approver)).unwrap(),
        metrics_addr: None,
        notify: None,
        webhook_tls: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_the_settings_until_shut_down() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let settings = Settings::try_from(raw(SocketAddr::from(([127, 0, 0, 1], port)))).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_approvals::run(settings, async move {
        let _ = stopped.await;
    }));

    let endpoint = format!("http://127.0.0.1:{port}");
    let mut client = loop {
        match pb::approval_service_client::ApprovalServiceClient::connect(endpoint.clone()).await {
            Ok(c) => break c,
            Err(_) if !served.is_finished() => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("run stopped: {e}"),
        }
    };
    let mut call = tonic::Request::new(pb::DecideRequest {
        approver: String::new(),
        resolution: Some(pb::ApprovalResolution {
            request_id: "never-submitted".into(),
            ..Default::default()
        }),
    });
    call.metadata_mut()
        .insert("authorization", "Bearer ann-token".parse().unwrap());
    // The approver is let in; a request never submitted is not decided.
    let status = client.decide(call).await.unwrap().into_inner().status;
    assert_eq!(status, pb::DecisionStatus::UnknownRequest as i32);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("run returns once shut down")
        .unwrap()
        .unwrap();
}

#[test]
fn settings_refuse_plaintext_beyond_loopback_and_notifications_without_a_page() {
    let refused = Settings::try_from(raw("0.0.0.0:0".parse().unwrap())).unwrap_err();
    assert!(matches!(refused, Error::InvalidSettings(_)), "{refused}");
    assert!(
        refused
            .to_string()
            .starts_with("approvals: 0.0.0.0:0 is not a loopback address"),
        "{refused}"
    );

    let mut notify = raw("127.0.0.1:0".parse().unwrap());
    notify.notify =
        Some(serde_json::from_value::<NotifyConfig>(serde_json::json!({"channels": []})).unwrap());
    let refused = Settings::try_from(notify).unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("approvals: notify: the page is not served here"),
        "{refused}"
    );
}
