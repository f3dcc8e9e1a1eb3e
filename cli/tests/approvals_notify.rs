//! `hookwire approvals serve` with the config file's `notify` channels:
//! a host's escalation reaches a webhook receiver served here on
//! 127.0.0.1:0, signed with the channel's secret, carrying a summary and a
//! link, never the arguments or a token.

use std::time::Duration;

use hookwire_client::{ApprovalResolver, StreamResolver};
use serde_json::json;

use crate::approvals_serve::{ANN_TOKEN, HOST_TOKEN, Serving, access_list, write};

/// One HTTP/1.1 request a webhook receiver read: its head and body.
struct Delivered {
    head: String,
    body: Vec<u8>,
}

impl Delivered {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// A webhook receiver on 127.0.0.1:0 answering `200` to every request;
/// its URL and what it received.
async fn webhook_receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Delivered>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    let length: usize = Delivered {
                        head: head.clone(),
                        body: vec![],
                    }
                    .header("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                    while buf.len() < end + 4 + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = buf[end + 4..end + 4 + length].to_vec();
                    buf.drain(..end + 4 + length);
                    let _ = tx.send(Delivered { head, body });
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, rx)
}

/// Writes `approvals.json` in `dir`: the test access list and one webhook
/// channel `ops` to `url` for `ann`, signed with `secret`, with `notify`'s
/// and `channel`'s members added to the `notify` block and the channel.
fn webhook_config(
    dir: &std::path::Path,
    url: &str,
    secret: &str,
    notify: serde_json::Value,
    channel: serde_json::Value,
) -> std::path::PathBuf {
    let secret_file = dir.join("webhook-secret");
    std::fs::write(&secret_file, secret).unwrap();
    let mut ops = json!({"name": "ops", "kind": "webhook", "url": url,
                         "secret_file": secret_file, "approvers": ["ann"]});
    let mut block = json!({"page_url": "https://approvals.example/"});
    for (into, from) in [(&mut ops, channel), (&mut block, notify)] {
        if let serde_json::Value::Object(m) = from {
            into.as_object_mut().unwrap().extend(m);
        }
    }
    block["channels"] = json!([ops]);
    let config = dir.join("approvals.json");
    write(
        &config,
        &json!({"access": access_list(&[]), "notify": block}),
    );
    config
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_files_notify_channels_get_signed_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let (url, mut delivered) = webhook_receiver().await;
    let secret = "whsec-cli-test-0123456789";
    let config = webhook_config(dir.path(), &url, secret, json!({}), json!({}));
    let serving = Serving::start(&["--config", config.to_str().unwrap()]);
    // Checked before serving, so said first.
    serving.line(|l| l.starts_with("notifications:") && l.contains("1 channel"));
    let endpoint = serving.printed("approval service:");
    let resolver = StreamResolver::builder(endpoint)
        .bearer_token(HOST_TOKEN)
        .deadline(Duration::from_secs(60))
        .build()
        .expect("resolver");
    let asking = tokio::spawn(async move {
        resolver
            .resolve(&hookwire_testkit::approval_request(7))
            .await
    });
    let d = tokio::time::timeout(Duration::from_secs(20), delivered.recv())
        .await
        .expect("a notification arrived")
        .expect("the receiver runs");
    let body: serde_json::Value = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(body["event"], "approval.requested");
    assert_eq!(body["request"]["tool"], "wire_transfer");
    assert!(
        body["link"]
            .as_str()
            .unwrap()
            .starts_with("https://approvals.example/#request=")
    );
    let ts: u64 = d.header("x-hookwire-timestamp").unwrap().parse().unwrap();
    assert_eq!(
        d.header("x-hookwire-signature").unwrap(),
        hookwire_approvals::notify::signature(secret.as_bytes(), ts, &d.body)
    );
    let text = String::from_utf8_lossy(&d.body);
    for leak in [secret, HOST_TOKEN, ANN_TOKEN, "\"amount\""] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
    asking.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_emission_given_up_on_is_withdrawn_and_the_channel_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let (url, mut delivered) = webhook_receiver().await;
    let config = webhook_config(
        dir.path(),
        &url,
        "whsec-cli-test-withdrawn",
        json!({}),
        json!({}),
    );
    let serving = Serving::start(&["--config", config.to_str().unwrap()]);
    let endpoint = serving.printed("approval service:");

    // `hookwire emit` of a transfer the spending policy escalates, with an
    // emission bound far shorter than the approval deadline.
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let declaration = dir.path().join("declaration.json");
    write(
        &declaration,
        &json!({
            "declaration": "agent-hooks-declaration/1.0",
            "spec": "agent-hooks/0.1",
            "id": "emit-with-approvals",
            "configuration": {
                "mode": "enforce",
                "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                "approval": {"resolver": "approval-stream"},
                "timeouts": {"interceptor_ms": 5000, "approval_resolver_ms": 300000}
            },
            "bindings": [
                {"id": "policy", "kind": "hookwire.rego",
                 "config": {"path": root.join("examples/policies")}},
                {"id": "passthrough", "kind": "hookwire.allow"}
            ]
        }),
    );
    let token_file = dir.path().join("host.token");
    std::fs::write(&token_file, HOST_TOKEN).unwrap();
    let emit = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("emit")
        .arg("--declaration")
        .arg(&declaration)
        .arg("--context")
        .arg(root.join("examples/policies/contexts/wire_transfer.json"))
        .args(["--approval-endpoint", &endpoint, "--approval-token-file"])
        .arg(&token_file)
        .args(["--emission-timeout-ms", "1500"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), emit)
        .await
        .expect("emit ends")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--emission-timeout-ms"), "{stderr}");

    let mut events = Vec::new();
    while events.len() < 2 {
        let d = tokio::time::timeout(Duration::from_secs(20), delivered.recv())
            .await
            .unwrap_or_else(|_| panic!("two notifications arrive; got {events:?}"))
            .expect("the receiver runs");
        events.push(serde_json::from_slice::<serde_json::Value>(&d.body).unwrap());
    }
    assert_eq!(events[0]["event"], "approval.requested");
    assert_eq!(events[1]["event"], "approval.withdrawn", "{:?}", events[1]);
    assert_eq!(events[1]["request"]["id"], events[0]["request"]["id"]);
    let why = events[1]["request"]["withdrawn"].as_str().unwrap_or("");
    assert!(matches!(why, "cancelled" | "host_gone"), "{why}");
}

