//! `hookwire audit` end to end with the built binary: a key pair, a demo
//! session writing signed records, a verified log, and a tampered one
//! named by line.

use std::path::Path;
use std::process::{Command, Output};

fn hookwire(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run hookwire")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn keygen_demo_verify_then_tamper() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let keygen = hookwire(&["audit", "keygen", "--out", "audit.key"], d);
    assert!(keygen.status.success(), "{}", stderr(&keygen));
    let secret = std::fs::read_to_string(d.join("audit.key")).unwrap();
    let public = std::fs::read_to_string(d.join("audit.key.pub")).unwrap();
    for part in [&secret, &public] {
        let hex = part.split_whitespace().nth(1).unwrap();
        assert!(!stdout(&keygen).contains(hex), "a key was printed");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("audit.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The demo starts its two services in-process and runs one session.
    let demo = hookwire(
        &[
            "demo",
            "--records",
            "records.jsonl",
            "--signing-key",
            "audit.key",
        ],
        d,
    );
    assert!(demo.status.success(), "{}", stderr(&demo));
    let log = std::fs::read_to_string(d.join("records.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 5, "{log}");
    assert!(stdout(&demo).contains(&format!("signed records: {} lines", lines.len())));
    // Each line's `record` is the §10.3 record alone (the host's facts go
    // beside it): it validates against the official record schema.
    let schemas = hookwire_testkit::schema::schemas();
    for line in &lines {
        let parsed: serde_json::Value = serde_json::from_str(line).unwrap();
        let violations = schemas.record_violations(&parsed["record"]);
        assert_eq!(violations, Vec::<String>::new(), "{line}");
    }

    let verify = |extra: &[&str]| {
        let mut args = vec!["audit", "verify", "records.jsonl", "--public-key"];
        args.push("audit.key.pub");
        args.extend_from_slice(extra);
        hookwire(&args, d)
    };
    let ok = verify(&["--checkpoint", "records.jsonl.checkpoint"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains(&format!("verified {} records", lines.len())),
        "{}",
        stdout(&ok)
    );

    // Turn line 3's decision record into an evaluate-only one.
    let mut tampered: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    assert!(tampered[2].contains("\"mode\":\"enforce\""));
    tampered[2] = tampered[2].replace("\"mode\":\"enforce\"", "\"mode\":\"evaluate_only\"");
    std::fs::write(d.join("records.jsonl"), tampered.join("\n") + "\n").unwrap();
    let bad = verify(&[]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("line 3: the signature does not match"),
        "{}",
        stderr(&bad)
    );

    // Drop the last line: only the checkpoint notices.
    let cut = &lines[..lines.len() - 1];
    std::fs::write(d.join("records.jsonl"), cut.join("\n") + "\n").unwrap();
    assert_eq!(verify(&[]).status.code(), Some(0));
    let short = verify(&["--checkpoint", "records.jsonl.checkpoint"]);
    assert_eq!(short.status.code(), Some(1));
    assert!(
        stderr(&short).contains(&format!("line {}: missing", lines.len())),
        "{}",
        stderr(&short)
    );
}

#[test]
fn every_audit_command_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["audit", "--help"][..],
        &["audit", "keygen", "--help"],
        &["audit", "verify", "--help"],
    ] {
        let out = hookwire(args, dir.path());
        assert!(out.status.success(), "{args:?}");
        assert!(stdout(&out).contains("Usage: hookwire audit"), "{args:?}");
    }
    let demo = hookwire(&["demo", "--help"], dir.path());
    assert!(stdout(&demo).contains("--signing-key <KEYFILE>"));
}
