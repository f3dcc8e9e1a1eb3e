//! The demo example as a user runs it (`cargo run --example demo -- ...`):
//! `--help` with an example, an unknown flag refused rather than ignored,
//! and the session itself, plain and streamed, as the README runs it.
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

/// The README's first command, `cargo run --release --example demo`, and
/// its `-- --stream` variant: the governed session runs to its answer, the
/// rm -rf denied, and the streamed answer's leaked key withheld.
#[test]
fn the_demo_runs_its_session_plain_and_streamed() {
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("policy:destructive_command"), "{stdout}");
    assert!(stdout.contains("answer to the caller:"), "{stdout}");

    let out = run(&["--stream"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("released: "), "{stdout}");
    assert!(stdout.contains("policy:secret_in_output"), "{stdout}");
    assert!(
        !stdout.contains("AKIA"),
        "the leaked key printed:\n{stdout}"
    );
}
