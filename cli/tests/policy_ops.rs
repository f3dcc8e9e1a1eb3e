//! `hookwire policy serve`'s operator surface, run as the built binary: a
//! signed bundle file polled, a tampered one refused while the old set
//! keeps serving, the decision log written and summarized at shutdown,
//! `GET /status` and the `hookwire_policy_*` series; TLS with client
//! authentication refusing a host without a certificate.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use hookwire_client::{
    ClientIdentity, Host, InputRole, InterceptorBinding, RecordLog, TlsConfig, ToolCall,
};
use hookwire_testkit::tls::{Authority, SanType};
use hookwire_testkit::{metric_value, scrape_metrics};
use serde_json::{Value, json};

use crate::gateway::{Running, line_starting, lines_of};
use crate::operable::{addr_of, interrupt, line_with, stderr_lines};

fn policy(version: &str) -> String {
    format!(
        "package hookwire.versioned\nimport rego.v1\npoints := {{\"pre_tool_call\"}}\n\
         deny contains \"policy:{version}\" if contains(input.tool_call.args.cmd, \"rm\")\n"
    )
}

fn files(version: &str) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (
            ".manifest".to_owned(),
            json!({"revision": version}).to_string().into_bytes(),
        ),
        (
            "hookwire/versioned/policy.rego".to_owned(),
            policy(version).into_bytes(),
        ),
    ])
}

/// Writes `files` as a gzip-compressed tar to `path` atomically.
fn write_bundle(path: &Path, files: &BTreeMap<String, Vec<u8>>) {
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes.as_slice())
            .unwrap();
    }
    let bytes = tar.into_inner().unwrap().finish().unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn signed(files: &BTreeMap<String, Vec<u8>>, private: &str) -> BTreeMap<String, Vec<u8>> {
    let signature =
        hookwire_policy::bundle::sign_files(files, private.as_bytes(), "EdDSA", None).unwrap();
    let mut all = files.clone();
    all.insert(".signatures.json".into(), signature.into_bytes());
    all
}

/// `GET path` over HTTP/1.0; the body.
fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split_once("\r\n\r\n")
        .expect("an HTTP response")
        .1
        .to_owned()
}

