//! The approval service's notifications against webhook receivers served
//! here on 127.0.0.1:0: signed bodies that verify, Slack and Teams shapes,
//! routing by the approvers' rules, retries then the dead-letter log, the
//! queue bound, and nothing secret in a payload, a dead letter or a log.

use std::io::Write;
use std::time::Duration;

use hookwire::Verdict;
use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire_approvals::notify::{SIGNATURE_HEADER, TIMESTAMP_HEADER, signature};
use hookwire_approvals::{
    Access, AccessConfig, ApprovalQueue, ApprovalServer, ApproverConfig, ApproverIdentity,
    ApproverRules, NotifyConfig,
};
use serde_json::{Value, json};

const SECRET: &str = "whsec-shared-secret-0123456789";
const ANN_TOKEN: &str = "hwa_ann_token_never_in_a_notification";
const ARG_SECRET: &str = "acct-4111-1111-1111-1111";
const WAIT: Duration = Duration::from_secs(20);

mod receiver;

use receiver::{Logs, Received, receiver};

fn access() -> Access {
    let rules = |tool: &str| ApproverRules {
        tools: vec![tool.into()],
        ..ApproverRules::default()
    };
    Access::new(
        &AccessConfig::default()
            .approver(ApproverConfig::token("ann", ANN_TOKEN).rules(rules("wire_transfer")))
            .approver(ApproverConfig::token("bob", "hwa_bob_token").rules(rules("delete_repo"))),
    )
    .unwrap()
}

fn request(tool: &str, session: &str) -> ApprovalRequest {
    let ctx = hookwire::AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "pre_tool_call",
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": 1,
        "agent": {"id": "billing-agent", "framework": "hookwire"},
        "tenant": {"id": "acme"},
        "session": {"id": session},
        "tool_call": {"id": "tc-1", "name": tool, "args": {"account": ARG_SECRET, "amount": 9000}},
    }))
    .unwrap();
    let mut approval = serde_json::Map::new();
    approval.insert("limit".into(), json!(5000));
    ApprovalRequest {
        context_identity: None,
        interception_point: hookwire::InterceptionPoint::PreToolCall,
        verdict: Verdict::escalate("payments.limit")
            .with_message("over the limit")
            .with_approval(approval),
        context: ctx,
    }
}

fn secret_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .unwrap();
    path.to_str().unwrap().to_owned()
}

/// The service over `queue` with `channels`, notifications linked to
/// `https://approvals.example/`.
async fn serve(queue: &ApprovalQueue, notify: Value) -> hookwire_approvals::RunningApprovalServer {
    let config: NotifyConfig = serde_json::from_value(notify).unwrap();
    let access = access();
    let notifications = config.load(&access).unwrap();
    ApprovalServer::with_queue(queue.clone(), access)
        .notify(notifications)
        .spawn_local()
        .await
        .unwrap()
}

fn assert_clean(text: &str) {
    for secret in [SECRET, ANN_TOKEN, ARG_SECRET, "SECRET-PATH", "5000"] {
        assert!(!text.contains(secret), "{secret:?} leaked into {text}");
    }
}

