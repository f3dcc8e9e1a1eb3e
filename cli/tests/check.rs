//! `hookwire check` against real interceptor services on 127.0.0.1:0: the
//! built binary is spawned as an operator would run it.

use std::path::PathBuf;
use std::process::{Command, Output};

use hookwire::InterceptionPoint;
use hookwire_testkit::Scripted;
use serde_json::json;

const TOKEN: &str = "Bearer t0ken-from-env";

fn write(name: &str, doc: &serde_json::Value) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("hookwire-cli-{}-{name}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    path
}

fn check(path: &PathBuf, token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookwire"));
    cmd.arg("check").arg(path).args(["--timeout-ms", "3000"]);
    match token {
        Some(t) => cmd.env("POLICY_TOKEN", t),
        None => cmd.env_remove("POLICY_TOKEN"),
    };
    cmd.output().expect("run hookwire")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// A service on 127.0.0.1:0 without the `Multiplex` stream in its
/// manifest (so hosts call it unary).
struct UnaryOnly {
    endpoint: String,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
}

impl UnaryOnly {
    async fn serve(service: Scripted) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let service = hookwire_server::GrpcAdapter::new(service)
            .unary_only()
            .into_server();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let served = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            endpoint,
            stop,
            served,
        }
    }

    async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.served.await;
    }
}

