//! `hookwire check` against services that were not built with
//! hookwire-server: one that serves no `grpc.health.v1` at all (a note,
//! not a failure: `Describe` is the contract), and the Python example
//! written from `proto/` alone, which serves health (`SERVING`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire_server::GrpcAdapter;
use hookwire_testkit::{Scripted, workspace_root};
use serde_json::json;
use tokio::net::TcpListener;

fn check_endpoint(name: &str, endpoint: &str) -> (Output, String, String) {
    let path =
        std::env::temp_dir().join(format!("hookwire-cli-{}-{name}.json", std::process::id()));
    let doc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": name, "kind": "hookwire.grpc", "config": {"endpoint": endpoint}}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["check", "--timeout-ms", "5000"])
        .arg(&path)
        .output()
        .expect("run hookwire");
    std::fs::remove_file(&path).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_without_health_passes_with_a_note() {
    // Only hookwire.v1.Interceptor on the router: health answers UNIMPLEMENTED.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(GrpcAdapter::new(Scripted::allow_all("bare")).into_server())
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async move {
                    let _ = stopped.await;
                },
            ),
    );

    let (out, stdout, stderr) =
        tokio::task::spawn_blocking(move || check_endpoint("bare", &format!("http://{addr}")))
            .await
            .unwrap();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("note: no grpc.health.v1 service (UNIMPLEMENTED)"),
        "{stdout}"
    );
    assert!(stdout.contains("Describe: bare 1.0.0"), "{stdout}");
    assert!(
        stdout.contains("ok: 1 bindings, 1 endpoints serving"),
        "{stdout}"
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

/// The Python example on 127.0.0.1:0, killed on drop.
struct Python(Child);

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_python_example_serves_health_and_passes() {
    let root = workspace_root();
    let python: PathBuf = root.join(".cache/venv/bin/python");
    assert!(
        root.join(".cache/venv/.hookwire-sdk-python-sha256")
            .exists()
            && python.exists(),
        "the Python venv and the hookwire package are missing: run scripts/setup.sh before cargo test"
    );
    let mut child = Command::new(python)
        .arg(root.join("examples/python/policy.py"))
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the Python example");
    let stdout = child.stdout.take().unwrap();
    let service = Python(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(port) = line.strip_prefix("PORT ") {
                let _ = tx.send(port.trim().parse::<u16>().unwrap_or(0));
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the Python example printed its PORT line");

    let (out, stdout, stderr) = check_endpoint("python", &format!("http://127.0.0.1:{port}"));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("health SERVING"), "{stdout}");
    assert!(stdout.contains("Describe: python-policy"), "{stdout}");
    drop(service);
}
