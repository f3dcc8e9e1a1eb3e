//! The approval web page end to end, in a real headless Chromium: an agent
//! session blocks on an escalation, `tests/web/click.mjs` opens the page
//! served next to the approval service, reads the pending request as the
//! page shows it, and clicks Approve (the tool runs, the record says
//! `resolved_by: "approval"`) or Reject (the tool never runs).
//!
//! Needs Debian's `chromium` and `playwright-core` in `tests/web/`, both
//! installed by `scripts/setup.sh` (as root). Without them this test fails
//! with a message saying so: it is part of the default suite and never
//! skips silently.

use hookwire_testkit as common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hookwire::{InterceptionPoint, InterceptionRecord, ResolvedBy};
use hookwire_client::{
    Agent, InputRole, ModelResponse, StreamResolver, ToolCall, Tools, model_fn, tool_fn,
};
use hookwire_server::approval::ApprovalServer;
use serde_json::{Value, json};

use common::Scripted;

fn web_dir() -> PathBuf {
    common::workspace_root().join("tests/web")
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Fails (never skips) when the browser or the driver is missing.
fn require_browser() {
    let fix = "run scripts/setup.sh as root: it installs Debian's chromium and \
               npm-installs playwright-core into tests/web";
    assert!(
        chromium().exists(),
        "the approval web test needs Chromium at {} (set CHROMIUM to use another); {fix}",
        chromium().display()
    );
    assert!(
        web_dir().join("node_modules/playwright-core").exists(),
        "the approval web test needs playwright-core in tests/web/node_modules; {fix}"
    );
    let node = std::process::Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "the approval web test needs node on PATH; {fix}"
    );
}

/// What the page showed for the request, as click.mjs reports it.
#[derive(Debug, serde::Deserialize)]
struct Shown {
    point: String,
    tool: String,
    args: Value,
    reason: String,
    session: String,
    time_left: String,
    connection: String,
    status: String,
}

/// Runs click.mjs against `url` and returns what the page showed.
async fn click(url: &str, action: &str) -> Shown {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(web_dir().join("click.mjs"))
        .arg(url)
        .arg(action)
        .current_dir(web_dir())
        .kill_on_drop(true);
    if let Some(path) = std::env::var_os("APPROVAL_WEB_SCREENSHOT") {
        cmd.arg(path);
    }
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("click.mjs finished within 90 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "click.mjs {action} failed ({}):\n{}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("click.mjs output {stdout:?}: {e}"))
}

/// One agent run whose single tool call escalates; `action` is clicked in
/// the page. Returns what the page showed, the tool invocation count, and
/// the pre_tool_call record.
async fn run(action: &str) -> (Shown, usize, InterceptionRecord) {
    let policy = Scripted::escalating_tool_calls(
        "policy",
        "large_transfer",
        "transfers over 50 need a human",
    )
    .serve()
    .await;
    let service = ApprovalServer::new()
        .spawn_local()
        .await
        .expect("approval service");
    let url = service.web_url().expect("the web page is served");
    let deadline = Duration::from_secs(120);
    let resolver = StreamResolver::builder(service.endpoint())
        .deadline(deadline)
        .host_name("payments-agent")
        .build()
        .expect("resolver");
    let (builder, records) = common::host();
    let host = builder
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        // The approver sees the amount, not the account.
        .approval_redactor(|ctx| {
            let mut ctx = ctx.clone();
            if let Some(Value::Object(args)) = ctx.target_mut() {
                args.insert("account".into(), json!("[redacted]"));
            }
            ctx
        })
        .build()
        .expect("host");

    let invoked = Arc::new(AtomicUsize::new(0));
    let tools = Tools::new().with(tool_fn("wire_transfer", {
        let invoked = Arc::clone(&invoked);
        move |_args| {
            invoked.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!({"txn": "tx-1"})) }
        }
    }));
    let calls = Arc::new(AtomicUsize::new(0));
    let model = model_fn("mock-model", move |_messages| {
        let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            Ok(if first {
                ModelResponse {
                    content: Value::Null,
                    tool_calls: vec![ToolCall::new(
                        "tc-1",
                        "wire_transfer",
                        json!({"amount": 100, "account": "DE89 3704 0044 0532 0130 00"}),
                    )],
                    finish_reason: "tool_calls".into(),
                }
            } else {
                ModelResponse {
                    content: json!("done"),
                    tool_calls: vec![],
                    finish_reason: "stop".into(),
                }
            })
        }
    });
    let session = host.session(format!("web-{action}")).expect("session");
    let mut agent = Agent::new(session, model, tools);
    let agent_run = tokio::spawn(async move {
        agent
            .run_once(json!("send 100 to the supplier"), InputRole::User)
            .await
    });

    let shown = click(&url, action).await;
    let (_turn, _shutdown) = tokio::time::timeout(Duration::from_secs(30), agent_run)
        .await
        .expect("the session proceeds after the click")
        .expect("agent task")
        .expect("agent run");
    let record = records
        .records()
        .into_iter()
        .find(|r| r.interception_point == InterceptionPoint::PreToolCall)
        .expect("a pre_tool_call record");
    service.shutdown().await.expect("shutdown");
    (shown, invoked.load(Ordering::SeqCst), record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_reject_in_a_real_browser() {
    require_browser();
    let started = Instant::now();

    let (shown, invoked, record) = run("approve").await;
    assert_eq!(shown.point, "pre_tool_call");
    assert_eq!(shown.tool, "wire_transfer");
    assert_eq!(shown.args, json!({"amount": 100, "account": "[redacted]"}));
    assert_eq!(
        shown.reason,
        "large_transfer — transfers over 50 need a human"
    );
    assert_eq!(shown.session, "web-approve");
    assert!(
        shown.time_left.ends_with('s'),
        "time left {:?}",
        shown.time_left
    );
    assert_eq!(shown.connection, "live");
    assert!(
        shown.status.ends_with("approve accepted"),
        "{:?}",
        shown.status
    );
    assert_eq!(invoked, 1, "approved: the tool runs once");
    assert!(record.proceeds());
    assert_eq!(record.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        record.to_json()["resolved_by"],
        json!("approval"),
        "the record says who lifted the deny"
    );

    let (shown, invoked, record) = run("reject").await;
    assert!(
        shown.status.ends_with("reject accepted"),
        "{:?}",
        shown.status
    );
    assert_eq!(invoked, 0, "rejected: the tool is never invoked");
    assert!(!record.proceeds());
    assert_eq!(record.resolved_by, Some(ResolvedBy::Rejection));
    assert_eq!(record.verdict.reason.as_deref(), Some("approval:rejected"));

    eprintln!(
        "approval web e2e (two browser runs) took {:?}",
        started.elapsed()
    );
}
