//! Interceptor services on a Unix socket (`unix:/path` endpoints): a host
//! declared with one reaches the service over the `Multiplex` stream and
//! over unary calls alike; the SDK's server binds an owner-only socket
//! (0600, refused in a directory others can write to, removed on
//! shutdown); and a socket nobody serves is the emission's fail-closed
//! deny with a record.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::sync::atomic::Ordering;
use std::time::Duration;

use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{Host, InputRole, RecordLog, ShutdownReason, ToolCall};
use hookwire_server::prelude::*;
use serde_json::{Value, json};
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;

use crate::multiplex::counted;

/// Denies `rm`, allows every other tool call.
struct NoRm;

#[async_trait]
impl Interceptor for NoRm {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("no-rm", "1.0.0")
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        let name = ctx
            .get("tool_call")
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str);
        if name == Some("rm") {
            Verdict::deny("policy:no_rm")
        } else {
            Verdict::allow()
        }
    }
}

/// A directory only this user can write to, as the socket needs.
fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// A host declared with one `hookwire.grpc` binding at `endpoint`.
fn declared(endpoint: &str) -> (Host, RecordLog) {
    let doc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                      "timeout_ms": 5000,
                      "config": {"endpoint": endpoint}}],
    });
    let records = RecordLog::new();
    let host = Host::declared("agent", "hookwire")
        .record_sink(records.clone())
        .load(
            &Declaration::from_value(&doc).unwrap(),
            &Registry::standard(),
        )
        .unwrap();
    (host, records)
}

/// Two tool calls (`ls`, then `rm`) in one session; the verdicts' reasons
/// at `pre_tool_call`.
async fn two_calls(host: &Host, records: &RecordLog) -> Vec<Value> {
    let s = host.session("s").unwrap();
    s.start(["ls", "rm"]).await.unwrap();
    s.input(json!("tidy up"), InputRole::User).await.unwrap();
    for (id, tool) in [("c1", "ls"), ("c2", "rm")] {
        let _ = s
            .pre_tool_call(&ToolCall::new(id, tool, json!({})))
            .await
            .unwrap();
    }
    s.shutdown(ShutdownReason::Completed).await.unwrap();
    let session = records.session("s");
    session.iter().for_each(hookwire_testkit::check_record);
    session
        .iter()
        .filter(|r| r.interception_point.as_str() == "pre_tool_call")
        .map(|r| json!([r.verdict.decision.as_str(), r.verdict.reason]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_server_serves_an_owner_only_socket_a_declared_host_reaches() {
    let dir = private_dir();
    let path = dir.path().join("policy.sock");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn({
        let path = path.clone();
        async move {
            Server::builder()
                .service(NoRm)
                .serve_unix_with_shutdown(&path, async move {
                    let _ = stopped.await;
                })
                .await
        }
    });
    // The socket is in place once the server answers on it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::UnixStream::connect(&path).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "never served");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    let (host, records) = declared(&format!("unix:{}", path.display()));
    assert_eq!(
        two_calls(&host, &records).await,
        [json!(["allow", null]), json!(["deny", "policy:no_rm"])]
    );
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
    assert!(!path.exists(), "the socket is removed on shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_endpoint_carries_the_stream_and_unary_calls() {
    for unary_only in [false, true] {
        let dir = private_dir();
        let path = dir.path().join("counted.sock");
        let (service, _) = counted(unary_only);
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn({
            let service = service.clone();
            tonic::transport::Server::builder()
                .add_service(hookwire::pb::interceptor_server::InterceptorServer::new(
                    service,
                ))
                .serve_with_incoming(UnixListenerStream::new(listener))
        });
        let (host, records) = declared(&format!("unix:{}", path.display()));
        let reasons = two_calls(&host, &records).await;
        assert_eq!(reasons, [json!(["allow", null]), json!(["allow", null])]);
        let (unary, streams) = (
            service.unary.load(Ordering::SeqCst),
            service.streams.load(Ordering::SeqCst),
        );
        if unary_only {
            assert!(
                unary >= 2 && streams == 0,
                "unary {unary}, streams {streams}"
            );
        } else {
            assert!(
                streams >= 1 && unary == 0,
                "unary {unary}, streams {streams}"
            );
        }
        server.abort();
    }
}

#[tokio::test]
async fn a_socket_in_a_directory_others_can_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("policy.sock");
    let refused = Server::builder()
        .service(NoRm)
        .serve_unix_with_shutdown(&path, std::future::pending())
        .await
        .unwrap_err();
    let text = refused.to_string();
    assert!(text.contains("group- or world-writable"), "{text}");
    assert!(!path.exists());
}

#[tokio::test]
async fn a_socket_nobody_serves_fails_closed_with_a_record() {
    let dir = private_dir();
    let (host, records) = declared(&format!("unix:{}", dir.path().join("gone.sock").display()));
    let s = host.session("s").unwrap();
    let started = s.start(["ls"]).await.unwrap();
    assert!(started.is_blocked());
    let session = records.session("s");
    session.iter().for_each(hookwire_testkit::check_record);
    let startup = &session[0];
    assert_eq!(startup.interception_point.as_str(), "agent_startup");
    assert_eq!(startup.verdict.decision.as_str(), "deny");
    assert_eq!(
        startup.verdict.reason.as_deref(),
        Some("host_error:interceptor_failed")
    );
}
