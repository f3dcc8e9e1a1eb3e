//! `hookwire serve-demo --metrics-addr`, spawned as an operator runs it:
//! after a known session against its two services, `/metrics` counts what
//! they answered and `promtool check metrics` accepts it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire_client::{Host, InputRole, RecordLog, ShutdownReason, ToolCall};
use hookwire_testkit::{metric_value, promtool_accepts};
use serde_json::json;

/// The command, killed on drop.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_demo_serves_its_services_metrics() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args([
            "serve-demo",
            "--policy",
            "127.0.0.1:0",
            "--redactor",
            "127.0.0.1:0",
        ])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run hookwire serve-demo");
    let stdout = child.stdout.take().unwrap();
    let _serving = Serving(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            if let (Some(what), Some(url)) = (words.next(), words.last()) {
                let _ = tx.send((what.to_owned(), url.to_owned()));
            }
        }
    });
    let mut policy = None;
    let mut metrics = None;
    while policy.is_none() || metrics.is_none() {
        let (what, url) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("serve-demo printed its addresses");
        match what.as_str() {
            "policy" => policy = Some(url),
            "metrics" => metrics = Some(url),
            _ => {}
        }
    }
    let (policy, metrics) = (policy.unwrap(), metrics.unwrap());
    let metrics = metrics
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_owned();

    let records = RecordLog::new();
    let host = Host::builder("metrics-agent", "hookwire")
        .remote("policy", policy)
        .record_sink(records.clone())
        .build()
        .unwrap();
    let session = host.session("s").unwrap();
    session.start(["bash"]).await.unwrap();
    session
        .input(json!("tidy up"), InputRole::User)
        .await
        .unwrap();
    let rm = ToolCall::new("c1", "bash", json!({"cmd": "rm -rf /"}));
    assert!(!session.pre_tool_call(&rm).await.unwrap().proceeds());
    let ls = ToolCall::new("c2", "bash", json!({"cmd": "ls"}));
    assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let text =
        tokio::task::spawn_blocking(move || hookwire_testkit::scrape_metrics(metrics.as_str()))
            .await
            .unwrap();
    promtool_accepts("serve-demo", &text);
    let requests = "hookwire_interceptor_requests_total";
    let at = |d: &'static str| {
        [
            ("service", "demo-policy"),
            ("point", "pre_tool_call"),
            ("decision", d),
        ]
    };
    assert_eq!(metric_value(&text, requests, &at("deny")), 1.0, "{text}");
    assert_eq!(metric_value(&text, requests, &at("allow")), 1.0, "{text}");
    assert_eq!(
        metric_value(
            &text,
            "hookwire_interceptor_requests_total",
            &[
                ("service", "demo-policy"),
                ("point", "agent_startup"),
                ("decision", "allow")
            ]
        ),
        1.0
    );
}
