//! Mutual TLS: a host presents a client certificate, a service requires
//! one from its authority and hands the verified identity to its hooks;
//! a missing or foreign certificate fails closed on both sides.

use std::sync::{Arc, Mutex};

use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{ClientIdentity, Host, InterceptorBinding, RecordLog, TlsConfig};
use hookwire_server::prelude::*;
use hookwire_server::{Peer, RunningServer, Server};
use hookwire_testkit::host;
use hookwire_testkit::tls::{Authority, SanType};

fn host_sans() -> Vec<SanType> {
    vec![
        SanType::DnsName("billing-agent.internal".try_into().unwrap()),
        SanType::URI("spiffe://acme.example/agent/billing".try_into().unwrap()),
    ]
}

/// Allows every call and keeps the caller each hook saw.
#[derive(Clone, Default)]
struct WhoCalls {
    callers: Arc<Mutex<Vec<Option<Peer>>>>,
}

#[async_trait]
impl Interceptor for WhoCalls {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("who-calls", "1.0.0")
    }
    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        self.callers.lock().unwrap().push(Peer::current());
        Verdict::allow()
    }
}

/// The service's authority, the server it signed, and a service requiring
/// client certificates from `clients`.
async fn serve_mtls(clients: &Authority, policy: WhoCalls) -> (Authority, RunningServer) {
    let server_ca = Authority::new("server-ca");
    let (cert, key) = server_ca.leaf(
        "who-calls",
        vec![SanType::DnsName("localhost".try_into().unwrap())],
    );
    let running = Server::builder()
        .tls(&cert, &key)
        .unwrap()
        .client_ca(&clients.pem)
        .unwrap()
        .service(policy)
        .spawn_local()
        .await
        .unwrap();
    (server_ca, running)
}

fn tls(server_ca: &Authority, client: Option<(String, String)>) -> TlsConfig {
    TlsConfig {
        ca_pem: Some(server_ca.pem.clone().into_bytes()),
        domain_name: Some("localhost".into()),
        client_identity: client.map(|(cert, key)| ClientIdentity::from_pem(cert, key)),
    }
}

async fn start(tls: TlsConfig, endpoint: String) -> (Option<String>, RecordLog) {
    let (b, records) = host();
    let h = b
        .bind(InterceptorBinding::remote("who-calls", endpoint).tls(tls))
        .build()
        .unwrap();
    let e = h.session("s-mtls").unwrap().start(["bash"]).await.unwrap();
    (e.reason().map(str::to_owned), records)
}

