//! The policies bound inside the host (`hookwire.rego`, `hookwire.cedar`):
//! the same verdicts and records as the same directory served over gRPC,
//! the evaluation bound held without holding the host's thread, and the
//! kinds' refusals at load.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hookwire::InterceptionRecord;
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{Host, InputRole, ToolCall, ToolResult};
use hookwire_policy::{Policies, PolicyOptions, PolicyService, embedded};
use hookwire_server::spawn_local;
use serde_json::{Value, json};

/// A decision's bound in these tests: well above what the example
/// policies take on a loaded machine, so a verdict never depends on load.
const EVAL_LIMIT_MS: u64 = 2000;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/policies")
}

fn registry() -> Registry {
    embedded::register(Registry::standard()).expect("kinds register")
}

fn document(policy: Value) -> Value {
    json!({
        "declaration": "agent-hooks-declaration/1.0",
        "configuration": {"mode": "enforce", "timeouts": {"interceptor_ms": 5000}},
        "bindings": [policy, {"id": "passthrough", "kind": "hookwire.allow"}],
    })
}

fn host_of(document: &Value) -> Host {
    let declaration = Declaration::from_value(document).expect("declaration");
    Host::declared("agent", "hookwire")
        .load(&declaration, &registry())
        .expect("host loads")
}

/// One session through every kind of verdict the example library gives:
/// a permitted input, a destructive call denied, a permitted call whose
/// result carries a cloud key (withheld), an answer with an email address
/// (rewritten).
async fn run_session(host: &Host) -> Vec<InterceptionRecord> {
    let s = host.session("s-1").expect("session");
    s.start(["bash", "read_file"]).await.expect("start");
    s.input(json!("clean up the build"), InputRole::User)
        .await
        .expect("input");
    let destructive = ToolCall::new("call-1", "bash", json!({"cmd": "rm -rf /", "timeout_s": 5}));
    let denied = s.pre_tool_call(&destructive).await.expect("pre_tool_call");
    assert!(!denied.proceeds());
    let read = ToolCall::new("call-2", "read_file", json!({"path": "notes.txt"}));
    assert!(
        s.pre_tool_call(&read)
            .await
            .expect("pre_tool_call")
            .proceeds()
    );
    let leaked = ToolResult {
        value: json!("key: AKIAABCDEFGHIJKLMNOP"),
        is_error: false,
    };
    s.post_tool_call(&read, &leaked)
        .await
        .expect("post_tool_call");
    s.output(json!("write to ops@example.com when done"))
        .await
        .expect("output");
    s.shutdown(hookwire_client::ShutdownReason::Completed)
        .await
        .expect("shutdown");
    host.record_buffer().expect("records").session("s-1")
}

/// A record without what differs between any two runs: the context's
/// clock, and the identities computed over it.
fn comparable(record: &InterceptionRecord) -> Value {
    let mut json = record.to_json();
    let members = json.as_object_mut().expect("record object");
    for varying in ["timestamp", "input_identity", "enforced_identity"] {
        members.remove(varying);
    }
    json
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_and_served_policies_give_identical_verdicts_and_records() {
    let embedded_host = host_of(&document(json!({
        "id": "policy", "kind": embedded::REGO_KIND,
        "config": {"path": examples().to_string_lossy(), "eval_limit_ms": EVAL_LIMIT_MS},
        "at": ["input", "pre_tool_call", "post_tool_call", "output"],
    })));
    let options = PolicyOptions {
        eval_limit: Duration::from_millis(EVAL_LIMIT_MS),
        ..PolicyOptions::default()
    };
    let served = spawn_local(PolicyService::new(
        Policies::load(examples(), options).expect("load"),
    ))
    .await
    .expect("serve");
    let served_host = host_of(&document(json!({
        "id": "policy", "kind": "hookwire.grpc",
        "config": {"endpoint": served.endpoint()},
        "at": ["input", "pre_tool_call", "post_tool_call", "output"],
    })));

    let in_process = run_session(&embedded_host).await;
    let over_the_wire = run_session(&served_host).await;
    in_process.iter().for_each(hookwire_testkit::check_record);
    let reasons: Vec<_> = in_process
        .iter()
        .map(|r| (r.interception_point.as_str(), r.verdict.reason.clone()))
        .collect();
    assert!(
        reasons.contains(&("pre_tool_call", Some("policy:destructive_command".into()))),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&(
            "post_tool_call",
            Some("policy:secret_in_tool_result".into())
        )),
        "{reasons:?}"
    );
    assert_eq!(in_process.len(), over_the_wire.len());
    for (a, b) in in_process.iter().zip(&over_the_wire) {
        assert_eq!(comparable(a), comparable(b));
    }
    served.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "current_thread")]
