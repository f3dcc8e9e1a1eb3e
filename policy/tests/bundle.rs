//! Bundles: signed `.tar.gz` archives served over HTTP on `127.0.0.1:0` by
//! the test (an axum server honouring `If-None-Match`), or read from a
//! file. A signed bundle activates; a tampered one, an unsigned one, one
//! that does not compile or does not download is refused and the serving
//! set keeps deciding; an ETag `304` does not reload; hostile archives
//! (path traversal, links, a decompression bomb, too many entries) are
//! refused whole.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use flate2::Compression;
use flate2::write::GzEncoder;
use hookwire::{AgentContext, Decision, SPEC_VERSION};
use hookwire_policy::bundle::{
    BundleEvent, BundleLimits, BundleOptions, Bundles, Verification, read_bundle, sign_files,
};
use hookwire_policy::{Policies, status};
use serde_json::json;

pub(crate) fn rm_call() -> AgentContext {
    AgentContext::from_json(json!({
        "spec": SPEC_VERSION,
        "interception_point": "pre_tool_call",
        "timestamp": "2025-01-01T00:00:00Z",
        "sequence": 4,
        "agent": {"id": "agent-7", "framework": "hookwire"},
        "session": {"id": "s-bundle"},
        "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": "rm -rf /", "password": "hunter2"}},
    }))
    .expect("a context")
}

pub(crate) fn policy(version: &str) -> String {
    format!(
        "package hookwire.versioned\nimport rego.v1\npoints := {{\"pre_tool_call\"}}\n\
         deny contains \"policy:{version}\" if contains(input.tool_call.args.cmd, \"rm\")\n"
    )
}

fn files(version: &str) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (
            ".manifest".to_owned(),
            json!({"revision": version, "roots": ["hookwire"]})
                .to_string()
                .into_bytes(),
        ),
        (
            "hookwire/versioned/policy.rego".to_owned(),
            policy(version).into_bytes(),
        ),
        (
            "hookwire/versioned/data.json".to_owned(),
            b"{\"b\": 1, \"a\": [1, 2]}".to_vec(),
        ),
    ])
}

/// A gzip-compressed tar of `files`, in order.
pub(crate) fn archive(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes.as_slice())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// An Ed25519 key pair: (PKCS#8 private PEM, SPKI public PEM).
pub(crate) fn ed25519() -> (String, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    (key.serialize_pem(), key.public_key_pem())
}

pub(crate) fn signed(
    files: &BTreeMap<String, Vec<u8>>,
    private: &str,
) -> BTreeMap<String, Vec<u8>> {
    let signature = sign_files(files, private.as_bytes(), "EdDSA", None).unwrap();
    let mut all = files.clone();
    all.insert(".signatures.json".into(), signature.into_bytes());
    all
}

fn verifying(public: &str) -> BundleOptions {
    BundleOptions {
        verification: Some(Verification::from_pem(public.as_bytes(), "EdDSA", None).unwrap()),
        ..BundleOptions::default()
    }
}

/// What the test's bundle server serves and what it was asked.
#[derive(Default)]
pub(crate) struct Served {
    /// The archive and its ETag; `None`: answer 500.
    pub(crate) bundle: Option<(Vec<u8>, String)>,
    /// The `If-None-Match` of each request.
    pub(crate) asked: Vec<Option<String>>,
}