#[tokio::test]
async fn signed_routed_and_shaped_notifications_carry_a_summary_only() {
    let mut rx = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path(), "secret", &format!("{SECRET}\n"));
    let slack_url = secret_file(
        dir.path(),
        "slack",
        &format!("{}/ok/slack/SECRET-PATH", rx.base),
    );
    let queue = ApprovalQueue::new();
    let running = serve(
        &queue,
        json!({
            "page_url": "https://approvals.example/",
            "channels": [
                {"name": "ann-hook", "kind": "webhook", "url": format!("{}/ok/ann", rx.base),
                 "secret_file": secret, "approvers": ["ann"]},
                {"name": "bob-hook", "kind": "webhook", "url": format!("{}/ok/bob", rx.base),
                 "secret_file": secret, "approvers": ["bob"]},
                {"name": "slack", "kind": "slack", "url_file": slack_url, "approvers": ["ann"],
                 "events": ["requested"]},
                {"name": "teams", "kind": "teams", "url": format!("{}/ok/teams", rx.base),
                 "approvers": ["ann"], "events": ["requested"]},
            ]
        }),
    )
    .await;
    let (host, _deliveries) = queue.connect_host("billing-host");

    // bob's rules cover delete_repo: only bob's channel hears of it.
    host.submit("r0", request("delete_repo", "s-0"), Duration::from_secs(60))
        .unwrap();
    let to_bob = rx.next("/ok/bob").await;
    assert_eq!(to_bob.json()["request"]["tool"], "delete_repo");

    // ann's: a wire transfer, to her webhook, Slack and Teams.
    let id = host
        .submit(
            "r1",
            request("wire_transfer", "s-1"),
            Duration::from_secs(60),
        )
        .unwrap();
    let requested = rx.next("/ok/ann").await;
    let body = requested.json();
    assert_eq!(body["event"], "approval.requested");
    assert_eq!(body["event_id"], format!("{id}:requested"));
    assert_eq!(
        body["link"],
        format!("https://approvals.example/#request={id}")
    );
    let r = &body["request"];
    assert_eq!(
        (
            r["tool"].as_str(),
            r["agent"].as_str(),
            r["tenant"].as_str()
        ),
        (Some("wire_transfer"), Some("billing-agent"), Some("acme"))
    );
    assert_eq!(
        (
            r["reason"].as_str(),
            r["session"].as_str(),
            r["point"].as_str()
        ),
        (Some("payments.limit"), Some("s-1"), Some("pre_tool_call"))
    );

    // The signature verifies over the timestamp and the body, and only so.
    let header = |r: &Received, h: &str| r.headers[h].to_str().unwrap().to_owned();
    let ts: u64 = header(&requested, TIMESTAMP_HEADER).parse().unwrap();
    assert_eq!(
        header(&requested, SIGNATURE_HEADER),
        signature(SECRET.as_bytes(), ts, &requested.body)
    );
    assert_ne!(
        header(&requested, SIGNATURE_HEADER),
        signature(SECRET.as_bytes(), ts + 1, &requested.body),
        "the timestamp is signed"
    );
    assert_eq!(header(&requested, "x-hookwire-event"), "approval.requested");
    // The verifier docs/approvals.md gives, on this delivery and the file
    // the service read (its trailing newline included).
    let signed = header(&requested, SIGNATURE_HEADER);
    assert!(docs_verify(&secret, ts, &signed, &requested.body));
    let mut tampered = requested.body.to_vec();
    tampered.push(b' ');
    assert!(!docs_verify(&secret, ts, &signed, &tampered));

    let decider = ApproverIdentity::in_process("ann");
    let p = queue.get(&id).unwrap();
    queue
        .resolve(
            &id,
            &decider,
            ApprovalResolution::approve(&p.request, Verdict::allow()),
        )
        .await
        .unwrap();
    let decided = rx.next("/ok/ann").await.json();
    assert_eq!(decided["event"], "approval.decided");
    assert_eq!(
        decided["decision"],
        json!({"approver": "ann", "outcome": "approve"})
    );

    // An expiry is notified where the request went.
    let short = host
        .submit(
            "r2",
            request("wire_transfer", "s-1"),
            Duration::from_millis(300),
        )
        .unwrap();
    assert_eq!(
        rx.next("/ok/ann").await.json()["event"],
        "approval.requested"
    );
    let expired = rx.next("/ok/ann").await.json();
    assert_eq!(
        (expired["event"].as_str(), expired["event_id"].clone()),
        (Some("approval.expired"), json!(format!("{short}:expired")))
    );

    // Slack and Teams got their shapes of the two requests (requested only).
    let slack_msg = rx.next("/ok/slack").await.json();
    assert!(
        slack_msg["text"]
            .as_str()
            .unwrap()
            .contains("Approval waiting: wire_transfer")
    );
    assert_eq!(
        slack_msg["blocks"][2]["elements"][0]["url"],
        format!("https://approvals.example/#request={id}")
    );
    let teams_msg = rx.next("/ok/teams").await;
    let card = &teams_msg.json()["attachments"][0];
    assert_eq!(
        card["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    assert_eq!(card["content"]["type"], "AdaptiveCard");
    assert_eq!(card["content"]["actions"][0]["type"], "Action.OpenUrl");
    assert!(
        teams_msg.headers.get(SIGNATURE_HEADER).is_none(),
        "no secret, no signature"
    );

    for path in ["/ok/slack", "/ok/teams"] {
        assert!(
            rx.next(path).await.json().to_string().contains(&short),
            "{path}"
        );
    }
    // Nothing but delete_repo reached bob; no payload quotes arguments,
    // the approval block, a token or a secret.
    let bob: Vec<_> = rx
        .all
        .iter()
        .filter(|r| r.path.starts_with("/ok/bob"))
        .collect();
    assert_eq!(bob.len(), 1, "only delete_repo, requested");
    for r in &rx.all {
        assert_clean(std::str::from_utf8(&r.body).unwrap());
        for v in r.headers.values() {
            assert_clean(v.to_str().unwrap());
        }
    }
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failing_receiver_is_retried_then_dead_lettered() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut rx = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path(), "secret", SECRET);
    let dead = dir.path().join("dead.jsonl");
    let queue = ApprovalQueue::new();
    let channel = |name: &str, mode: &str| {
        json!({"name": name, "kind": "webhook", "url": format!("{}/{mode}/{name}/SECRET-PATH", rx.base),
               "secret_file": secret, "approvers": ["ann"], "max_attempts": 3,
               "backoff_base_ms": 5, "backoff_max_ms": 20, "events": ["requested"]})
    };
    let running = serve(
        &queue,
        json!({
            "dead_letter_file": dead,
            "channels": [channel("down", "down"), channel("flaky", "flaky"), channel("refuse", "refuse")]
        }),
    )
    .await;
    let (host, _deliveries) = queue.connect_host("billing-host");
    let first = host
        .submit(
            "r1",
            request("wire_transfer", "s-1"),
            Duration::from_secs(60),
        )
        .unwrap();
    let second = host
        .submit(
            "r2",
            request("wire_transfer", "s-1"),
            Duration::from_secs(60),
        )
        .unwrap();
    // `down`: three attempts at the first, then the second's first attempt,
    // which starts only once the first is dead-lettered.
    for _ in 0..3 {
        let r = rx.next("/down/").await;
        assert_eq!(r.json()["request"]["id"], first);
    }
    let r = rx.next("/down/").await;
    assert_eq!(r.json()["request"]["id"], second);
    // `refuse` (400) is not retried: its second request follows its first.
    let a = rx.next("/refuse/").await;
    let b = rx.next("/refuse/").await;
    assert_eq!(
        (
            a.json()["request"]["id"].clone(),
            b.json()["request"]["id"].clone()
        ),
        (json!(first), json!(second))
    );
    // `flaky`: two 503s, then delivered; the second delivered at once.
    let mut flaky = Vec::new();
    for _ in 0..4 {
        flaky.push(rx.next("/flaky/").await.json()["request"]["id"].clone());
    }
    assert_eq!(
        flaky,
        [json!(first), json!(first), json!(first), json!(second)]
    );

    let text = std::fs::read_to_string(&dead).unwrap();
    // A line another worker is writing may be incomplete; complete ones
    // parse.
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let down = lines
        .iter()
        .find(|l| l["channel"] == "down")
        .expect("down dead-lettered");
    assert_eq!(
        (down["attempts"].clone(), down["error"].clone()),
        (json!(3), json!("HTTP 503"))
    );
    assert_eq!(down["event_id"], format!("{first}:requested"));
    assert_eq!(down["payload"]["request"]["id"], first);
    let refused = lines
        .iter()
        .find(|l| l["channel"] == "refuse")
        .expect("refuse dead-lettered");
    assert_eq!(
        (refused["attempts"].clone(), refused["error"].clone()),
        (json!(1), json!("HTTP 400"))
    );
    assert!(lines.iter().all(|l| l["channel"] != "flaky"));
    assert_clean(&text);
    running.shutdown().await.unwrap();
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("approval notification given up on"),
        "{logged}"
    );
    assert_clean(&logged);
}