fn document(policy: &str, audit: &str) -> serde_json::Value {
    json!({
        "declaration": "agent-hooks-declaration/1.0",
        "configuration": {"timeouts": {"interceptor_ms": 800}},
        "bindings": [
            {"id": "policy", "kind": "hookwire.grpc", "at": ["pre_tool_call"],
             "config": {"endpoint": policy, "metadata": {"authorization": {"env": "POLICY_TOKEN"}}}},
            {"id": "audit", "kind": "hookwire.grpc", "config": {"endpoint": audit}},
        ],
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn check_passes_with_live_services_and_the_token_from_the_environment() {
    let policy = Scripted::allow_all("policy")
        .declaring(&[InterceptionPoint::PreToolCall])
        .serve_gated(TOKEN)
        .await;
    let audit = UnaryOnly::serve(Scripted::allow_all("audit")).await;
    let (policy_url, audit_url) = (policy.endpoint(), audit.endpoint.clone());
    let path = write("ok", &document(&policy_url, &audit_url));

    let out = check(&path, Some(TOKEN));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("health SERVING"), "{stdout}");
    assert!(
        stdout.contains("Describe: policy 1.0.0 (handles pre_tool_call)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pre_tool_call    policy -> audit"),
        "{stdout}"
    );
    assert!(stdout.contains("input            audit"), "{stdout}");
    // Which RPCs each binding's calls take.
    let policy_at = stdout.find("0. policy").unwrap();
    let audit_at = stdout.find("1. audit").unwrap();
    assert!(
        stdout[policy_at..audit_at].contains("transport: Multiplex"),
        "{stdout}"
    );
    assert!(
        stdout[audit_at..].contains("transport: unary (one call per emission)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok: 2 bindings, 2 endpoints serving"),
        "{stdout}"
    );
    assert!(!stdout.contains("t0ken") && !stderr.contains("t0ken"));

    // A wrong token: the gated service refuses health and Describe.
    let out = check(&path, Some("Bearer wrong"));
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stdout.contains("Unauthenticated"), "{stdout}");
    // Both of its probes are findings, each printed.
    assert_eq!(stdout.matches("finding:").count(), 2, "{stdout}");
    assert!(stderr.contains("check: 2 finding(s)"), "{stderr}");

    // The variable missing: refused at load, naming it, before any call.
    let out = check(&path, None);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("declaration_error:binding_rejected"),
        "{stderr}"
    );
    assert!(stderr.contains("POLICY_TOKEN"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");

    // A service that went away.
    policy.shutdown().await.unwrap();
    audit.shutdown().await;
    let out = check(&path, Some(TOKEN));
    assert!(!out.status.success());
    let (stdout, stderr) = text(&out);
    // Every endpoint probed and every finding printed, not only the first.
    assert!(stdout.contains(&policy_url), "{stdout}");
    assert!(stdout.contains(&audit_url), "{stdout}");
    assert_eq!(stdout.matches("finding:").count(), 4, "{stdout}");
    assert!(stderr.contains("check: 4 finding(s)"), "{stderr}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn check_refuses_a_document_and_never_echoes_its_config() {
    let secret = "Bearer inline-s3cret";
    let path = write(
        "inline",
        &json!({
            "declaration": "agent-hooks-declaration/1.0",
            "bindings": [{"id": "p", "kind": "hookwire.grpc",
                          "config": {"endpoint": "http://127.0.0.1:9", "metadata": {"authorization": secret}}}],
        }),
    );
    let out = check(&path, None);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("declaration_error:binding_rejected"),
        "{stderr}"
    );
    assert!(stderr.contains("/bindings/0"), "{stderr}");
    assert!(!stderr.contains(secret) && !stdout.contains(secret));

    let path2 = write(
        "version",
        &json!({"declaration": "agent-hooks-declaration/0.1", "bindings": []}),
    );
    let out = check(&path2, None);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("declaration_error:version_unsupported"),
        "{stderr}"
    );
    assert!(
        stderr.contains("accepted versions: agent-hooks-declaration/1.0"),
        "{stderr}"
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&path2).unwrap();
}

#[test]
fn the_shipped_example_declaration_loads() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/declarations/demo.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["check", "--timeout-ms", "200"])
        .arg(&path)
        .output()
        .unwrap();
    let (stdout, _) = text(&out);
    // Whether or not the demo services run here, the document itself loads.
    assert!(
        stdout.contains("agent-hooks-declaration/1.0 loads"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pre_tool_call    policy -> passthrough"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_shows_each_description_and_probes_the_approval_services() {
    use hookwire_approvals::{Access, AccessConfig, ApprovalServer, PrincipalConfig};
    let policies = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/policies");
    let (_policy, endpoint) = crate::gateway::policy_serve(&policies);
    let host_token = hookwire_approvals::auth::new_token().unwrap();
    let access = Access::new(
        &AccessConfig::default().host(PrincipalConfig::token("checking-host", &host_token)),
    )
    .unwrap();
    let approvals = ApprovalServer::new(access).spawn_local().await.unwrap();
    let path = write(
        "approvals",
        &json!({
            "declaration": "agent-hooks-declaration/1.0",
            "configuration": {"approval": {"resolver": "approval-stream"}},
            "bindings": [{"id": "rego", "kind": "hookwire.grpc", "config": {"endpoint": endpoint}}],
        }),
    );
    let token_file = path.with_extension("token");
    let run = |token: &str, endpoints: &[String]| {
        std::fs::write(&token_file, token).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookwire"));
        cmd.arg("check").arg(&path).args(["--timeout-ms", "3000"]);
        for e in endpoints {
            cmd.args(["--approval-endpoint", e]);
        }
        cmd.arg("--approval-token-file").arg(&token_file);
        cmd.output().expect("run hookwire check")
    };

    // The service's Describe description (where policy serve reports its
    // reloads) is shown, and the approval service takes the host's stream.
    let out = run(&host_token, &[approvals.endpoint()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("description: Rego and Cedar policies from"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{}: stream ready", approvals.endpoint())),
        "{stdout}"
    );

    // A refused token and a service that is not there: two findings, both
    // printed, and the token never.
    let down = "http://127.0.0.1:9".to_owned();
    let out = run("not-the-token", &[approvals.endpoint(), down.clone()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("{}: finding: no stream", approvals.endpoint())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{down}: finding: no stream")),
        "{stdout}"
    );
    assert!(stderr.contains("check: 2 finding(s)"), "{stderr}");
    assert!(!stdout.contains("not-the-token") && !stderr.contains("not-the-token"));
    approvals.shutdown().await.unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&token_file).unwrap();
}

#[test]
fn check_shows_a_rejected_policy_reload_in_the_services_description() {
    use crate::gateway::{Running, line_starting, lines_of};
    let dir = tempfile::tempdir().unwrap();
    let policies = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/policies");
    for entry in std::fs::read_dir(&policies).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve"])
        .arg(dir.path())
        .args(["--addr", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut child);
    let errors = crate::operable::stderr_lines(&mut child);
    let _policy = Running(child);
    let banner = line_starting(&lines, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    std::fs::write(
        dir.path().join("broken.rego"),
        "package hookwire.broken\n\ndeny contains",
    )
    .unwrap();
    loop {
        let line = errors
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("policy serve reports the rejected reload");
        if line.contains("policy reload rejected") {
            break;
        }
    }
    let path = write(
        "reload",
        &json!({
            "declaration": "agent-hooks-declaration/1.0",
            "bindings": [{"id": "rego", "kind": "hookwire.grpc", "config": {"endpoint": endpoint}}],
        }),
    );
    let out = check(&path, None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // One decision package per policy file of the library (its tests aside).
    let packages = std::fs::read_dir(&policies)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".rego") && !n.ends_with("_test.rego"))
        .count();
    assert!(
        stdout.contains(&format!(
            "({packages} decision packages, generation 1); last reload rejected:"
        )),
        "{stdout}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_point_no_binding_covers_is_a_finding_in_enforce_mode_only() {
    // Bound at two points only: the other six deny every emission.
    let doc = |mode: &str| {
        json!({
            "declaration": "agent-hooks-declaration/1.0",
            "configuration": {"mode": mode},
            "bindings": [{"id": "open", "kind": "hookwire.allow",
                          "at": ["agent_startup", "agent_shutdown"]}],
        })
    };
    let path = write("uncovered", &doc("enforce"));
    let out = check(&path, None);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(
        stdout
            .matches("finding: no interceptor: every emission denies host_error:no_interceptor")
            .count(),
        6,
        "{stdout}"
    );
    assert!(stdout.contains("agent_startup    open"), "{stdout}");
    assert!(stderr.contains("check: 6 finding(s)"), "{stderr}");
    assert!(!stdout.contains("\nok: "), "{stdout}");

    // In evaluate_only mode nothing is enforced: a note, and the check passes.
    std::fs::write(&path, doc("evaluate_only").to_string()).unwrap();
    let out = check(&path, None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout
            .matches("(no interceptor: recorded as host_error:no_interceptor, not enforced)")
            .count(),
        6,
        "{stdout}"
    );
    std::fs::remove_file(&path).unwrap();
}