/// Serves `served` at `/bundle.tar.gz` on a free loopback port.
pub(crate) async fn bundle_server(served: Arc<Mutex<Served>>) -> String {
    let app = axum::Router::new().route(
        "/bundle.tar.gz",
        axum::routing::get(move |headers: HeaderMap| {
            let served = Arc::clone(&served);
            async move {
                let mut s = served.lock().unwrap();
                let tag = headers
                    .get(header::IF_NONE_MATCH)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                s.asked.push(tag.clone());
                let response: Response = match &s.bundle {
                    None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    Some((_, etag)) if tag.as_deref() == Some(etag.as_str()) => {
                        StatusCode::NOT_MODIFIED.into_response()
                    }
                    Some((bytes, etag)) => {
                        ([(header::ETAG, etag.clone())], bytes.clone()).into_response()
                    }
                };
                response
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/bundle.tar.gz")
}

fn reason(policies: &Policies) -> Option<String> {
    let verdict = policies.decide(&rm_call()).expect("a verdict");
    assert_eq!(verdict.decision, Decision::Deny);
    verdict.reason
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_bundle_over_http_activates_and_a_tampered_one_keeps_the_old_set() {
    let (private, public) = ed25519();
    let served = Arc::new(Mutex::new(Served {
        bundle: Some((archive(&signed(&files("v1"), &private)), "\"e1\"".into())),
        ..Served::default()
    }));
    let url = bundle_server(Arc::clone(&served)).await;
    let bundles = Bundles::new(&url, verifying(&public)).unwrap();
    let policies = bundles.activate_first().await.expect("v1 activates");
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));
    assert_eq!(policies.status().revision.as_deref(), Some("v1"));

    // The same ETag: a 304, nothing reloads.
    assert_eq!(bundles.poll_once(&policies).await, BundleEvent::NotModified);
    assert_eq!(policies.status().generation, 1);
    assert_eq!(
        served.lock().unwrap().asked.last().unwrap().as_deref(),
        Some("\"e1\"")
    );

    // v2's policy under v1's signature: refused, v1 keeps serving.
    let mut tampered = signed(&files("v1"), &private);
    tampered.insert(
        "hookwire/versioned/policy.rego".into(),
        policy("v2").into_bytes(),
    );
    served.lock().unwrap().bundle = Some((archive(&tampered), "\"e2\"".into()));
    let BundleEvent::Failed { error } = bundles.poll_once(&policies).await else {
        panic!("the tampered bundle was accepted");
    };
    assert!(error.contains("hash does not match"), "{error}");
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));
    let status = bundles.status();
    assert_eq!(status.active_revision.as_deref(), Some("v1"));
    assert!(status.last_failed_activation.is_some());
    assert!(
        status
            .error
            .as_deref()
            .unwrap()
            .contains("hash does not match")
    );
    // Not activated, so the next request still names v1's ETag.
    bundles.poll_once(&policies).await;
    assert_eq!(
        served.lock().unwrap().asked.last().unwrap().as_deref(),
        Some("\"e1\"")
    );

    // A download failure keeps the set too.
    served.lock().unwrap().bundle = None;
    assert!(matches!(
        bundles.poll_once(&policies).await,
        BundleEvent::Failed { .. }
    ));
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));

    // A properly signed v2 activates.
    served.lock().unwrap().bundle =
        Some((archive(&signed(&files("v2"), &private)), "\"e3\"".into()));
    assert_eq!(
        bundles.poll_once(&policies).await,
        BundleEvent::Activated {
            revision: "v2".into(),
            generation: 2
        }
    );
    assert_eq!(reason(&policies).as_deref(), Some("policy:v2"));
    let document = status::document(&policies, Some(&bundles.status()), None);
    assert_eq!(document["bundle"]["active_revision"], "v2");
    assert_eq!(document["bundle"]["error"], serde_json::Value::Null);
    assert_eq!(document["bundle"]["activations"], 2);
    assert_eq!(document["policies"]["generation"], 2);
    assert_eq!(document["policies"]["revision"], "v2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_are_required_when_a_key_is_given_and_refused_without_one() {
    let (private, public) = ed25519();
    let name = "bundle.tar.gz";
    let error = |options: &BundleOptions, files: &BTreeMap<String, Vec<u8>>| {
        read_bundle(name, &archive(files), options)
            .expect_err("refused")
            .to_string()
    };
    assert!(error(&verifying(&public), &files("v1")).contains("unsigned"));
    assert!(
        error(&BundleOptions::default(), &signed(&files("v1"), &private))
            .contains("no verification key")
    );
    // Another key's signature, and a file the signature does not cover.
    let (other, _) = ed25519();
    assert!(error(&verifying(&public), &signed(&files("v1"), &other)).contains("does not verify"));
    let mut extra = signed(&files("v1"), &private);
    extra.insert(
        "hookwire/versioned/more.rego".into(),
        policy("v3").into_bytes(),
    );
    assert!(error(&verifying(&public), &extra).contains("not covered"));
    // A data document reformatted keeps its signature (canonical JSON).
    let mut reformatted = signed(&files("v1"), &private);
    reformatted.insert(
        "hookwire/versioned/data.json".into(),
        b"{ \"a\": [1,2],\n  \"b\": 1 }".to_vec(),
    );
    assert!(read_bundle(name, &archive(&reformatted), &verifying(&public)).is_ok());
    // ES256 (P-256) in the same format; a key of the wrong type is refused.
    let p256 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let es = sign_files(
        &files("v1"),
        p256.serialize_pem().as_bytes(),
        "ES256",
        Some("prod".into()),
    )
    .unwrap();
    let mut es_signed = files("v1");
    es_signed.insert(".signatures.json".into(), es.into_bytes());
    let es_key = |scope: &str| BundleOptions {
        verification: Some(
            Verification::from_pem(
                p256.public_key_pem().as_bytes(),
                "ES256",
                Some(scope.into()),
            )
            .unwrap(),
        ),
        ..BundleOptions::default()
    };
    assert!(read_bundle(name, &archive(&es_signed), &es_key("prod")).is_ok());
    assert!(error(&es_key("staging"), &es_signed).contains("scope"));
    assert!(error(&verifying(&public), &es_signed).contains("signed with ES256"));
    assert!(Verification::from_pem(public.as_bytes(), "HS256", None).is_err());
    // Unsigned without a key reads.
    assert!(read_bundle(name, &archive(&files("v1")), &BundleOptions::default()).is_ok());
}