async fn rm_reason(endpoint: &str, tls: Option<TlsConfig>) -> Option<String> {
    let mut binding =
        InterceptorBinding::remote("policy", endpoint).timeout(Duration::from_secs(10));
    if let Some(tls) = tls {
        binding = binding.tls(tls);
    }
    let host = Host::builder("ops-agent", "hookwire")
        .bind(binding)
        .record_sink(RecordLog::new())
        .build()
        .unwrap();
    let session = host.session("s-ops").unwrap();
    // The first emission that does not proceed gives the reason (a host
    // that cannot reach the service fails closed at once).
    let started = session.start(["bash"]).await.unwrap();
    if !started.proceeds() {
        return started.reason().map(str::to_owned);
    }
    let turn = session
        .input(json!("tidy up"), InputRole::User)
        .await
        .unwrap();
    if !turn.proceeds() {
        return turn.reason().map(str::to_owned);
    }
    let rm = ToolCall::new("c1", "bash", json!({"cmd": "rm -rf /", "token": "s3cret"}));
    let emission = session.pre_tool_call(&rm).await.unwrap();
    assert!(!emission.proceeds());
    emission.reason().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_bundle_serves_logs_decisions_and_reports_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let private = key.serialize_pem();
    let public = dir.path().join("bundle.pub.pem");
    std::fs::write(&public, key.public_key_pem()).unwrap();
    let bundle = dir.path().join("bundle.tar.gz");
    write_bundle(&bundle, &signed(&files("v1"), &private));
    let log = dir.path().join("decisions.jsonl");

    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve", "--bundle"])
        .arg(&bundle)
        .arg("--bundle-verification-key")
        .arg(&public)
        .args(["--bundle-signing-alg", "EdDSA", "--bundle-poll-ms", "50"])
        .arg(format!("--decision-log=file:{}", log.display()))
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .args(["--eval-timeout-ms", "10000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut child);
    let errors = stderr_lines(&mut child);
    let mut served = Running(child);
    line_starting(&lines, "bundle ");
    let metrics = addr_of(&line_starting(&lines, "policy metrics: "));
    let banner = line_starting(&lines, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();

    assert_eq!(
        rm_reason(&endpoint, None).await.as_deref(),
        Some("policy:v1")
    );
    let status: Value = serde_json::from_str(&get(&metrics, "/status")).unwrap();
    assert_eq!(status["bundle"]["active_revision"], "v1", "{status}");
    assert_eq!(status["policies"]["generation"], 1);

    // Tampered: refused, v1 keeps serving, the status says why.
    let mut tampered = signed(&files("v1"), &private);
    tampered.insert(
        "hookwire/versioned/policy.rego".into(),
        policy("v2").into_bytes(),
    );
    write_bundle(&bundle, &tampered);
    let mut read = Vec::new();
    line_with(
        &errors,
        &["bundle refused", "hash does not match"],
        &mut read,
    );
    assert_eq!(
        rm_reason(&endpoint, None).await.as_deref(),
        Some("policy:v1")
    );
    let status: Value = serde_json::from_str(&get(&metrics, "/status")).unwrap();
    assert!(
        status["bundle"]["error"]
            .as_str()
            .unwrap()
            .contains("hash does not match"),
        "{status}"
    );
    assert_eq!(status["bundle"]["active_revision"], "v1");

    write_bundle(&bundle, &signed(&files("v2"), &private));
    line_with(&errors, &["bundle activated", "revision v2"], &mut read);
    assert_eq!(
        rm_reason(&endpoint, None).await.as_deref(),
        Some("policy:v2")
    );
    let text = tokio::task::spawn_blocking(move || scrape_metrics(metrics.as_str()))
        .await
        .unwrap();
    assert_eq!(
        metric_value(&text, "hookwire_policy_generation", &[]),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_policy_bundle_revision",
            &[("revision", "v2")]
        ),
        1.0
    );
    assert!(metric_value(&text, "hookwire_policy_bundle_failures", &[]) >= 1.0);
    assert_eq!(
        metric_value(
            &text,
            "hookwire_policy_decisions_total",
            &[("package", "hookwire.versioned"), ("outcome", "deny")]
        ),
        3.0
    );

    interrupt(&served.0);
    let summary = line_with(
        &errors,
        &["decision log: ", " written, 0 dropped"],
        &mut read,
    );
    assert!(served.0.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("s3cret") && !text.contains("rm -rf") && !text.contains("tidy up"),
        "{text}"
    );
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every decision the service made, the points no package decides at
    // (allowed) included; the summary counts them all.
    assert!(
        summary.contains(&format!("decision log: {} written", entries.len())),
        "{summary}"
    );
    let denied: Vec<&Value> = entries
        .iter()
        .filter(|e| e["point"] == "pre_tool_call")
        .collect();
    assert_eq!(denied.len(), 3, "{text}");
    assert!(entries.iter().all(|e| e["agent"] == "ops-agent"));
    assert_eq!(denied[0]["revision"], "v1");
    assert_eq!(denied[1]["reason"], "policy:v1");
    assert_eq!(denied[2]["revision"], "v2");
    assert_eq!(denied[2]["reason"], "policy:v2");
}

#[tokio::test(flavor = "multi_thread")]
async fn over_tls_a_host_without_a_client_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = Authority::new("policy-server-ca");
    let leaf = server_ca.localhost();
    let hosts_ca = Authority::new("hosts-ca");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cert = write("cert.pem", &leaf.cert_pem);
    let key = write("key.pem", &leaf.key_pem);
    let ca = write("hosts-ca.pem", &hosts_ca.pem);
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve", "examples/policies", "--no-watch"])
        .args(["--addr", "127.0.0.1:0", "--eval-timeout-ms", "10000"])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .arg("--client-ca")
        .arg(&ca)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut child);
    let _served = Running(child);
    let banner = line_starting(&lines, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .expect("an https URL")
        .to_owned();

    let (host_cert, host_key) = hosts_ca.leaf(
        "billing-agent",
        vec![SanType::DnsName(
            "billing-agent.internal".try_into().unwrap(),
        )],
    );
    let tls = |identity: Option<ClientIdentity>| TlsConfig {
        ca_pem: Some(server_ca.pem.clone().into_bytes()),
        domain_name: Some("localhost".into()),
        client_identity: identity,
    };
    let authenticated = tls(Some(ClientIdentity::from_pem(host_cert, host_key)));
    assert_eq!(
        rm_reason(&endpoint, Some(authenticated)).await.as_deref(),
        Some("policy:destructive_command")
    );
    assert_eq!(
        rm_reason(&endpoint, Some(tls(None))).await.as_deref(),
        Some("host_error:interceptor_failed"),
        "no client certificate: refused at the handshake, the host fails closed"
    );
    let stranger = Authority::new("stranger-ca").leaf("x", Vec::new());
    assert_eq!(
        rm_reason(
            &endpoint,
            Some(tls(Some(ClientIdentity::from_pem(stranger.0, stranger.1))))
        )
        .await
        .as_deref(),
        Some("host_error:interceptor_failed")
    );
}

#[test]
fn bad_operator_flags_are_refused_with_a_reason() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(["policy", "serve"])
            .args(args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let o = run(&["examples/policies", "--decision-log", "syslog"]);
    assert!(
        !o.status.success() && stderr(&o).contains("stdout, file:PATH, otlp"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "examples/policies",
        "--decision-log",
        "otlp",
        "--addr",
        "127.0.0.1:0",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("--otlp-endpoint"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--bundle",
        "/nonexistent/bundle.tar.gz",
        "--addr",
        "127.0.0.1:0",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("/nonexistent/bundle.tar.gz"),
        "{}",
        stderr(&o)
    );
    let o = run(&["examples/policies", "--client-ca", "ca.pem"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--tls-cert"),
        "{}",
        stderr(&o)
    );
    let o = run(&["examples/policies", "--bundle", "b.tar.gz"]);
    assert!(!o.status.success(), "a directory and a bundle conflict");
}

mod otlp {
    //! The decision log's `otlp` sink against a collector on loopback.

    use std::sync::{Arc, Mutex};

    use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
        LogsService, LogsServiceServer,
    };
    use opentelemetry_proto::tonic::collector::logs::v1::{
        ExportLogsServiceRequest, ExportLogsServiceResponse,
    };
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use std::process::{Command, Stdio};
    use tonic::{Request, Response, Status};

    use super::rm_reason;
    use crate::gateway::{Running, line_starting, lines_of};
    use crate::operable::interrupt;

    #[derive(Clone, Default)]
    struct Collector(Arc<Mutex<Vec<ExportLogsServiceRequest>>>);

    #[tonic::async_trait]
    impl LogsService for Collector {
        async fn export(
            &self,
            request: Request<ExportLogsServiceRequest>,
        ) -> Result<Response<ExportLogsServiceResponse>, Status> {
            self.0.lock().unwrap().push(request.into_inner());
            Ok(Response::new(ExportLogsServiceResponse::default()))
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn decisions_go_to_the_collector_as_log_records_without_payload() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let collector = Collector::default();
        let router = tonic::transport::Server::builder()
            .add_service(LogsServiceServer::new(collector.clone()));
        tokio::spawn(
            router.serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );

        let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(["policy", "serve", "examples/policies", "--no-watch"])
            .args(["--addr", "127.0.0.1:0", "--eval-timeout-ms", "10000"])
            .args(["--decision-log", "otlp", "--otlp-endpoint", &url])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run hookwire policy serve");
        let lines = lines_of(&mut child);
        let mut served = Running(child);
        let banner = line_starting(&lines, "policy serving ");
        let endpoint = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap()
            .to_owned();
        assert_eq!(
            rm_reason(&endpoint, None).await.as_deref(),
            Some("policy:destructive_command")
        );
        interrupt(&served.0);
        // The command flushes its OTLP export before it exits.
        let exit = tokio::task::spawn_blocking(move || served.0.wait().unwrap())
            .await
            .unwrap();
        assert!(exit.success(), "{exit:?}");

        let received = collector.0.lock().unwrap();
        let records: Vec<_> = received
            .iter()
            .flat_map(|r| &r.resource_logs)
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| &s.log_records)
            .filter(|l| l.event_name == "hookwire.policy_decision")
            .collect();
        let bodies: Vec<serde_json::Value> = records
            .iter()
            .filter_map(|l| match l.body.as_ref().and_then(|b| b.value.as_ref()) {
                Some(Any::StringValue(text)) => serde_json::from_str(text).ok(),
                _ => None,
            })
            .collect();
        let denied = bodies
            .iter()
            .find(|b| b["point"] == "pre_tool_call")
            .unwrap_or_else(|| panic!("no pre_tool_call decision in {bodies:?}"));
        assert_eq!(denied["decision"], "deny");
        assert_eq!(denied["reason"], "policy:destructive_command");
        assert_eq!(denied["agent"], "ops-agent");
        let all = format!("{received:?}");
        assert!(!all.contains("rm -rf") && !all.contains("s3cret"));
        let point = records
            .iter()
            .flat_map(|l| &l.attributes)
            .find(|kv| kv.key == "hookwire.point")
            .expect("the entry's scalars as attributes");
        assert!(point.value.is_some());
    }
}
