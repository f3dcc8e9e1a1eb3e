//! `hookwire demo`, spawned as an operator would run it: the built-in
//! session, its streaming variant (`--stream`), and a session whose
//! `agent_startup` is denied, which must still end with `agent_shutdown`
//! and print its records.

use std::process::{Command, Output};

use hookwire::{InterceptionPoint, Verdict};
use hookwire_testkit::Scripted;
use serde_json::json;

fn demo(args: &[&str]) -> (Output, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("demo")
        .args(args)
        .output()
        .expect("run hookwire");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// The record line of `point` in the demo's table.
fn row(stdout: &str, point: InterceptionPoint) -> Option<&str> {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(point.as_str()))
}

#[test]
fn the_builtin_demo_session_runs_through_every_point() {
    let (out, stdout, stderr) = demo(&[]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for point in InterceptionPoint::ALL {
        assert!(
            row(&stdout, point).is_some(),
            "no {point} record:\n{stdout}"
        );
    }
    assert!(stdout.contains("policy:destructive_command"), "{stdout}");
    assert!(stdout.contains("answer to the caller:"), "{stdout}");
    // The answer tells what happened to each call, as the chain decided.
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix("answer to the caller: "))
        .unwrap();
    assert!(
        answer
            .contains("I was not allowed to run `rm -rf /tmp/build` (policy:destructive_command)"),
        "{answer}"
    );
    assert!(answer.contains("`du -sh /tmp/build` printed"), "{answer}");
}

#[test]
fn a_declaration_that_allows_the_delete_gets_an_answer_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("allow-all.json");
    std::fs::write(
        &declaration,
        serde_json::json!({
            "declaration": "agent-hooks-declaration/1.0",
            "spec": "agent-hooks/0.1",
            "id": "allow-all",
            "configuration": {"mode": "enforce"},
            "bindings": [{"id": "passthrough", "kind": "hookwire.allow"}]
        })
        .to_string(),
    )
    .unwrap();
    let (out, stdout, stderr) = demo(&["--declaration", declaration.to_str().unwrap()]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix("answer to the caller: "))
        .unwrap_or_else(|| panic!("an answer: {stdout}"));
    assert!(!answer.contains("not allowed"), "{answer}");
    assert!(answer.contains("`rm -rf /tmp/build` printed"), "{answer}");
}

#[test]
fn the_streaming_demo_releases_segments_and_withholds_the_leaked_key() {
    let (out, stdout, stderr) = demo(&["--stream"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The segments before the leak, each printed as it was released, in
    // order and before the records table.
    let released: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("released: "))
        .collect();
    assert_eq!(
        released,
        [
            "\"I was not allowed to run `rm -rf /tmp/build` (policy:destructive_command). \"",
            "\"`du -sh /tmp/build` printed 1.2G /tmp/build. \""
        ],
        "{stdout}"
    );
    let table = stdout.find("seq  point").expect("a records table");
    assert!(stdout.find("released: ").unwrap() < table, "{stdout}");
    // The key, and everything streamed with or after it, never printed.
    for withheld in ["AKIA", "upload the report", "team bucket"] {
        assert!(!stdout.contains(withheld), "{withheld} printed:\n{stdout}");
        assert!(!stderr.contains(withheld), "{withheld} printed:\n{stderr}");
    }
    // The records: the in-process guard denied the third segment's
    // post_model_call, no output was emitted, and the session shut down.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("post_model_call"))
        .collect();
    let deny = rows.last().expect("post_model_call records");
    assert!(deny.contains("deny"), "{deny}");
    assert!(deny.contains("policy:secret_in_output"), "{deny}");
    assert!(deny.trim_end().ends_with("secret-guard"), "{deny}");
    assert!(
        rows[..rows.len() - 1].iter().all(|r| r.contains("allow")),
        "{stdout}"
    );
    assert!(
        row(&stdout, InterceptionPoint::Output).is_none(),
        "{stdout}"
    );
    assert!(
        row(&stdout, InterceptionPoint::AgentShutdown).is_some(),
        "{stdout}"
    );
    assert!(
        stdout.contains("blocked at post_model_call (policy:secret_in_output)"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_startup_still_shuts_down_and_prints_the_records() {
    // A transform at agent_startup is forbidden (§6.1), so the host denies
    // the startup with host_error:transform_target_forbidden.
    let service = Scripted::new("startup-rewriter", |ctx| match ctx.point() {
        InterceptionPoint::AgentStartup => {
            Verdict::transform("$target", json!({"tools_registered": []}))
        }
        _ => Verdict::allow(),
    });
    let calls = service.clone();
    let running = service.serve().await;
    let path = std::env::temp_dir().join(format!(
        "hookwire-cli-demo-{}-startup.json",
        std::process::id()
    ));
    let doc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "rewriter", "kind": "hookwire.grpc",
                      "config": {"endpoint": running.endpoint()}}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();

    let (out, stdout, stderr) = demo(&["--declaration", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    // The host failed closed: exit status 4, saying where.
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "the host failed closed at agent_startup (host_error:transform_target_forbidden)"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("only agent_shutdown may follow"),
        "{stderr}"
    );

    let startup = row(&stdout, InterceptionPoint::AgentStartup).expect("startup record");
    assert!(startup.contains("deny"), "{startup}");
    assert!(
        startup.contains("host_error:transform_target_forbidden"),
        "{startup}"
    );
    let shutdown = row(&stdout, InterceptionPoint::AgentShutdown).expect("shutdown record");
    assert!(shutdown.contains("allow"), "{shutdown}");
    // Nothing ran between the two.
    let records = stdout
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u64>().is_ok())
        })
        .count();
    assert_eq!(records, 2, "{stdout}");
    assert!(
        stdout.contains("blocked at agent_startup (host_error:transform_target_forbidden)"),
        "{stdout}"
    );

    // The service was asked at both points, and the shutdown says why.
    let seen = calls.seen();
    let points: Vec<_> = seen.iter().map(|c| c.point()).collect();
    assert_eq!(
        points,
        [
            InterceptionPoint::AgentStartup,
            InterceptionPoint::AgentShutdown
        ]
    );
    assert_eq!(seen[1].target(), Some(&json!({"reason": "error"})));
    running.shutdown().await.unwrap();
}