#[test]
fn emit_waits_for_the_approval_deadline_by_default() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["emit", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("approval deadline plus 30 000"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_https_receiver_of_a_private_ca_needs_webhook_ca_and_gets_the_client_certificate() {
    use hookwire_testkit::tls::Authority;
    use hookwire_testkit::tls_front::TlsFront;

    let dir = tempfile::tempdir().unwrap();
    let (plain, mut delivered) = webhook_receiver().await;
    let backend = plain
        .trim_start_matches("http://")
        .trim_end_matches("/hook")
        .parse()
        .unwrap();
    let (server_ca, client_ca) = (Authority::new("receiver CA"), Authority::new("client CA"));
    let front = TlsFront::start(&server_ca, Some(&client_ca), backend);
    let url = format!("https://127.0.0.1:{}/hook", front.addr().port());
    let (cert, key) = client_ca.leaf("approvals", Vec::new());
    for (name, pem) in [
        ("ca.pem", &server_ca.pem),
        ("client.pem", &cert),
        ("client.key", &key),
    ] {
        std::fs::write(dir.path().join(name), pem).unwrap();
    }
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let dead = dir.path().join("dead-letters.jsonl");
    let config = webhook_config(
        dir.path(),
        &url,
        "whsec-cli-test-0123456789",
        json!({"dead_letter_file": dead}),
        json!({"max_attempts": 1}),
    );
    let ask = |serving: &Serving| {
        let resolver = StreamResolver::builder(serving.printed("approval service:"))
            .bearer_token(HOST_TOKEN)
            .deadline(Duration::from_secs(60))
            .build()
            .expect("resolver");
        tokio::spawn(async move {
            resolver
                .resolve(&hookwire_testkit::approval_request(7))
                .await
        })
    };

    // The web PKI alone does not trust the receiver's CA: the delivery
    // fails and is dead-lettered; nothing reached the receiver.
    let serving = Serving::start(&["--config", config.to_str().unwrap()]);
    let asking = ask(&serving);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&dead).map_or(true, |s| s.is_empty()) {
        assert!(tokio::time::Instant::now() < deadline, "no dead letter");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(front.handshakes(), 0);
    assert!(delivered.try_recv().is_err());
    asking.abort();
    drop(serving);

    // With the CA and a client certificate it is delivered, and the
    // receiver saw the certificate.
    let serving = Serving::start(&[
        "--config",
        config.to_str().unwrap(),
        "--webhook-ca",
        &path("ca.pem"),
        "--webhook-client-cert",
        &path("client.pem"),
        "--webhook-client-key",
        &path("client.key"),
    ]);
    let asking = ask(&serving);
    let d = tokio::time::timeout(Duration::from_secs(20), delivered.recv())
        .await
        .expect("a notification arrived")
        .expect("the receiver runs");
    let body: serde_json::Value = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(body["event"], "approval.requested");
    assert!(
        front.client_certificates() >= 1,
        "the client certificate was presented"
    );
    asking.abort();
}
