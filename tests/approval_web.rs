//! The approval web page end to end, in a real headless Chromium: an agent
//! session blocks on an escalation, `tests/web/click.mjs` signs in with an
//! approver token, reads the pending request as the page shows it, filters
//! and searches, checks the layout at 1280 and 390 px (no horizontal
//! overflow; screenshots in `tests/web/artifacts/`, git-ignored), and
//! approves by keyboard (the tool runs, the record says `resolved_by:
//! "approval"` and names the signed-in approver), rejects with a reason
//! (the tool never runs; the history shows the reason as the note), or
//! opens the request (recorded as seen by that approver), is refused
//! invalid JSON, and approves edited arguments after a confirmation
//! showing the diff (the tool runs with them; the history shows the
//! diff). The edited run is served over HTTPS and gRPC over TLS from a
//! test authority.
//!
//! Needs Debian's `chromium` and `playwright-core` in `tests/web/`, both
//! installed by `scripts/setup.sh` (as root). Without them this test fails
//! with a message saying so: it is part of the default suite and never
//! skips silently.

use hookwire_testkit as common;

use crate::approval_common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire::{InterceptionPoint, InterceptionRecord, ResolvedBy};
use hookwire_agent::{Agent, Tools, model_fn, tool_fn};
use hookwire_approvals::ServiceTls;
use hookwire_client::{InputRole, ModelResponse, StreamResolver, TlsConfig, ToolCall};
use hookwire_testkit::tls::Authority;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use approval_common::{HOST_TOKEN, token_of};

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

/// The session cookie's flags, as Chromium stored them.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CookieFlags {
    http_only: bool,
    same_site: String,
    secure: bool,
}

/// The decision's row in the page's history view.
#[derive(Debug, serde::Deserialize)]
struct HistoryRow {
    approver: String,
    outcome: String,
    status: String,
    note: String,
    edits: String,
    session: String,
    instance: String,
}

/// What the filters did to the request's card.
#[derive(Debug, serde::Deserialize, PartialEq)]
struct Filters {
    by_tool: bool,
    by_point: bool,
    search_hidden: bool,
    search_found: bool,
    cleared: bool,
}

/// What the page showed for the request, as click.mjs reports it.
#[derive(Debug, serde::Deserialize)]
struct Shown {
    approver: String,
    cookie: CookieFlags,
    point: String,
    tool: String,
    agent: String,
    submitted: String,
    args: Value,
    reason: String,
    session: String,
    time_left: String,
    seen_before: String,
    shortcuts_documented: bool,
    labelled_inputs: bool,
    filters: Filters,
    overflow_1280: bool,
    overflow_390: bool,
    overflow_390_history: bool,
    #[serde(default)]
    overflow_390_detail: Option<bool>,
    #[serde(default)]
    seen_after: Option<String>,
    #[serde(default)]
    detail_context: Option<Value>,
    #[serde(default)]
    detail_approval: Option<Value>,
    #[serde(default)]
    detail_facts: Option<String>,
    #[serde(default)]
    invalid_json: Option<String>,
    #[serde(default)]
    invalid_marked: Option<String>,
    #[serde(default)]
    diff: Vec<String>,
    #[serde(default)]
    reject_focus: Option<String>,
    #[serde(default)]
    reject_without_reason: Option<String>,
    connection: String,
    status: String,
    history: HistoryRow,
}

/// A throwaway authority and a server certificate for 127.0.0.1 it signed.
struct TestPki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    /// base64(SHA-256(SubjectPublicKeyInfo)) of the server key, what
    /// Chromium is told to trust.
    spki_sha256: String,
}

