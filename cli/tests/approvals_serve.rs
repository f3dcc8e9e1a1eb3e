//! `hookwire approvals serve`, spawned as an operator runs it: its
//! `--metrics-addr` endpoint counts a request a real host submitted, and
//! a `SIGHUP` reloads its access list, so a revoked token stops working
//! without a restart while an invalid new list is refused and the old one
//! kept.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookwire::Verdict;
use hookwire::approval::StreamResolution;
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire_client::{ApprovalResolver, StreamResolver};
use hookwire_testkit::{metric_value, promtool_accepts};
use serde_json::json;

pub(crate) const HOST_TOKEN: &str = "hwa_cli_test_host_0123456789abcdef0123456789abc";
pub(crate) const ANN_TOKEN: &str = "hwa_cli_test_ann_0123456789abcdef0123456789abcd";
const BOB_TOKEN: &str = "hwa_cli_test_bob_0123456789abcdef0123456789abcd";

/// The command, killed on drop.
pub(crate) struct Serving {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    /// Starts `hookwire approvals serve` with `args`.
    pub(crate) fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args([
                "approvals",
                "serve",
                "--grpc-addr",
                "127.0.0.1:0",
                "--no-web",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "info")
            .spawn()
            .expect("run hookwire approvals serve");
        let (tx, lines) = mpsc::channel();
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
        }
        Self { child, lines }
    }

    /// The last word of the first output line starting with `prefix`.
    pub(crate) fn printed(&self, prefix: &str) -> String {
        self.line(|l| l.starts_with(prefix))
            .split_whitespace()
            .last()
            .unwrap_or_default()
            .to_owned()
    }

    /// The first output line from now on that `wanted` accepts.
    pub(crate) fn line(&self, wanted: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .expect("the command printed the line awaited");
            if wanted(&line) {
                return line;
            }
        }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }
}

fn sha256(token: &str) -> String {
    hookwire_approvals::auth::token_sha256(token)
}

pub(crate) fn access_list(revoked: &[&str]) -> serde_json::Value {
    json!({
        "hosts": [{"name": "billing-agent", "token_sha256": sha256(HOST_TOKEN)}],
        "approvers": [
            {"name": "ann", "token_sha256": sha256(ANN_TOKEN)},
            {"name": "bob", "token_sha256": sha256(BOB_TOKEN)},
        ],
        "revoked_token_sha256": revoked.iter().map(|t| sha256(t)).collect::<Vec<_>>(),
    })
}

pub(crate) fn write(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, value.to_string()).expect("write the access list");
}

