//! `hookwire emit`: a rule author's contexts through the real host a
//! declaration builds, against `hookwire policy serve examples/policies`.

use std::path::PathBuf;
use std::process::{Command, Output};

use hookwire_testkit::workspace_root;
use serde_json::{Value, json};

use crate::gateway::policy_serve;

fn write(name: &str, value: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "hookwire-cli-emit-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

/// A declaration binding the policy service at `endpoint` everywhere.
fn declaration(name: &str, endpoint: &str) -> PathBuf {
    write(
        name,
        &json!({
            "declaration": "agent-hooks-declaration/1.0",
            "configuration": {"timeouts": {"interceptor_ms": 2000}},
            "bindings": [
                {"id": "rego", "kind": "hookwire.grpc", "config": {"endpoint": endpoint},
                 "at": ["input", "pre_tool_call", "post_tool_call", "output"]},
                {"id": "passthrough", "kind": "hookwire.allow"},
            ],
        }),
    )
}

fn emit(args: &[&str]) -> (Output, Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("emit")
        .args(args)
        .output()
        .expect("run hookwire emit");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, lines, stderr)
}

fn points(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["point"].as_str().unwrap()).collect()
}

#[test]
fn emit_runs_contexts_through_the_declared_chain() {
    let (_policy, endpoint) = policy_serve(&workspace_root().join("examples/policies"));
    let doc = declaration("chain", &endpoint);
    let doc = doc.to_str().unwrap();

    // One context written for `policy eval`: denied by the Rego policy,
    // each emission one JSON line with its verdict and record.
    let rm_rf = workspace_root().join("examples/policies/contexts/rm_rf.json");
    let (out, lines, stderr) = emit(&["--declaration", doc, "--context", rm_rf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{lines:#?}\n{stderr}");
    assert_eq!(
        points(&lines),
        ["agent_startup", "pre_tool_call", "agent_shutdown"]
    );
    let call = &lines[1];
    assert_eq!(call["proceeds"], json!(false));
    assert_eq!(call["verdict"]["decision"], json!("deny"));
    assert_eq!(
        call["verdict"]["reason"],
        json!("policy:destructive_command")
    );
    assert_eq!(call["record"]["interception_point"], json!("pre_tool_call"));
    assert_eq!(
        call["record"]["verdict"]["reason"],
        json!("policy:destructive_command")
    );
    assert!(
        stderr.contains("denied at pre_tool_call (policy:destructive_command)"),
        "{stderr}"
    );

    // A scripted session that everything lets through: exit 0, and the
    // redacting policy's transform shows in the target.
    let script = write(
        "script",
        &json!([
            {"interception_point": "input",
             "input": {"content": "mail jane.doe@example.com", "role": "user"}},
            {"interception_point": "pre_tool_call",
             "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": "ls /tmp"}}},
        ]),
    );
    let (out, lines, stderr) = emit(&["--declaration", doc, "--script", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{lines:#?}\n{stderr}");
    assert_eq!(
        points(&lines),
        ["agent_startup", "input", "pre_tool_call", "agent_shutdown"]
    );
    assert!(
        lines.iter().all(|l| l["proceeds"] == json!(true)),
        "{lines:#?}"
    );
    let input = lines[1]["target"].to_string();
    assert!(!input.contains("jane.doe@example.com"), "{input}");
    std::fs::remove_file(&script).unwrap();
    std::fs::remove_file(doc).unwrap();
}

#[test]
fn emit_exits_4_when_the_host_fails_closed_and_refuses_bad_input() {
    // Nothing listens on port 9: the chain cannot decide.
    let doc = declaration("down", "http://127.0.0.1:9");
    let doc = doc.to_str().unwrap();
    let rm_rf = workspace_root().join("examples/policies/contexts/rm_rf.json");
    let (out, lines, stderr) = emit(&["--declaration", doc, "--context", rm_rf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{lines:#?}\n{stderr}");
    let reason = lines[1]["verdict"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("host_error:"), "{reason}");
    assert!(
        stderr.contains("the host failed closed at pre_tool_call"),
        "{stderr}"
    );

    // A context naming no point, without --point; a lifecycle point.
    let bare = write(
        "bare",
        &json!({"tool_call": {"id": "c", "name": "bash", "args": {}}}),
    );
    let (out, _, stderr) = emit(&["--declaration", doc, "--context", bare.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("names no interception_point (give --point)"),
        "{stderr}"
    );
    let (out, _, stderr) = emit(&[
        "--declaration",
        doc,
        "--point",
        "agent_startup",
        "--context",
        bare.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("is emitted by the command itself"),
        "{stderr}"
    );
    std::fs::remove_file(&bare).unwrap();
    std::fs::remove_file(doc).unwrap();
}

#[test]
fn emit_decides_with_a_policy_directory_in_process() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["emit", "--point", "pre_tool_call", "--context"])
        .arg(root.join("examples/policies/contexts/rm_rf.json"))
        .arg("--policy")
        .arg(root.join("examples/policies"))
        .output()
        .expect("run hookwire emit --policy");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "a verdict denied: {stdout}");
    assert!(stdout.contains("policy:destructive_command"), "{stdout}");
}

#[test]
fn a_policy_served_on_a_unix_socket_decides_for_a_declared_host() {
    use crate::gateway::{Running, line_starting, lines_of};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = dir.path().join("policy.sock");
    let listen = format!("unix:{}", socket.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve"])
        .arg(workspace_root().join("examples/policies"))
        .args(["--addr", &listen, "--no-watch"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut child);
    let policy = Running(child);
    let banner = line_starting(&lines, "policy serving ");
    assert!(banner.contains(&format!("on {listen} ")), "{banner}");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    let doc = declaration("unix", &listen);
    let rm_rf = workspace_root().join("examples/policies/contexts/rm_rf.json");
    let (out, lines, stderr) = emit(&[
        "--declaration",
        doc.to_str().unwrap(),
        "--context",
        rm_rf.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{lines:#?}\n{stderr}");
    assert_eq!(
        lines[1]["verdict"]["reason"],
        json!("policy:destructive_command")
    );
    std::fs::remove_file(&doc).unwrap();
    drop(policy);
}

#[test]
fn policy_serve_refuses_tls_on_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("unix:{}", dir.path().join("p.sock").display());
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve"])
        .arg(workspace_root().join("examples/policies"))
        .args(["--addr", &listen, "--no-watch"])
        .args(["--tls-cert", "cert.pem", "--tls-key", "key.pem"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("TLS applies to TCP addresses"), "{stderr}");
}
