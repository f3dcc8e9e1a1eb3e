//! The documentation's scenarios of several processes, run step for step
//! as the pages show them (from the repository's root, the documented
//! addresses): a service in the background, then the commands against it.
//! Each page's block names its test here with `covered-by`.

use crate::blocks::root;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A background `hookwire` process, killed when dropped.
struct Background {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Background {
    /// `hookwire ARGS &`, from the root, both streams read line by line.
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(args)
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hookwire");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        for stream in [
            Box::new(out) as Box<dyn std::io::Read + Send>,
            Box::new(err) as Box<dyn std::io::Read + Send>,
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Self { child, lines }
    }

    /// Waits (bounded) for a line containing `needle`: the service's own
    /// word that it is listening.
    fn wait_for(&self, needle: &str) {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.contains(needle) => return,
                Ok(line) => seen.push(line),
                Err(_) => panic!(
                    "no line with {needle:?} (is the documented port taken?):\n{}",
                    seen.join("\n")
                ),
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `hookwire ARGS` from the root, to completion.
fn hookwire(args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("run hookwire");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// README, "Declaring a host": the demo services in the background, the
/// declaration checked against them, the demo session under it.
#[test]
fn the_readme_quick_start_serves_checks_and_runs_the_demo() {
    let services = Background::start(&["serve-demo"]);
    services.wait_for("redactor serving on http://127.0.0.1:50152");

    let (out, text) = hookwire(&["check", "examples/declarations/demo.json"]);
    assert!(out.status.success(), "hookwire check:\n{text}");

    let (out, text) = hookwire(&["demo", "--declaration", "examples/declarations/demo.json"]);
    assert!(out.status.success(), "hookwire demo:\n{text}");
    assert!(
        text.contains("policy:destructive_command") && text.contains("redactor ($target.content)"),
        "the demo session's rm -rf is denied and its input redacted:\n{text}"
    );
}

/// README and docs/policies.md: the example library served on the
/// declaration's address, the demo session and one emitted context
/// decided by it.
#[test]
fn the_policy_quick_start_serves_and_the_demo_decides() {
    // The pages' command, with a bound generous for a loaded debug build:
    // the outcome is under test here, not the latency.
    let service = Background::start(&[
        "policy",
        "serve",
        "examples/policies",
        "--addr",
        "127.0.0.1:50153",
        "--eval-timeout-ms",
        "10000",
    ]);
    service.wait_for("127.0.0.1:50153");

    let (out, text) = hookwire(&["demo", "--declaration", "examples/declarations/policy.json"]);
    assert!(out.status.success(), "hookwire demo:\n{text}");
    assert!(
        text.contains("deny       policy:destructive_command"),
        "rm -rf denied:\n{text}"
    );
    assert!(text.contains("transform"), "the input redacted:\n{text}");

    let (out, text) = hookwire(&[
        "emit",
        "--declaration",
        "examples/declarations/policy.json",
        "--point",
        "pre_tool_call",
        "--context",
        "examples/policies/contexts/rm_rf.json",
    ]);
    // Exit 3: a verdict denied the emission (docs/policies.md).
    assert_eq!(out.status.code(), Some(3), "hookwire emit:\n{text}");
    assert!(text.contains("policy:destructive_command"), "{text}");
}
