//! The demo example as a user runs it (`cargo run --example demo -- ...`):
//! `--help` with an example, an unknown flag refused rather than ignored.
//! Cargo builds examples for `cargo test` of this crate (or
//! `cargo build -p hookwire-examples --examples`); this test runs the
//! built binary.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The built demo example, next to this test's own binary.
fn demo() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join("examples").join("demo");
    assert!(
        path.exists(),
        "{} is not built: run `cargo test -p hookwire-examples` (which builds the examples) or `cargo build -p hookwire-examples --examples` first",
        path.display()
    );
    path
}

fn run(args: &[&str]) -> Output {
    Command::new(demo())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the demo")
}

#[test]
fn the_demo_has_help_and_refuses_unknown_flags() {
    let out = run(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    assert!(help.contains("--stream"), "{help}");
    assert!(help.contains("Example:"), "{help}");
    // Help only: no session ran.
    assert!(!help.contains("serving on"), "{help}");

    let out = run(&["--bogus"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--bogus"), "{stderr}");
    assert!(out.stdout.is_empty(), "the demo ran anyway");
}