async fn a_runaway_policy_in_process_fails_closed_without_holding_the_hosts_thread() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("runaway.rego"),
        "package hookwire.runaway\nimport rego.v1\npoints := {\"pre_tool_call\"}\n\
         deny contains \"policy:never\" if {\n  some i in numbers.range(1, 5000)\n  \
         some j in numbers.range(1, 5000)\n  i * j == -1\n}\n",
    )
    .expect("write policy");
    let host = host_of(&document(json!({
        "id": "policy", "kind": embedded::REGO_KIND,
        "config": {"path": dir.path().to_string_lossy(), "eval_limit_ms": EVAL_LIMIT_MS},
        "at": ["pre_tool_call"],
    })));
    let s = host.session("s-1").expect("session");
    s.start(["bash"]).await.expect("start");
    s.input(json!("go"), InputRole::User).await.expect("input");

    // One thread runs the test and the emission. Had the decision run on
    // that thread, the emission would have ended (at its bound, seconds
    // later) before this task could run again; on the evaluation workers
    // it is still running when this task wakes a millisecond later.
    let s = Arc::new(s);
    let emitting = {
        let s = Arc::clone(&s);
        tokio::spawn(async move {
            let call = ToolCall::new("call-1", "bash", json!({"cmd": "ls"}));
            s.pre_tool_call(&call).await
        })
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(
        !emitting.is_finished(),
        "the host's thread was held until the decision's bound"
    );
    let emission = tokio::time::timeout(Duration::from_secs(30), emitting)
        .await
        .expect("the decision ends at its bound, not at the test's")
        .expect("the emitting task")
        .expect("pre_tool_call");
    assert!(!emission.proceeds());
    assert_eq!(emission.reason(), Some("host_error:interceptor_failed"));
}

#[test]
fn the_kinds_refuse_what_they_cannot_decide_with() {
    let refusal = |config: Value, kind: &str| {
        let config_text = config.to_string();
        let d = Declaration::from_value(&document(json!({
            "id": "policy", "kind": kind, "config": config,
        })))
        .expect("declaration parses");
        let Err(err) = Host::declared("agent", "hookwire").load(&d, &registry()) else {
            panic!("the declaration loaded: {config_text}");
        };
        err.to_string()
    };
    // A Rego directory bound as Cedar.
    let e = refusal(
        json!({"path": examples().to_string_lossy()}),
        embedded::CEDAR_KIND,
    );
    assert!(e.contains("no .cedar file"), "{e}");
    // No such directory; a value never quoted.
    let e = refusal(
        json!({"path": "/nonexistent/secret-dir"}),
        embedded::REGO_KIND,
    );
    assert!(
        e.contains("config.path") && !e.contains("secret-dir"),
        "{e}"
    );
    // A bound the binding's own timeout would pre-empt.
    let e = refusal(
        json!({"path": examples().to_string_lossy(), "eval_limit_ms": 6000}),
        embedded::REGO_KIND,
    );
    assert!(e.contains("below the binding's timeout"), "{e}");
    // A module that does not compile.
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("bad.rego"),
        "package hookwire.bad\nthis is not rego\n",
    )
    .expect("write");
    let e = refusal(
        json!({"path": dir.path().to_string_lossy()}),
        embedded::REGO_KIND,
    );
    assert!(e.contains("does not load as a policy set"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_process_declaration_governs_every_point_with_the_directory() {
    let mut document = embedded::one_process_declaration(&examples());
    document["bindings"][0]["config"]["eval_limit_ms"] = json!(EVAL_LIMIT_MS);
    let host = host_of(&document);
    let records = run_session(&host).await;
    let points: Vec<_> = records
        .iter()
        .map(|r| r.interception_point.as_str())
        .collect();
    assert_eq!(points.first(), Some(&"agent_startup"));
    assert_eq!(points.last(), Some(&"agent_shutdown"));
    assert!(
        records
            .iter()
            .all(|r| r.verdict.reason.as_deref() != Some("host_error:no_interceptor")),
        "a point no package decides at allows through the passthrough"
    );
    assert!(
        records
            .iter()
            .any(|r| r.verdict.reason.as_deref() == Some("policy:destructive_command"))
    );
}
