//! The policy service on the wire: real servers on `127.0.0.1:0`, a real
//! host, policy files in temporary directories. Hot reload under load, a
//! rejected reload, a runaway policy and an ill-formed decision, each seen
//! from the host.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookwire::{Decision, HostError, InterceptionPoint, Interceptor};
use hookwire_client::{Host, InterceptorBinding, RecordLog};
use hookwire_policy::{Policies, PolicyOptions, PolicyService, ReloadEvent};
use hookwire_server::spawn_local;

fn versioned(version: &str) -> String {
    format!(
        "package hookwire.versioned\nimport rego.v1\npoints := {{\"pre_tool_call\"}}\ndeny contains \"policy:{version}\" if contains(input.tool_call.args.cmd, \"rm\")\n"
    )
}

/// Writes `text` to `dir/name` atomically (a hidden temporary file, then a
/// rename), as editors and deploy tools do.
fn replace(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, text).expect("write");
    fs::rename(&tmp, dir.join(name)).expect("rename");
}

fn host_for(endpoint: String, timeout: Duration) -> (Host, RecordLog) {
    let records = RecordLog::new();
    let host = Host::builder("test-agent", "hookwire")
        .bind(InterceptorBinding::remote("policy", endpoint).timeout(timeout))
        .record_sink(records.clone())
        .build()
        .expect("host");
    (host, records)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reload_under_load_swaps_without_failing_an_emission() {
    let dir = tempfile::tempdir().unwrap();
    replace(dir.path(), "policy.rego", &versioned("v1"));
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    let (events_tx, events) = mpsc::channel();
    let _watcher = policies
        .watch(move |e| {
            let _ = events_tx.send(e.clone());
        })
        .unwrap();
    let server = spawn_local(PolicyService::new(Arc::clone(&policies)))
        .await
        .unwrap();
    let (host, _records) = host_for(server.endpoint(), Duration::from_secs(2));
    let session = Arc::new(host.session("reload").unwrap());
    session.start(["bash"]).await.unwrap();
    session
        .input(serde_json::json!("go"), hookwire_client::InputRole::User)
        .await
        .unwrap();

    // Two emitters run throughout the reload.
    let stop = Arc::new(AtomicBool::new(false));
    let mut emitters = Vec::new();
    for _ in 0..2 {
        let session = Arc::clone(&session);
        let stop = Arc::clone(&stop);
        emitters.push(tokio::spawn(async move {
            let mut reasons = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let e = session.pre_tool_call(&bash("rm -rf /tmp/x")).await.unwrap();
                reasons.push(e.reason().map(str::to_owned));
            }
            reasons
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    replace(dir.path(), "policy.rego", &versioned("v2"));
    let event = tokio::task::spawn_blocking(move || events.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("a reload event");
    assert_eq!(
        event,
        ReloadEvent::Reloaded {
            generation: 2,
            packages: 1
        }
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);

    for emitter in emitters {
        let reasons = emitter.await.unwrap();
        assert!(reasons.len() > 5, "the emitter ran: {}", reasons.len());
        for r in &reasons {
            assert!(
                matches!(r.as_deref(), Some("policy:v1" | "policy:v2")),
                "every emission got a policy decision, none failed: {r:?}"
            );
        }
        // Each emitter is sequential: once it saw v2, it never sees v1 again.
        let first_v2 = reasons
            .iter()
            .position(|r| r.as_deref() == Some("policy:v2"))
            .expect("the new policy took effect");
        assert!(
            reasons[first_v2..]
                .iter()
                .all(|r| r.as_deref() == Some("policy:v2"))
        );
        assert_eq!(reasons[0].as_deref(), Some("policy:v1"));
    }
    assert_eq!(policies.status().generation, 2);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_broken_policy_keeps_the_previous_set_serving() {
    let dir = tempfile::tempdir().unwrap();
    replace(dir.path(), "policy.rego", &versioned("v1"));
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    let (events_tx, events) = mpsc::channel();
    let _watcher = policies
        .watch(move |e| {
            let _ = events_tx.send(e.clone());
        })
        .unwrap();
    let service = PolicyService::new(Arc::clone(&policies));
    let server = spawn_local(service.clone()).await.unwrap();
    let (host, _records) = host_for(server.endpoint(), Duration::from_secs(2));
    let session = host.session("broken").unwrap();
    session.start(["bash"]).await.unwrap();
    session
        .input(serde_json::json!("go"), hookwire_client::InputRole::User)
        .await
        .unwrap();

    replace(
        dir.path(),
        "policy.rego",
        "package hookwire.versioned\ndeny contains if {\n",
    );
    let event = tokio::task::spawn_blocking(move || {
        let e = events.recv_timeout(Duration::from_secs(10));
        (e, events)
    })
    .await
    .unwrap();
    let (event, events) = event;
    match event.expect("a reload event") {
        ReloadEvent::Rejected { serving, error } => {
            assert_eq!(serving, 1);
            assert!(error.contains("policy.rego"), "{error}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    let status = policies.status();
    assert_eq!((status.generation, status.rejected), (1, 1));
    assert!(status.last_error.is_some());
    assert!(
        service
            .manifest()
            .description
            .contains("last reload rejected"),
        "Describe reports the rejection"
    );
    let e = session.pre_tool_call(&bash("rm -rf /")).await.unwrap();
    assert_eq!(e.reason(), Some("policy:v1"), "the old set still decides");

    // Fixing the file brings the new version in.
    replace(dir.path(), "policy.rego", &versioned("v3"));
    let event = tokio::task::spawn_blocking(move || events.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(
        event.unwrap(),
        ReloadEvent::Reloaded {
            generation: 2,
            packages: 1
        }
    );
    assert!(policies.status().last_error.is_none());
    let e = session.pre_tool_call(&bash("rm -rf /")).await.unwrap();
    assert_eq!(e.reason(), Some("policy:v3"));
    server.shutdown().await.unwrap();
}

/// Serves a one-file policy set and returns the host's verdict for one
/// `pre_tool_call`, plus how long the emission took.
pub(crate) async fn one_decision(
    policy: &str,
    options: PolicyOptions,
) -> (hookwire::Verdict, Duration) {
    let dir = tempfile::tempdir().unwrap();
    replace(dir.path(), "policy.rego", policy);
    let policies = Policies::load(dir.path(), options).unwrap();
    let server = spawn_local(PolicyService::new(policies)).await.unwrap();
    let (host, records) = host_for(server.endpoint(), Duration::from_secs(3));
    let session = host.session("one").unwrap();
    session.start(["bash"]).await.unwrap();
    session
        .input(serde_json::json!("go"), hookwire_client::InputRole::User)
        .await
        .unwrap();
    let started = Instant::now();
    let e = session.pre_tool_call(&bash("ls")).await.unwrap();
    let took = started.elapsed();
    let record = records
        .session("one")
        .into_iter()
        .find(|r| r.interception_point == InterceptionPoint::PreToolCall)
        .expect("a record of the emission");
    assert_eq!(record.verdict.decision, e.verdict().decision);
    server.shutdown().await.unwrap();
    (e.verdict().clone(), took)
}

#[tokio::test]
async fn a_runaway_policy_is_cut_off_and_the_host_denies() {
    let runaway = "package hookwire.runaway\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains \"policy:never\" if { count([x | some a in numbers.range(1, 100000); some b in numbers.range(1, 100000); x := a * b]) < 0 }\n";
    let (verdict, took) = one_decision(
        runaway,
        PolicyOptions {
            eval_limit: Duration::from_millis(100),
            ..PolicyOptions::default()
        },
    )
    .await;
    assert_eq!(verdict.decision, Decision::Deny);
    assert!(
        matches!(
            verdict.host_error_reason(),
            Some(HostError::InterceptorFailed | HostError::InterceptorTimeout)
        ),
        "{:?}",
        verdict.reason
    );
    assert!(
        took < Duration::from_secs(2),
        "cut off by the bound, not the host: {took:?}"
    );
}

#[tokio::test]
async fn an_ill_formed_decision_reaches_the_host_as_a_fail_closed_deny() {
    for body in [
        "deny contains 42",
        "transform contains {\"path\": \"$target.cmd\"}",
        "warn contains {\"reason\": \"host_error:verdict_invalid\"}",
    ] {
        let policy = format!(
            "package hookwire.ill\nimport rego.v1\npoints := {{\"pre_tool_call\"}}\n{body}\n"
        );
        let (verdict, _) = one_decision(&policy, PolicyOptions::default()).await;
        assert_eq!(verdict.decision, Decision::Deny, "{body}");
        assert_eq!(
            verdict.host_error_reason(),
            Some(HostError::InterceptorFailed),
            "{body}: {:?}",
            verdict.reason
        );
    }
}

#[tokio::test]
async fn describe_lists_the_points_the_policies_decide_at() {
    let dir = tempfile::tempdir().unwrap();
    replace(
        dir.path(),
        "a.rego",
        "package hookwire.a\nimport rego.v1\npoints := {\"output\", \"input\"}\n",
    );
    replace(
        dir.path(),
        "b.rego",
        "package hookwire.b\nimport rego.v1\npoints := {\"post_tool_call\", \"input\"}\n",
    );
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    let service = PolicyService::new(policies);
    let server = spawn_local(service.clone()).await.unwrap();
    // A host built with `connect` binds the service where Describe says.
    let host = Host::builder("test-agent", "hookwire")
        .remote("policy", server.endpoint())
        .connect(Duration::from_secs(2))
        .await
        .expect("host connects");
    for point in InterceptionPoint::ALL {
        let bound = !host.chain(point).is_empty();
        let declared = matches!(
            point,
            InterceptionPoint::Input | InterceptionPoint::PostToolCall | InterceptionPoint::Output
        );
        assert_eq!(bound, declared, "{point}");
    }
    assert_eq!(
        service.manifest().points,
        vec![
            InterceptionPoint::Input,
            InterceptionPoint::PostToolCall,
            InterceptionPoint::Output
        ]
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn bound_in_process_an_ill_formed_decision_fails_closed_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    replace(
        dir.path(),
        "ill.rego",
        "package hookwire.ill\nimport rego.v1\npoints := {\"pre_tool_call\"}\ndeny contains 42\n",
    );
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    let reported = Arc::new(AtomicBool::new(false));
    let seen = reported.clone();
    let service = PolicyService::new(policies).on_failure(move |_, error| {
        assert!(error.to_string().contains("ill-formed"), "{error}");
        seen.store(true, Ordering::SeqCst);
    });
    let records = RecordLog::new();
    let host = Host::builder("test-agent", "hookwire")
        .bind(InterceptorBinding::local("policy", service))
        .record_sink(records.clone())
        .build()
        .expect("host");
    let session = host.session("one").unwrap();
    session.start(["bash"]).await.unwrap();
    session
        .input(serde_json::json!("go"), hookwire_client::InputRole::User)
        .await
        .unwrap();
    let e = session.pre_tool_call(&bash("ls")).await.unwrap();
    assert_eq!(e.verdict().decision, Decision::Deny);
    assert_eq!(
        e.verdict().host_error_reason(),
        Some(HostError::InterceptorFailed)
    );
    assert!(reported.load(Ordering::SeqCst), "the failure was reported");
    let record = records
        .session("one")
        .into_iter()
        .find(|r| r.interception_point == InterceptionPoint::PreToolCall)
        .expect("a record of the emission");
    assert_eq!(record.verdict.decision, Decision::Deny);
}

/// A bash tool call with an id of its own: a session refuses a second
/// `pre_tool_call` for an id whose call is still open (§3.1 rule 5).
fn bash(cmd: &str) -> hookwire_client::ToolCall {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!(
        "call-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    hookwire_client::ToolCall::new(id, "bash", serde_json::json!({"cmd": cmd, "timeout_s": 30}))
}

#[tokio::test]
async fn writes_to_files_the_set_is_not_read_from_never_reload() {
    let dir = tempfile::tempdir().unwrap();
    replace(dir.path(), "policy.rego", &versioned("v1"));
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    let (events_tx, events) = mpsc::channel();
    let _watcher = policies
        .watch(move |e| {
            let _ = events_tx.send(e.clone());
        })
        .unwrap();

    // A log kept in the directory, as `serve --decision-log DIR/...` does,
    // and notes: a bounded burst of writes, none to a file the set reads.
    let log = dir.path().join("decisions.jsonl");
    for i in 0..40 {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        std::io::Write::write_all(&mut f, format!("{{\"n\":{i}}}\n").as_bytes()).unwrap();
        fs::write(dir.path().join("NOTES.md"), format!("note {i}")).unwrap();
    }
    // The settle the debounce needs: a reload the writes caused would have
    // started by now, apart from the change below.
    std::thread::sleep(hookwire_policy::RELOAD_DEBOUNCE * 4);

    // Then one real change: a second package.
    replace(
        dir.path(),
        "second.rego",
        "package hookwire.second\nimport rego.v1\npoints := {\"input\"}\ndeny contains \"policy:second\" if false\n",
    );
    let (seen, events) = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        loop {
            let e = events
                .recv_timeout(Duration::from_secs(10))
                .expect("the change to second.rego reloads");
            let done = matches!(e, ReloadEvent::Reloaded { packages: 2, .. });
            seen.push(e);
            if done {
                return (seen, events);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(
        seen,
        [ReloadEvent::Reloaded {
            generation: 2,
            packages: 2
        }],
        "only the policy file's change reloaded"
    );
    assert_eq!(policies.status().generation, 2);
    drop(events);
}
