//! Decision logs and the service's metrics, observed through the service
//! itself (`Interceptor::intercept`, as the gRPC adapter calls it): one
//! entry per decision with the input's identity and never its payload,
//! included paths with masks, a full buffer that drops and counts, and the
//! `hookwire_policy_*` series.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::Interceptor;
use hookwire_policy::decision_log::{DecisionLog, Inclusion, JsonLines, LogWriter};
use hookwire_policy::metrics::PolicyMetrics;
use hookwire_policy::{Policies, PolicyOptions, PolicyService};
use prometheus_client::registry::Registry;
use serde_json::Value;

use crate::bundle::{policy, rm_call};

fn policies() -> (tempfile::TempDir, Arc<Policies>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.rego"), policy("logged")).unwrap();
    let policies = Policies::load(dir.path(), PolicyOptions::default()).unwrap();
    (dir, policies)
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[tokio::test]
async fn every_decision_is_logged_with_its_identity_and_no_payload() {
    let (dir, policies) = policies();
    let path = dir.path().join("decisions.jsonl");
    let log = Arc::new(
        DecisionLog::start(JsonLines::file(&path).unwrap(), 100, Inclusion::default()).unwrap(),
    );
    let service = PolicyService::new(policies).observe(log.clone());
    let ctx = rm_call();
    service.intercept(&ctx).await.unwrap();
    service.intercept(&ctx).await.unwrap();
    let summary = log.close();
    assert_eq!(
        (summary.written, summary.dropped, summary.failed),
        (2, 0, 0)
    );

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("rm -rf"),
        "{text}"
    );
    let entries = lines(&path);
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    assert_eq!(e["point"], "pre_tool_call");
    assert_eq!(e["agent"], "agent-7");
    assert_eq!(e["session_id"], "s-bundle");
    assert_eq!(e["sequence"], 4);
    assert_eq!(e["tool"], "bash");
    assert_eq!(e["decision"], "deny");
    assert_eq!(e["reason"], "policy:logged");
    assert_eq!(e["generation"], 1);
    assert_eq!(e["packages"][0]["package"], "hookwire.versioned");
    assert_eq!(e["packages"][0]["rules"], serde_json::json!(["deny"]));
    let digest = ctx
        .jcs_sha256_identity(&hookwire::ContextLimits::default())
        .unwrap();
    assert_eq!(e["context_digest"], digest.as_str());
    assert!(e.get("input").is_none());
    assert!(e["time"].as_str().unwrap().ends_with('Z'));
    assert_ne!(e["decision_id"], entries[1]["decision_id"]);
}

#[tokio::test]
async fn included_paths_are_logged_and_masked_ones_removed() {
    let (dir, policies) = policies();
    let path = dir.path().join("decisions.jsonl");
    let inclusion = Inclusion::new(
        &["/tool_call".into(), "/agent/id".into()],
        &["/tool_call/args/password".into()],
    )
    .unwrap();
    let log =
        Arc::new(DecisionLog::start(JsonLines::file(&path).unwrap(), 100, inclusion).unwrap());
    let service = PolicyService::new(policies).observe(log.clone());
    service.intercept(&rm_call()).await.unwrap();
    log.close();
    let entries = lines(&path);
    let input = &entries[0]["input"];
    assert_eq!(input["tool_call"]["args"]["cmd"], "rm -rf /");
    assert_eq!(input["agent"]["id"], "agent-7");
    assert!(
        input["tool_call"]["args"].get("password").is_none(),
        "{input}"
    );
    assert!(!std::fs::read_to_string(&path).unwrap().contains("hunter2"));

    assert!(
        Inclusion::new(&["tool_call".into()], &[]).is_err(),
        "a path starts with /"
    );
    assert!(Inclusion::new(&["/a//b".into()], &[]).is_err());
}

/// A writer that holds its first entry until released.
struct Gate {
    entered: mpsc::Sender<()>,
    release: Arc<Mutex<mpsc::Receiver<()>>>,
    first: bool,
}

impl LogWriter for Gate {
    fn write_entry(&mut self, _entry: &Value) -> std::io::Result<()> {
        if self.first {
            self.first = false;
            let _ = self.entered.send(());
            let _ = self
                .release
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(60));
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_full_buffer_drops_and_counts_without_blocking_decisions() {
    let (_dir, policies) = policies();
    let mut registry = Registry::default();
    let metrics = PolicyMetrics::register(&mut registry);
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let gate = Gate {
        entered: entered_tx,
        release: Arc::new(Mutex::new(release_rx)),
        first: true,
    };
    let log = Arc::new(
        DecisionLog::start(gate, 2, Inclusion::default())
            .unwrap()
            .count_drops_in(metrics.decision_log_dropped()),
    );
    let service = PolicyService::new(policies)
        .observe(log.clone())
        .observe(Arc::new(metrics.clone()));
    let ctx = rm_call();
    service.intercept(&ctx).await.unwrap();
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("the writer took the first entry");
    // The writer holds one; the buffer takes two; seven are dropped.
    for _ in 0..9 {
        service.intercept(&ctx).await.unwrap();
    }
    assert_eq!(log.dropped(), 7);
    release.send(()).unwrap();
    let summary = log.close();
    assert_eq!((summary.written, summary.dropped), (3, 7));

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("hookwire_policy_decision_log_dropped_total 7"),
        "{text}"
    );
    assert!(
        text.contains(
            "hookwire_policy_decisions_total{package=\"hookwire.versioned\",outcome=\"deny\"} 10"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "hookwire_policy_evaluation_duration_seconds_count{point=\"pre_tool_call\"} 10"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn closing_does_not_hang_on_a_writer_that_never_returns() {
    let (_dir, policies) = policies();
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let gate = Gate {
        entered: entered_tx,
        release: Arc::new(Mutex::new(release_rx)),
        first: true,
    };
    let log = Arc::new(DecisionLog::start(gate, 8, Inclusion::default()).unwrap());
    let service = PolicyService::new(policies).observe(log.clone());
    for _ in 0..3 {
        service.intercept(&rm_call()).await.unwrap();
    }
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("the writer is stuck in its first entry");
    let summary = log.close_within(Duration::from_millis(50));
    assert_eq!(
        (summary.written, summary.dropped, summary.unwritten),
        (0, 0, 3)
    );
    release.send(()).unwrap();
}