#[test]
fn packages_outside_the_manifest_roots_are_refused() {
    let mut outside = files("v1");
    outside.insert(
        ".manifest".into(),
        json!({"revision": "r", "roots": ["hookwire/other"]})
            .to_string()
            .into_bytes(),
    );
    let error = read_bundle("b", &archive(&outside), &BundleOptions::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("outside the manifest's roots"), "{error}");

    let mut root_data = files("v1");
    root_data.insert("data.json".into(), b"{\"elsewhere\": 1}".to_vec());
    let error = read_bundle("b", &archive(&root_data), &BundleOptions::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("data at the root is outside"), "{error}");
}

/// A tar with one entry whose header is written by hand.
fn raw_entry(name: &[u8], kind: tar::EntryType, data: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(kind);
    if kind == tar::EntryType::Symlink {
        header.as_old_mut().linkname[..6].copy_from_slice(b"/etc/x");
    }
    header.set_cksum();
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    tar.append(&header, data).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

#[test]
fn hostile_archives_are_refused_whole() {
    let refused = |bytes: &[u8], limits: BundleLimits| {
        let options = BundleOptions {
            limits,
            ..BundleOptions::default()
        };
        read_bundle("b", bytes, &options).unwrap_err().to_string()
    };
    let limits = BundleLimits::default();
    let traversal = raw_entry(
        b"../evil.rego",
        tar::EntryType::Regular,
        policy("x").as_bytes(),
    );
    assert!(refused(&traversal, limits).contains("leaving the bundle"));
    let link = raw_entry(b"p.rego", tar::EntryType::Symlink, b"");
    assert!(refused(&link, limits).contains("only files and directories"));

    // 8 MiB of zeros compress to a few KiB: refused at a 1 MiB bound.
    let zeros = vec![0u8; 8 << 20];
    let bomb = archive(&BTreeMap::from([("hookwire/data.json".to_owned(), zeros)]));
    assert!(bomb.len() < 64 << 10, "{}", bomb.len());
    let small = BundleLimits {
        max_unpacked_bytes: 1 << 20,
        max_file_bytes: 16 << 20,
        ..limits
    };
    assert!(
        refused(&bomb, small).contains("exceed"),
        "{}",
        refused(&bomb, small)
    );

    let many: BTreeMap<String, Vec<u8>> =
        (0..20).map(|i| (format!("f{i}.txt"), Vec::new())).collect();
    let few = BundleLimits {
        max_entries: 10,
        ..limits
    };
    assert!(refused(&archive(&many), few).contains("more than 10 entries"));
    let big = BundleLimits {
        max_archive_bytes: 100,
        ..limits
    };
    assert!(refused(&archive(&files("v1")), big).contains("over the bound"));
    let mut garbage = GzEncoder::new(Vec::new(), Compression::default());
    garbage.write_all(b"not a tar archive at all").unwrap();
    assert!(!refused(&garbage.finish().unwrap(), limits).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_bundle_reloads_when_its_bytes_change_and_not_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tar.gz");
    std::fs::write(&path, archive(&files("v1"))).unwrap();
    let bundles = Bundles::new(path.to_str().unwrap(), BundleOptions::default()).unwrap();
    let policies = bundles.activate_first().await.unwrap();
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));
    assert_eq!(bundles.poll_once(&policies).await, BundleEvent::NotModified);

    // A bundle that does not compile: refused, v1 keeps serving.
    let mut broken = files("v2");
    broken.insert(
        "hookwire/versioned/policy.rego".into(),
        b"package hookwire.versioned\nthis is not rego".to_vec(),
    );
    std::fs::write(&path, archive(&broken)).unwrap();
    assert!(matches!(
        bundles.poll_once(&policies).await,
        BundleEvent::Failed { .. }
    ));
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));
    assert_eq!(policies.status().rejected, 1);

    std::fs::write(&path, archive(&files("v2"))).unwrap();
    assert!(matches!(
        bundles.poll_once(&policies).await,
        BundleEvent::Activated { .. }
    ));
    assert_eq!(reason(&policies).as_deref(), Some("policy:v2"));
    // A missing file is a failed download; v2 keeps serving.
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        bundles.poll_once(&policies).await,
        BundleEvent::Failed { .. }
    ));
    assert_eq!(reason(&policies).as_deref(), Some("policy:v2"));
}