#[tokio::test]
async fn a_full_channel_queue_drops_and_counts() {
    let mut rx = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path(), "secret", SECRET);
    let config: NotifyConfig = serde_json::from_value(json!({
        "channels": [
            {"name": "slow", "kind": "webhook", "url": format!("{}/slow/x", rx.base), "queue_capacity": 1,
             "secret_file": secret, "approvers": ["ann"], "events": ["requested"]},
            {"name": "fast", "kind": "webhook", "url": format!("{}/ok/fast", rx.base),
             "secret_file": secret, "approvers": ["ann"], "events": ["requested"]},
        ]
    }))
    .unwrap();
    let access = access();
    let notifications = config.load(&access).unwrap();
    let counters = notifications.counters().clone();
    let mut registry = prometheus_client::registry::Registry::default();
    notifications.register_metrics(&mut registry);
    let queue = ApprovalQueue::new();
    let running = ApprovalServer::with_queue(queue.clone(), access)
        .notify(notifications)
        .spawn_local()
        .await
        .unwrap();
    let (host, _deliveries) = queue.connect_host("billing-host");
    let submit = |n: u32| {
        host.submit(
            format!("r{n}"),
            request("wire_transfer", "s-1"),
            Duration::from_secs(60),
        )
        .unwrap()
    };
    // The slow receiver holds the first delivery.
    let first = submit(1);
    assert_eq!(rx.next("/slow/").await.json()["request"]["id"], first);
    // Three more: one fits the slow channel's queue, two are dropped. The
    // router offers each to `slow` before `fast`, so once `fast` has the
    // last, `slow` was offered all of them.
    let ids: Vec<String> = (2..=4).map(submit).collect();
    loop {
        let r = rx.next("/ok/fast").await;
        if r.json()["request"]["id"] == ids[2] {
            break;
        }
    }
    assert_eq!(counters.get("slow", "dropped"), 2);
    rx.slow.add_permits(2);
    assert_eq!(rx.next("/slow/").await.json()["request"]["id"], ids[0]);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(
            r#"hookwire_approval_notifications_total{channel="slow",result="dropped"} 2"#
        ),
        "{text}"
    );
    assert_eq!(counters.get("fast", "sent"), 4);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn misconfigured_channels_are_refused_by_name_without_their_url() {
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path(), "secret", SECRET);
    let access = access();
    let refuse = |channel: Value| {
        let config: NotifyConfig = serde_json::from_value(json!({"channels": [channel]})).unwrap();
        config.load(&access).unwrap_err().to_string()
    };
    let e = refuse(
        json!({"name": "x", "kind": "webhook", "url": "https://h/SECRET-PATH", "approvers": ["ann"]}),
    );
    assert!(
        e.contains("secret_file") && !e.contains("SECRET-PATH"),
        "{e}"
    );
    let e = refuse(
        json!({"name": "x", "kind": "slack", "url": "http://hooks.example/SECRET-PATH", "approvers": ["ann"]}),
    );
    assert!(e.contains("https://") && !e.contains("SECRET-PATH"), "{e}");
    let e = refuse(
        json!({"name": "x", "kind": "webhook", "url": "https://h/", "secret_file": secret, "approvers": ["carol"]}),
    );
    assert!(e.contains("\"carol\" is not in the access list"), "{e}");
    let e = refuse(json!({"name": "x", "kind": "teams", "url": "https://h/", "approvers": []}));
    assert!(e.contains("at least one approver"), "{e}");
}