/// `Decide` on an unknown request with `token`: the status code says
/// whether the credential was accepted (`Ok`: it got as far as the queue).
async fn decide_with(endpoint: &str, token: &str) -> tonic::Code {
    let mut client = ApprovalServiceClient::connect(endpoint.to_owned())
        .await
        .expect("connect");
    let mut call = tonic::Request::new(pb::DecideRequest {
        approver: String::new(),
        resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
            request_id: "q-unknown".into(),
            approver: String::new(),
            resolution: hookwire::approval::ApprovalResolution::approve(
                &hookwire_testkit::approval_request(1),
                Verdict::allow(),
            ),
        })),
    });
    call.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    match client.decide(call).await {
        Ok(answer) => {
            assert_eq!(
                answer.into_inner().status,
                pb::DecisionStatus::UnknownRequest as i32
            );
            tonic::Code::Ok
        }
        Err(status) => status.code(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_serve_exposes_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    write(&access, &access_list(&[]));
    let serving = Serving::start(&[
        "--access",
        access.to_str().unwrap(),
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let endpoint = serving.printed("approval service:");
    let metrics = serving
        .printed("approval metrics:")
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_owned();
    let text = hookwire_testkit::scrape_metrics(metrics.as_str());
    assert_eq!(metric_value(&text, "hookwire_approval_pending", &[]), 0.0);

    // A real host submits a request; the gauge counts it.
    let resolver = StreamResolver::builder(endpoint)
        .bearer_token(HOST_TOKEN)
        .deadline(Duration::from_secs(30))
        .build()
        .expect("resolver");
    let asking = tokio::spawn({
        let resolver = resolver.clone();
        async move {
            resolver
                .resolve(&hookwire_testkit::approval_request(1))
                .await
        }
    });
    let until = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = hookwire_testkit::scrape_metrics(metrics.as_str());
        if metric_value(&text, "hookwire_approval_pending", &[]) == 1.0 {
            break text;
        }
        assert!(
            Instant::now() < until,
            "the pending request is not counted:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        metric_value(&text, "hookwire_approval_hosts_connected", &[]),
        1.0
    );
    promtool_accepts("approvals serve metrics", &text);
    asking.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_access_list_and_a_revoked_token_stops_working() {
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    write(&access, &access_list(&[]));
    let serving = Serving::start(&[
        "--access",
        access.to_str().unwrap(),
        "--heartbeat-ms",
        "200",
    ]);
    let endpoint = serving.printed("approval service:");
    assert_eq!(decide_with(&endpoint, ANN_TOKEN).await, tonic::Code::Ok);
    assert_eq!(decide_with(&endpoint, BOB_TOKEN).await, tonic::Code::Ok);

    // Ann watches, then her token is revoked.
    let mut client = ApprovalServiceClient::connect(endpoint.clone())
        .await
        .expect("connect");
    let mut watch = tonic::Request::new(futures::stream::pending::<pb::ApproverMessage>());
    watch.metadata_mut().insert(
        "authorization",
        format!("Bearer {ANN_TOKEN}").parse().expect("header"),
    );
    let mut watching = client
        .watch(watch)
        .await
        .expect("Watch opened")
        .into_inner();
    assert!(watching.message().await.expect("the pending set").is_some());

    write(&access, &access_list(&[ANN_TOKEN]));
    serving.signal("HUP");
    serving.line(|l| l.contains("approval access list reloaded"));
    assert_eq!(
        decide_with(&endpoint, ANN_TOKEN).await,
        tonic::Code::Unauthenticated
    );
    assert_eq!(decide_with(&endpoint, BOB_TOKEN).await, tonic::Code::Ok);
    // Her open Watch stream ends too, within a heartbeat.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match watching.message().await {
                Ok(Some(_)) => {}
                Ok(None) => return tonic::Code::Ok,
                Err(status) => return status.code(),
            }
        }
    })
    .await
    .expect("the open stream ended");
    assert_eq!(ended, tonic::Code::Unauthenticated);

    // An invalid list is refused with a line that quotes nothing of it,
    // and the one in force stays.
    let mut broken = access_list(&[ANN_TOKEN]);
    broken["approvers"][1]["token_sha256"] = json!("not-a-hash");
    write(&access, &broken);
    serving.signal("HUP");
    let refused = serving.line(|l| l.contains("access list NOT reloaded"));
    for secret in [ANN_TOKEN, BOB_TOKEN, &sha256(BOB_TOKEN), "not-a-hash"] {
        assert!(!refused.contains(secret), "{refused}");
    }
    assert_eq!(decide_with(&endpoint, BOB_TOKEN).await, tonic::Code::Ok);
    assert_eq!(
        decide_with(&endpoint, ANN_TOKEN).await,
        tonic::Code::Unauthenticated
    );
    // So is a list without approvers.
    let mut empty = access_list(&[]);
    empty["approvers"] = json!([]);
    write(&access, &empty);
    serving.signal("HUP");
    serving.line(|l| l.contains("access list NOT reloaded"));
    assert_eq!(decide_with(&endpoint, BOB_TOKEN).await, tonic::Code::Ok);
}

/// `hookwire approvals ARGS...` as an approver runs it: (success, stdout,
/// stderr).
async fn approver_command(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .arg("approvals")
            .args(&args)
            .env_remove("HOOKWIRE_APPROVER_TOKEN")
            .stdin(Stdio::null())
            .output()
            .expect("run hookwire approvals");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .expect("the command ran")
}

/// Waits on `watching` (an approver's `Watch`) for the next added
/// request; its service id.
async fn next_added(watching: &mut tonic::Streaming<pb::WatchEvent>) -> String {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = watching.message().await.expect("the stream").expect("open");
            if let Some(pb::watch_event::Kind::Added(p)) = event.kind {
                return p.request.expect("a request").request_id;
            }
        }
    })
    .await
    .expect("a request was added")
}