#[tokio::test]
async fn a_host_with_a_certificate_from_the_authority_is_served_and_identified() {
    let clients = Authority::new("client-ca");
    let policy = WhoCalls::default();
    let (server_ca, server) = serve_mtls(&clients, policy.clone()).await;
    let client = clients.leaf("billing-agent", host_sans());
    let (reason, records) = start(tls(&server_ca, Some(client)), server.endpoint()).await;
    assert_eq!(reason, None, "allowed");
    assert_eq!(
        records.records()[0].verdicts[0].name.as_deref(),
        Some("who-calls")
    );
    let callers = policy.callers.lock().unwrap().clone();
    let peer = callers[0].clone().expect("the hook saw its caller");
    assert!(
        peer.subject.contains("CN=billing-agent"),
        "{}",
        peer.subject
    );
    assert!(peer.subject.contains("O=Acme"), "{}", peer.subject);
    assert_eq!(peer.dns_names, ["billing-agent.internal"]);
    assert_eq!(peer.uris, ["spiffe://acme.example/agent/billing"]);
    assert!(!peer.certificate_der.is_empty());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_missing_or_foreign_certificate_fails_closed_and_no_hook_runs() {
    let clients = Authority::new("client-ca");
    let policy = WhoCalls::default();
    let (server_ca, server) = serve_mtls(&clients, policy.clone()).await;
    let stranger = Authority::new("stranger-ca");
    let cases = [
        ("no certificate", None),
        (
            "another authority",
            Some(stranger.leaf("billing-agent", host_sans())),
        ),
    ];
    for (case, client) in cases {
        let (reason, records) = start(tls(&server_ca, client), server.endpoint()).await;
        assert_eq!(
            reason.as_deref(),
            Some("host_error:interceptor_failed"),
            "{case}"
        );
        assert_eq!(records.records()[0].decided_by, Some(0), "{case}");
    }
    assert!(
        policy.callers.lock().unwrap().is_empty(),
        "the handshake was refused before any hook ran"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_hook_sees_no_peer_without_client_certificates() {
    let server_ca = Authority::new("server-ca");
    let (cert, key) = server_ca.leaf(
        "who-calls",
        vec![SanType::DnsName("localhost".try_into().unwrap())],
    );
    let policy = WhoCalls::default();
    let server = Server::builder()
        .tls(&cert, &key)
        .unwrap()
        .service(policy.clone())
        .spawn_local()
        .await
        .unwrap();
    let (reason, _) = start(tls(&server_ca, None), server.endpoint()).await;
    assert_eq!(reason, None);
    assert_eq!(*policy.callers.lock().unwrap(), [None]);
    server.shutdown().await.unwrap();
}

#[test]
fn client_certificates_need_tls_and_keys_stay_out_of_debug_output() {
    let err = Server::builder().client_ca("pem").expect_err("no TLS yet");
    assert!(
        matches!(err, hookwire_server::Error::ClientCaWithoutTls),
        "{err}"
    );
    let identity = ClientIdentity::from_pem("CERT", "-----BEGIN PRIVATE KEY-----SECRETKEY");
    let shown = format!(
        "{:?}",
        TlsConfig {
            client_identity: Some(identity),
            ..TlsConfig::default()
        }
    );
    assert!(
        !shown.contains("SECRETKEY") && shown.contains("redacted"),
        "{shown}"
    );
}

#[test]
fn an_unusable_client_key_is_a_build_error_that_quotes_no_key() {
    let clients = Authority::new("client-ca");
    let (cert, _) = clients.leaf("billing-agent", host_sans());
    let (b, _) = host();
    let err = b
        .bind(
            InterceptorBinding::remote("who-calls", "https://127.0.0.1:1").tls(TlsConfig {
                client_identity: Some(ClientIdentity::from_pem(cert, "not a key SECRETKEY")),
                ..TlsConfig::default()
            }),
        )
        .build()
        .expect_err("no private key in the PEM");
    assert!(!err.to_string().contains("SECRETKEY"), "{err}");
}

/// A declared `hookwire.grpc` binding with `tls.cert_file` and
/// `tls.key_file` presents the certificate; a half or unreadable pair is
/// refused without quoting a path.
#[tokio::test]
async fn a_declared_binding_presents_its_certificate_files() {
    let clients = Authority::new("client-ca");
    let policy = WhoCalls::default();
    let (server_ca, server) = serve_mtls(&clients, policy.clone()).await;
    let (cert, key) = clients.leaf("declared-agent", host_sans());
    let dir = std::env::temp_dir().join(format!("hookwire-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let ca_file = file("ca.pem", &server_ca.pem);
    let cert_file = file("client.pem", &cert);
    let key_file = file("client.key", &key);
    let doc = |tls: serde_json::Value| {
        let doc = serde_json::json!({
            "declaration": "agent-hooks-declaration/1.0",
            "bindings": [{
                "id": "who-calls",
                "kind": "hookwire.grpc",
                "config": {"endpoint": server.endpoint(), "tls": tls}
            }]
        });
        Declaration::from_value(&doc).unwrap()
    };
    let records = RecordLog::new();
    let h = Host::declared("agent", "hookwire")
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .load(
            &doc(serde_json::json!({
                "ca_file": ca_file, "domain_name": "localhost",
                "cert_file": cert_file, "key_file": key_file
            })),
            &Registry::standard(),
        )
        .unwrap();
    let e = h
        .session("s-declared-mtls")
        .unwrap()
        .start(["bash"])
        .await
        .unwrap();
    assert!(e.proceeds(), "{:?} {:?}", e.reason(), e.verdict().message);
    let peer = policy.callers.lock().unwrap()[0].clone().unwrap();
    assert!(
        peer.subject.contains("CN=declared-agent"),
        "{}",
        peer.subject
    );

    let missing = dir.join("absent.key").to_str().unwrap().to_owned();
    for (tls, finding) in [
        (
            serde_json::json!({"ca_file": ca_file, "cert_file": cert_file}),
            "config.tls.cert_file and config.tls.key_file go together",
        ),
        (
            serde_json::json!({"ca_file": ca_file, "cert_file": cert_file, "key_file": missing}),
            "config.tls.key_file cannot be read",
        ),
    ] {
        let err = Host::declared("agent", "hookwire")
            .load(&doc(tls), &Registry::standard())
            .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains(finding), "{text}");
        assert!(
            !text.contains(dir.to_str().unwrap()),
            "no path quoted: {text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    server.shutdown().await.unwrap();
}
