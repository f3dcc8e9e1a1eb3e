//! The policy service embedded through `Settings` and `run`, without the
//! command: served on an owner-only Unix socket, one decision asked by a
//! real host, then shut down; and the settings `run` refuses before it
//! binds anything.

use std::time::Duration;

use hookwire_client::{Host, InterceptorBinding, RecordLog};
use hookwire_policy::settings::{Listen, RawSettings, ServerTls};
use hookwire_policy::{Error, PolicyOptions, Settings};

const DENY_RM: &str = "package hookwire.embedded\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains \"policy:embedded\" if contains(input.tool_call.args.cmd, \"rm\")\n";

fn raw(dir: Option<std::path::PathBuf>, listen: Listen) -> RawSettings {
    RawSettings {
        dir,
        bundle: None,
        listen,
        watch: false,
        metrics_addr: None,
        options: PolicyOptions::default(),
        decision_log: None,
        tls: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_the_settings_until_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.rego"), DENY_RM).unwrap();
    let sockets = tempfile::tempdir().unwrap();
    let socket = sockets.path().join("policy.sock");
    let settings = Settings::try_from(raw(
        Some(dir.path().to_path_buf()),
        Listen::Unix(socket.clone()),
    ))
    .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(hookwire_policy::run(settings, async move {
        let _ = stopped.await;
    }));
    for _ in 0..500 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let records = RecordLog::new();
    let host = Host::builder("test-agent", "hookwire")
        .bind(
            InterceptorBinding::remote("policy", format!("unix:{}", socket.display()))
                .timeout(Duration::from_secs(5)),
        )
        .record_sink(records)
        .build()
        .unwrap();
    let session = host.session("embedded").unwrap();
    session.start(["bash"]).await.unwrap();
    session
        .input(serde_json::json!("go"), hookwire_client::InputRole::User)
        .await
        .unwrap();
    let call =
        hookwire_client::ToolCall::new("call-1", "bash", serde_json::json!({"cmd": "rm -rf /"}));
    let emission = session.pre_tool_call(&call).await.unwrap();
    assert_eq!(emission.reason(), Some("policy:embedded"));

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("run returns once shut down")
        .unwrap()
        .unwrap();
}

#[test]
fn settings_refuse_tls_on_a_unix_socket_and_a_missing_source() {
    let mut tls = raw(
        Some("policies".into()),
        Listen::Unix("/tmp/never-bound.sock".into()),
    );
    tls.tls = Some(ServerTls {
        cert_pem: Vec::new(),
        key_pem: Vec::new(),
        client_ca_pem: None,
    });
    let refused = Settings::try_from(tls).unwrap_err();
    assert!(matches!(refused, Error::InvalidSettings(_)), "{refused}");
    assert!(
        refused
            .to_string()
            .starts_with("policy serve: TLS applies to TCP addresses")
    );

    let none = raw(None, Listen::Tcp("127.0.0.1:0".parse().unwrap()));
    let refused = Settings::try_from(none).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "policy serve: give a policy directory or --bundle"
    );
}
