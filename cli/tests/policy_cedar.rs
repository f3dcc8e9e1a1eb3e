//! `hookwire policy` with Cedar, as the built binary: a served Cedar
//! directory decides a real host's tool calls (forbid reasons, an
//! escalation, default-deny), a policy that does not validate against the
//! schema is refused on reload while the old set keeps serving, and
//! `test`, `eval` and `schema` work on Cedar.

use std::fs;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hookwire::Decision;
use hookwire_client::{Host, InterceptorBinding, ToolCall};
use hookwire_testkit::workspace_root;
use serde_json::json;

use crate::gateway::{Running, line_starting, lines_of};

fn hookwire(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("run hookwire")
}

/// A copy of the Cedar examples to edit.
fn cedar_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = workspace_root().join("examples/policies-cedar");
    for name in [
        "hookwire.cedarschema",
        "tool_allowlist.cedar",
        "spending.cedar",
    ] {
        fs::copy(from.join(name), dir.path().join(name)).expect("copy");
    }
    dir
}

/// Each line the child writes on stderr.
fn stderr_lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn call(id: &str, tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_cedar_directory_decides_and_keeps_serving_past_an_invalid_reload() {
    let dir = cedar_copy();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve"])
        .arg(dir.path())
        .args(["--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let out = lines_of(&mut child);
    let err = stderr_lines(&mut child);
    let _serving = Running(child);
    let spending = line_starting(&out, "spending.cedar");
    assert!(spending.contains("pre_tool_call"), "{spending}");
    let banner = line_starting(&out, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the URL")
        .to_owned();

    let host = Host::builder("billing-agent", "hookwire")
        .bind(InterceptorBinding::remote("policy", endpoint).timeout(Duration::from_secs(5)))
        .build()
        .expect("host");
    let session = host.session("cedar-cli").expect("session");
    session
        .start(["lookup_invoice", "wire_transfer", "bash"])
        .await
        .expect("start");
    session
        .input(json!("pay"), hookwire_client::InputRole::User)
        .await
        .expect("input");

    let listed = session
        .pre_tool_call(&call("c1", "lookup_invoice", json!({"id": "7"})))
        .await
        .unwrap();
    assert_eq!(
        listed.verdict().decision,
        Decision::Allow,
        "{:?}",
        listed.verdict()
    );

    // Default-deny: no permit of the allowlist holds for bash.
    let unlisted = session
        .pre_tool_call(&call("c2", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    assert_eq!(unlisted.verdict().decision, Decision::Deny);
    assert_eq!(unlisted.reason(), Some("policy:tool_not_allowed"));

    // An @escalate forbid: a deny carrying an approval block.
    let large = session
        .pre_tool_call(&call(
            "c3",
            "wire_transfer",
            json!({"amount": 25000, "to": "ACME"}),
        ))
        .await
        .unwrap();
    assert_eq!(large.verdict().decision, Decision::Deny);
    assert_eq!(large.reason(), Some("policy:spend_above_threshold"));
    assert!(large.verdict().approval.is_some(), "{:?}", large.verdict());

    // A forbid's @reason and @message.
    let missing = session
        .pre_tool_call(&call("c4", "wire_transfer", json!({"to": "ACME"})))
        .await
        .unwrap();
    assert_eq!(missing.reason(), Some("policy:spend_amount_invalid"));
    assert_eq!(
        missing.verdict().message.as_deref(),
        Some("wire_transfer needs a numeric amount")
    );

    // A policy reading an undeclared argument does not validate: refused,
    // the old set keeps deciding.
    fs::write(
        dir.path().join("broken.cedar"),
        "@reason(\"policy:x\")\nforbid (principal, action == Hookwire::Action::\"pre_tool_call\", resource) when { context.tool_call.args.cmd == \"ls\" };\n",
    )
    .expect("write");
    let rejected = line_starting(&err, "policy reload rejected");
    assert!(rejected.contains("broken.cedar"), "{rejected}");
    assert!(rejected.contains("does not validate"), "{rejected}");
    let still = session
        .pre_tool_call(&call("c5", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    assert_eq!(still.reason(), Some("policy:tool_not_allowed"));
    let allowed = session
        .pre_tool_call(&call("c6", "lookup_invoice", json!({"id": "8"})))
        .await
        .unwrap();
    assert_eq!(allowed.verdict().decision, Decision::Allow);
}

#[test]
fn policy_test_eval_and_schema_work_on_cedar() {
    let out = hookwire(&["policy", "test", "examples/policies-cedar"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("PASS  spending.cedartest.json.large transfer escalated"),
        "{text}"
    );
    assert!(text.contains(" 0 failed"), "{text}");

    let dir = cedar_copy();
    fs::write(
        dir.path().join("wrong.cedartest.json"),
        r#"[{"name": "bash allowed", "point": "pre_tool_call", "context": {"agent": {"id": "billing-agent"}, "tool_call": {"id": "c", "name": "bash", "args": {}}}, "expect": "allow"}]"#,
    )
    .unwrap();
    let out = hookwire(&["policy", "test", dir.path().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("FAIL  wrong.cedartest.json.bash allowed")
            && text.contains("expected allow, got deny policy:tool_not_allowed"),
        "{text}"
    );

    let out = hookwire(&[
        "policy",
        "eval",
        "examples/policies-cedar",
        "--point",
        "pre_tool_call",
        "--context",
        "examples/policies-cedar/contexts/wire_transfer.json",
        "--explain",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("spending.cedar: {"), "{text}");
    assert!(
        text.contains("\"reason\": \"policy:spend_above_threshold\""),
        "{text}"
    );

    let out = hookwire(&["policy", "schema"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        fs::read_to_string(workspace_root().join("policy/schema/hookwire.cedarschema")).unwrap()
    );
    let help = hookwire(&["policy", "schema", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Example:"));
}