fn test_pki() -> TestPki {
    let ca = Authority::new("approvals test CA");
    let server = ca.localhost();
    TestPki {
        ca_pem: ca.pem,
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
        spki_sha256: base64(&Sha256::digest(&server.spki_der)),
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Runs click.mjs against `url` and returns what the page showed.
async fn click(url: &str, action: &str, spki: Option<&str>) -> Shown {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(web_dir().join("click.mjs"))
        .arg(url)
        .arg(action)
        .arg(web_dir().join("artifacts"))
        .env("APPROVER_TOKEN", token_of("web"))
        .current_dir(web_dir())
        .kill_on_drop(true);
    if let Some(spki) = spki {
        cmd.arg(spki);
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
/// the page (served over HTTPS with `tls`). Returns what the page showed,
/// the arguments of every tool invocation, and the pre_tool_call record.
async fn run(action: &str, tls: bool) -> (Shown, Vec<Value>, InterceptionRecord) {
    let policy = Scripted::new("policy", |ctx| {
        if ctx.point() == InterceptionPoint::PreToolCall {
            let mut approval = serde_json::Map::new();
            approval.insert("limit".into(), json!(50));
            hookwire::Verdict::escalate("large_transfer")
                .with_message("transfers over 50 need a human")
                .with_approval(approval)
        } else {
            hookwire::Verdict::allow()
        }
    })
    .serve()
    .await;
    let pki = tls.then(test_pki);
    let mut server = approval_common::server();
    if let Some(pki) = &pki {
        server = server.tls(ServiceTls::new(pki.cert_pem.clone(), pki.key_pem.clone()).unwrap());
    }
    let service = server.spawn_local().await.expect("approval service");
    let url = service.web_url().expect("the web page is served");
    assert_eq!(url.starts_with("https://"), tls, "{url}");
    let deadline = Duration::from_secs(120);
    let mut resolver = StreamResolver::builder(service.endpoint());
    if let Some(pki) = &pki {
        resolver = resolver.tls(TlsConfig {
            ca_pem: Some(pki.ca_pem.clone().into_bytes()),
            ..TlsConfig::default()
        });
    }
    let resolver = resolver
        .deadline(deadline)
        .host_name("payments-agent")
        .bearer_token(HOST_TOKEN)
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

    let invoked = Arc::new(Mutex::new(Vec::new()));
    let tools = Tools::new().with(tool_fn("wire_transfer", {
        let invoked = Arc::clone(&invoked);
        move |args| {
            invoked.lock().unwrap().push(args);
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
    let kind = action.split(':').next().unwrap_or(action);
    let session = host.session(format!("web-{kind}")).expect("session");
    let mut agent = Agent::new(session, model, tools);
    let agent_run = tokio::spawn(async move {
        agent
            .run_once(json!("send 100 to the supplier"), InputRole::User)
            .await
    });

    let shown = click(&url, action, pki.as_ref().map(|p| p.spki_sha256.as_str())).await;
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
    let invoked = invoked.lock().unwrap().clone();
    (shown, invoked, record)
}

/// The approver the record names, from the service's credential check.
fn recorded_approver(record: &InterceptionRecord) -> Value {
    record.to_envelope()["extensions"]["hookwire"]["approval"]["approver"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_reject_in_a_real_browser() {
    require_browser();
    let started = Instant::now();

    let (shown, invoked, record) = run("approve", false).await;
    assert_eq!(shown.approver, "web");
    assert_eq!(shown.agent, "test-agent");
    assert_ne!(
        shown.submitted, "—",
        "the page says when the request arrived"
    );
    assert!(shown.shortcuts_documented && shown.labelled_inputs);
    assert_eq!(
        shown.filters,
        Filters {
            by_tool: true,
            by_point: true,
            search_hidden: true,
            search_found: true,
            cleared: true
        }
    );
    assert!(!shown.overflow_1280, "no horizontal overflow at 1280 px");
    assert!(!shown.overflow_390, "no horizontal overflow at 390 px");
    assert!(!shown.overflow_390_history, "the history fits 390 px");
    assert!(shown.cookie.http_only, "{:?}", shown.cookie);
    assert_eq!(shown.cookie.same_site, "Strict");
    assert!(!shown.cookie.secure, "plain HTTP: not Secure");
    assert_eq!(shown.seen_before, "—", "listing a request is not seeing it");
    assert_eq!(shown.point, "pre_tool_call");
    assert_eq!(shown.tool, "wire_transfer");
    assert_eq!(shown.args, json!({"amount": 100, "account": "[redacted]"}));
    assert_eq!(
        shown.reason,
        "large_transfer — transfers over 50 need a human"
    );
    assert_eq!(shown.session, "web-approve");
    // The host waits 120 s: the page counts down from that, not an hour.
    assert!(
        shown.time_left.starts_with("1m ") || shown.time_left.starts_with("2m "),
        "time left {:?}",
        shown.time_left
    );
    assert_eq!(shown.connection, "live");
    assert!(
        shown.status.ends_with("approve accepted"),
        "{:?}",
        shown.status
    );
    assert_eq!(invoked.len(), 1, "approved: the tool runs once");
    assert!(record.proceeds());
    assert_eq!(recorded_approver(&record), json!("web"));
    assert_eq!(
        (
            shown.history.approver.as_str(),
            shown.history.outcome.as_str(),
            shown.history.status.as_str()
        ),
        ("web", "allow", "accepted")
    );
    assert_eq!(shown.history.session, "web-approve");
    assert_eq!(shown.history.instance, hookwire_approvals::DEFAULT_INSTANCE);
    assert_eq!(record.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        record.to_json()["resolved_by"],
        json!("approval"),
        "the record says who lifted the deny"
    );

    let (shown, invoked, record) = run("reject:over the monthly limit", false).await;
    assert!(
        shown.status.ends_with("reject accepted"),
        "{:?}",
        shown.status
    );
    assert_eq!(shown.reject_focus.as_deref(), Some("detail-note"));
    assert!(
        shown
            .reject_without_reason
            .as_deref()
            .is_some_and(|e| e.contains("Say why")),
        "{:?}",
        shown.reject_without_reason
    );
    assert_eq!(shown.history.note, "over the monthly limit");
    assert_eq!(shown.history.outcome, "deny");
    assert_eq!(
        record.verdict.message.as_deref(),
        Some("over the monthly limit")
    );
    assert!(invoked.is_empty(), "rejected: the tool is never invoked");
    assert!(!record.proceeds());
    assert_eq!(record.resolved_by, Some(ResolvedBy::Rejection));
    assert_eq!(record.verdict.reason.as_deref(), Some("approval:rejected"));

    // Over HTTPS: open the request (seen by the signed-in approver), edit
    // the amount, approve; the tool runs with the edited arguments.
    let edited = json!({"amount": 40, "account": "[redacted]", "memo": "capped by approver"});
    let (shown, invoked, record) = run(&format!("approve-edited:{edited}"), true).await;
    assert!(shown.cookie.secure, "HTTPS: the cookie is Secure");
    assert!(shown.cookie.http_only && shown.cookie.same_site == "Strict");
    assert_eq!(shown.seen_before, "—");
    assert_eq!(shown.seen_after.as_deref(), Some("web"));
    let context = shown
        .detail_context
        .expect("the detail view shows the context");
    assert_eq!(context["tool_call"]["args"]["account"], json!("[redacted]"));
    assert_eq!(shown.detail_approval, Some(json!({"limit": 50})));
    let facts = shown.detail_facts.as_deref().unwrap_or_default();
    assert!(
        facts.contains("test-agent") && facts.contains("web-approve-edited"),
        "{facts}"
    );
    assert_eq!(shown.overflow_390_detail, Some(false));
    assert!(
        shown
            .invalid_json
            .as_deref()
            .is_some_and(|e| e.starts_with("Not valid JSON")),
        "{:?}",
        shown.invalid_json
    );
    assert_eq!(shown.invalid_marked.as_deref(), Some("true"));
    assert_eq!(
        shown.diff,
        ["~ $.amount: 100 → 40", "+ $.memo: \"capped by approver\""],
        "the confirmation shows what changed"
    );
    assert!(
        shown.status.ends_with("approve (edited) accepted"),
        "{:?}",
        shown.status
    );
    assert_eq!(
        invoked,
        vec![edited],
        "the tool runs with the edited arguments"
    );
    assert!(record.proceeds());
    assert_eq!(record.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(recorded_approver(&record), json!("web"));
    assert_eq!(shown.history.outcome, "allow_edited");
    assert_eq!(shown.history.note, "capped by the desk");
    assert!(
        shown.history.edits.contains("~ $.amount: 100 → 40"),
        "{:?}",
        shown.history.edits
    );

    eprintln!(
        "approval web e2e (three browser runs) took {:?}",
        started.elapsed()
    );
}

/// What the signed-out page showed, as signed_out.mjs reports it.
#[derive(Debug, serde::Deserialize)]
struct SignedOut {
    signin: bool,
    bar: bool,
    app: bool,
    signout: bool,
    text: String,
    hidden_but_rendered: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signed_out_screen_shows_only_the_sign_in_form() {
    require_browser();
    let service = approval_common::server()
        .spawn_local()
        .await
        .expect("approval service");
    let url = service.web_url().expect("the web page is served");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(web_dir().join("signed_out.mjs"))
        .arg(&url)
        .current_dir(web_dir())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("signed_out.mjs finished within 90 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "signed_out.mjs failed ({}):\n{}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: SignedOut = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("signed_out.mjs output {stdout:?}: {e}"));
    assert!(shown.signin, "{shown:?}");
    assert!(
        !shown.bar && !shown.app && !shown.signout,
        "the signed-in screen shows while signed out: {shown:?}"
    );
    assert!(!shown.text.contains("Signed in as"), "{shown:?}");
    assert!(shown.hidden_but_rendered.is_empty(), "{shown:?}");
    service.shutdown().await.unwrap();
}