/// Runs the Python verifier of docs/approvals.md (its code block, as a
/// reader copies it) on one delivery: whether it accepts it.
fn docs_verify(secret_path: &str, ts: u64, signature: &str, body: &[u8]) -> bool {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/approvals.md"),
    )
    .unwrap();
    let block = docs
        .split("```python\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|code| code.contains("def verify("))
        .expect("docs/approvals.md has the verifier");
    let dir = tempfile::tempdir().unwrap();
    let body_path = dir.path().join("body");
    std::fs::write(&body_path, body).unwrap();
    let script = format!(
        "{block}\nimport sys\nheaders = {{\"X-Hookwire-Timestamp\": sys.argv[2], \"X-Hookwire-Signature\": sys.argv[3]}}\n\
         body = open(sys.argv[4], \"rb\").read()\nsys.exit(0 if verify(load_secret(sys.argv[1]), headers, body) else 1)\n"
    );
    let script_path = dir.path().join("verify.py");
    std::fs::write(&script_path, script).unwrap();
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/venv/bin/python");
    let python = if venv.is_file() {
        venv
    } else {
        "python3".into()
    };
    let status = std::process::Command::new(python)
        .arg(&script_path)
        .args([secret_path, &ts.to_string(), signature])
        .arg(&body_path)
        .status()
        .expect("run python (scripts/setup.sh makes .cache/venv)");
    match status.code() {
        Some(0) => true,
        Some(1) => false,
        other => panic!("the docs' verifier failed to run: {other:?}"),
    }
}
