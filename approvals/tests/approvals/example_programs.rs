//! The approval service's example program as a user runs it:
//! `--help` with an example, unknown flags refused, a busy port named in
//! words. Cargo builds examples for `cargo test` of this crate (or
//! `cargo build -p hookwire-approvals --examples`); this test runs the
//! built binaries.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The built example `name`, next to this test's own binary.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo test -p hookwire-approvals` (which builds the examples) or `cargo build -p hookwire-approvals --examples` first",
        path.display()
    );
    path
}

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(example(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the example")
}

#[test]
fn the_example_has_help_with_an_example_and_refuses_unknown_flags() {
    let out = run("approval_service", &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "--help: {help}");
    assert!(help.contains("Example:"), "--help: {help}");
    assert!(
        help.contains("cargo run -p hookwire-approvals --example"),
        "{help}"
    );

    let out = run("approval_service", &["--bogus"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "--bogus: {stderr}");
    assert!(stderr.contains("--bogus"), "{stderr}");
}

#[test]
fn a_busy_port_is_named_in_words() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    for args in [
        ["--grpc", addr.as_str(), "--web", "127.0.0.1:0"],
        ["--grpc", "127.0.0.1:0", "--web", addr.as_str()],
    ] {
        let out = run("approval_service", &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{addr} is already in use")),
            "{stderr}"
        );
        assert!(!stderr.contains("Os {"), "{stderr}");
    }
    let out = run(
        "approval_service",
        &[
            "--grpc",
            "127.0.0.1:0",
            "--web",
            "127.0.0.1:0",
            "--metrics-addr",
            &addr,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{addr} is already in use")),
        "{stderr}"
    );
    drop(busy);
}
