//! Interceptor services over TLS: a host reaches an `https://` service whose
//! certificate it verifies against the authority it was given, and fails
//! closed when it cannot verify it.

use hookwire_testkit as common;

use common::{Scripted, host};
use hookwire_client::{InterceptorBinding, TlsConfig};
use hookwire_server::{RunningServer, Server};
use hookwire_testkit::tls::Authority;

/// A throwaway authority and a `localhost` certificate it signed.
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    let ca = Authority::new("tls test CA");
    let server = ca.localhost();
    Pki {
        ca_pem: ca.pem,
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
    }
}

async fn serve_tls(pki: &Pki) -> RunningServer {
    Server::builder()
        .tls(&pki.cert_pem, &pki.key_pem)
        .unwrap()
        .service(Scripted::allow_all("tls-allow"))
        .spawn_local()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_verified_tls_service_governs_the_session() {
    let pki = pki();
    let server = serve_tls(&pki).await;
    assert!(server.endpoint().starts_with("https://127.0.0.1:"));
    let (b, records) = host();
    let h = b
        .bind(
            InterceptorBinding::remote("tls-allow", server.endpoint()).tls(TlsConfig {
                ca_pem: Some(pki.ca_pem.clone().into_bytes()),
                domain_name: Some("localhost".into()),
                ..TlsConfig::default()
            }),
        )
        .build()
        .unwrap();
    let session = h.session("s-tls").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert!(e.proceeds(), "{:?} {:?}", e.reason(), e.verdict().message);
    assert_eq!(
        records.records()[0].verdicts[0].name.as_deref(),
        Some("tls-allow")
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unverifiable_certificate_fails_closed() {
    let pki = pki();
    let server = serve_tls(&pki).await;
    let other = self::pki();
    let cases = [
        // The public roots do not know the throwaway authority.
        None,
        // Another authority did not sign the certificate.
        Some(TlsConfig {
            ca_pem: Some(other.ca_pem.into_bytes()),
            domain_name: Some("localhost".into()),
            ..TlsConfig::default()
        }),
        // The right authority, but the certificate names another host.
        Some(TlsConfig {
            ca_pem: Some(pki.ca_pem.clone().into_bytes()),
            domain_name: Some("policy.internal".into()),
            ..TlsConfig::default()
        }),
    ];
    for tls in cases {
        let mut binding = InterceptorBinding::remote("tls-allow", server.endpoint());
        if let Some(tls) = tls {
            binding = binding.tls(tls);
        }
        let (b, _) = host();
        let h = b.bind(binding).build().unwrap();
        let session = h.session("s-tls-bad").unwrap();
        let e = session.start(["bash"]).await.unwrap();
        assert_eq!(e.reason(), Some("host_error:interceptor_failed"));
    }
    server.shutdown().await.unwrap();
}

#[test]
fn tls_settings_need_an_https_endpoint() {
    let (b, _) = host();
    let err = b
        .bind(InterceptorBinding::remote("plain", "http://127.0.0.1:1").tls(TlsConfig::default()))
        .build()
        .expect_err("tls on http is a build error");
    assert!(err.to_string().contains("https"), "{err}");
}

/// A declared `hookwire.grpc` binding with `tls.ca_file` and
/// `tls.domain_name` reaches the service over TLS.
#[tokio::test]
async fn a_declared_binding_verifies_its_service_with_the_declared_authority() {
    use hookwire_client::Host;
    use hookwire_client::declaration::{Declaration, Registry};

    let pki = pki();
    let server = serve_tls(&pki).await;
    let dir = std::env::temp_dir().join(format!("hookwire-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).unwrap();
    let doc = serde_json::json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{
            "id": "tls-allow",
            "kind": "hookwire.grpc",
            "config": {
                "endpoint": server.endpoint(),
                "tls": {"ca_file": ca_file.to_str().unwrap(), "domain_name": "localhost"}
            }
        }]
    });
    let declaration = Declaration::from_value(&doc).unwrap();
    let records = hookwire_client::RecordLog::new();
    let h = Host::declared("agent", "hookwire")
        .record_sink(records.clone())
        .record_sink(hookwire_testkit::SchemaSink::new())
        .load(&declaration, &Registry::standard())
        .unwrap();
    let session = h.session("s-declared-tls").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert!(e.proceeds(), "{:?} {:?}", e.reason(), e.verdict().message);
    assert_eq!(
        records.records()[0].declaration.as_deref(),
        Some("agent-hooks-declaration/1.0")
    );
    std::fs::remove_dir_all(&dir).unwrap();
    server.shutdown().await.unwrap();
}