#[tokio::test(flavor = "multi_thread")]
async fn approver_commands_list_show_approve_and_reject_a_hosts_requests() {
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    write(&access, &access_list(&[]));
    let serving = Serving::start(&["--access", access.to_str().unwrap()]);
    let endpoint = serving.printed("approval service:");
    let token_file = dir.path().join("ann-token");
    std::fs::write(&token_file, format!("{ANN_TOKEN}\n")).unwrap();
    let wrong_file = dir.path().join("wrong-token");
    let wrong = "hwa_not_a_token_anyone_was_given_0123456789ab";
    std::fs::write(&wrong_file, wrong).unwrap();
    let run = |words: &[&str], token: &Path| {
        let mut args: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        args.extend(["--endpoint".into(), endpoint.clone()]);
        args.extend(["--token-file".into(), token.to_str().unwrap().to_owned()]);
        approver_command(args)
    };

    // The test watches as bob, to learn when the host's requests arrive.
    let mut client = ApprovalServiceClient::connect(endpoint.clone())
        .await
        .expect("connect");
    let mut watch = tonic::Request::new(futures::stream::pending::<pb::ApproverMessage>());
    watch.metadata_mut().insert(
        "authorization",
        format!("Bearer {BOB_TOKEN}").parse().expect("header"),
    );
    let mut watching = client.watch(watch).await.expect("Watch").into_inner();

    // A host escalates a wire transfer and waits.
    let resolver = StreamResolver::builder(endpoint.clone())
        .bearer_token(HOST_TOKEN)
        .deadline(Duration::from_secs(60))
        .build()
        .expect("resolver");
    let ask = |n: u64| {
        let resolver = resolver.clone();
        tokio::spawn(async move {
            resolver
                .resolve(&hookwire_testkit::approval_request(n))
                .await
                .expect("an answer")
        })
    };
    let first = ask(1);
    let id = next_added(&mut watching).await;

    let (ok, out, err) = run(&["list"], &token_file).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(&id) && out.contains("wire_transfer") && out.contains("big_transfer"),
        "{out}"
    );
    let (ok, out, err) = run(&["list", "--json"], &token_file).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["target"], json!({"amount": 1}));
    let (ok, out, err) = run(&["show", &id, "--json"], &token_file).await;
    assert!(ok, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(shown["context"]["session"]["id"], "s-1");

    // A wrong token is refused, and the error quotes no token.
    let (ok, _, err) = run(&["list"], &wrong_file).await;
    assert!(!ok);
    assert!(err.contains("did not accept this credential"), "{err}");
    assert!(!err.contains(wrong), "{err}");
    let (ok, _, err) = run(&["approve", &id], &wrong_file).await;
    assert!(
        !ok && err.contains("did not accept this credential"),
        "{err}"
    );
    // An unknown id is a clear error.
    let (ok, _, err) = run(&["approve", "q-999999"], &token_file).await;
    assert!(!ok);
    assert!(err.contains("no pending request \"q-999999\""), "{err}");

    // Approve with a note: the host's deny is lifted.
    let (ok, out, err) = run(
        &["approve", &id, "--note", "checked with finance"],
        &token_file,
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("{id} approved"));
    let answer = tokio::time::timeout(Duration::from_secs(20), first)
        .await
        .expect("the host was answered")
        .unwrap();
    assert_eq!(answer.approver.as_deref(), Some("ann"));
    let r = &answer.resolution;
    assert_eq!(
        r.outcome,
        Some(hookwire::approval::ApprovalOutcome::Approve)
    );
    let v = r.verdict.as_ref().unwrap();
    assert_eq!(
        (v.decision, v.message.as_deref()),
        (hookwire::Decision::Allow, Some("checked with finance"))
    );
    // Deciding it again: already decided.
    let (ok, _, err) = run(&["approve", &id], &token_file).await;
    assert!(!ok && err.contains("no pending request"), "{err}");

    // Approve with edits: a transform of $target to the file's JSON.
    let edited = ask(2);
    let id = next_added(&mut watching).await;
    let edit = dir.path().join("args.json");
    std::fs::write(&edit, r#"{"amount": 500}"#).unwrap();
    let (ok, out, err) = run(
        &["approve", &id, "--edit", edit.to_str().unwrap(), "--json"],
        &token_file,
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["status"],
        "accepted"
    );
    let v = edited.await.unwrap().resolution.verdict.unwrap();
    let t = v.transform.expect("a transform");
    assert_eq!(
        (t.path.as_str(), t.value),
        ("$target", json!({"amount": 500}))
    );

    // Reject with a reason: the deny stands, carrying it.
    let rejected = ask(3);
    let id = next_added(&mut watching).await;
    let (ok, _, err) = run(&["reject", &id], &token_file).await;
    assert!(
        !ok && err.contains("--reason"),
        "a reason is required: {err}"
    );
    let (ok, out, err) = run(
        &["reject", &id, "--reason", "over the monthly limit"],
        &token_file,
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("{id} rejected"));
    let r = rejected.await.unwrap().resolution;
    assert_eq!(r.outcome, Some(hookwire::approval::ApprovalOutcome::Reject));
    let v = r.verdict.unwrap();
    assert_eq!(
        (v.decision, v.reason.as_deref(), v.message.as_deref()),
        (
            hookwire::Decision::Deny,
            Some("approval:rejected"),
            Some("over the monthly limit")
        )
    );

    // Every command has --help with an example.
    for command in ["list", "show", "approve", "reject"] {
        let (ok, out, _) = approver_command(vec![command.into(), "--help".into()]).await;
        assert!(ok && out.contains("Example"), "{command}: {out}");
    }
}
