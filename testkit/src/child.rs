//! Child processes a test runs as their users do (the built `hookwire`
//! command, fixture servers in Python): killed and reaped when the test's
//! handle drops, even on a failed assertion, and their output read line by
//! line on a thread so that a test waits on a channel with a bound instead
//! of blocking on a pipe. One definition for the command's tests and the
//! products' tests that run the command.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long [`line_starting`] waits for its line.
const LINE_WAIT: Duration = Duration::from_secs(60);

/// A child process killed (and reaped) when the handle drops, so that no
/// test leaves a server running behind it.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Each line of `child`'s stdout (which must be piped), as it comes.
pub fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    forward(child.stdout.take().expect("the child's stdout is piped"))
}

/// Each line of `child`'s stderr (which must be piped), as it comes.
pub fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    forward(child.stderr.take().expect("the child's stderr is piped"))
}

fn forward(stream: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (60 s at most, then panics) for the line starting with `prefix`;
/// the lines before it are dropped.
pub fn line_starting(rx: &mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = rx
            .recv_timeout(LINE_WAIT)
            .unwrap_or_else(|_| panic!("no line starting with {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// Waits (60 s at most, then panics) for the line holding every one of
/// `words`; the lines read on the way are kept in `read`, for the
/// failure's message.
pub fn line_with(rx: &mpsc::Receiver<String>, words: &[&str], read: &mut Vec<String>) -> String {
    loop {
        let line = rx
            .recv_timeout(LINE_WAIT)
            .unwrap_or_else(|_| panic!("no line with {words:?} in {read:#?}"));
        read.push(line.clone());
        if words.iter().all(|w| line.contains(w)) {
            return line;
        }
    }
}

/// Starts `hookwire policy serve` (the binary `hookwire`) over the Rego
/// files of `policies` on a free loopback port, without watching them;
/// the running service and its endpoint URL, read from its banner.
pub fn policy_serve(hookwire: &Path, policies: &Path) -> (Running, String) {
    let mut policy = Command::new(hookwire)
        .args(["policy", "serve"])
        .arg(policies)
        .args(["--addr", "127.0.0.1:0", "--no-watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = stdout_lines(&mut policy);
    let policy = Running(policy);
    let banner = line_starting(&lines, "policy serving ");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the policy service's URL in its banner")
        .to_owned();
    (policy, endpoint)
}