/// Serves `archive` over HTTPS with `leaf` on a free loopback port.
async fn https_server(leaf: &hookwire_testkit::tls::Leaf, archive: Vec<u8>) -> String {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let archive = bytes::Bytes::from(archive);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let archive = archive.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |_request| {
                    let body = http_body_util::Full::new(archive.clone());
                    async move { Ok::<_, std::convert::Infallible>(hyper::Response::new(body)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    format!("https://localhost:{}/bundle.tar.gz", addr.port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_bundle_server_is_trusted_through_the_given_authority_only() {
    let authority = hookwire_testkit::tls::Authority::new("bundle-server-ca");
    let (private, public) = ed25519();
    let url = https_server(
        &authority.localhost(),
        archive(&signed(&files("v1"), &private)),
    )
    .await;

    let trusting = BundleOptions {
        ca_pem: Some(authority.pem.clone().into_bytes()),
        ..verifying(&public)
    };
    let bundles = Bundles::new(&url, trusting).unwrap();
    let policies = bundles.activate_first().await.expect("served over HTTPS");
    assert_eq!(reason(&policies).as_deref(), Some("policy:v1"));

    // The public roots do not know the test's authority: refused.
    let public_roots = Bundles::new(&url, verifying(&public)).unwrap();
    let error = public_roots.activate_first().await.unwrap_err().to_string();
    assert!(error.contains("download failed"), "{error}");
    assert!(public_roots.status().error.is_some());
}
