//! The third transport's services: one Python process
//! (`tests/fixtures/conformance/python_services.py`, on the hookwire Python
//! package from the venv `scripts/setup.sh` makes) serves every scripted
//! interceptor of the run. For each, the harness serves the CTK's scripted
//! interceptor on loopback as the script the Python service consults, and
//! asks the process for a service in front of it: the host talks to Python
//! only, over the Multiplex stream its manifest declares.
//!
//! The process is started on first use and ended by [`shutdown`]; control
//! is one JSON line each way on its stdin and stdout, every answer awaited
//! with a bound.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::*;

/// Bound on the process starting and on each service it opens.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The running process: its stdin for control lines, its stdout's lines.
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next: u64,
}

/// The run's one process, started by the first [`open`].
static PROCESS: Mutex<Option<Process>> = Mutex::new(None);

impl Process {
    fn start() -> Result<Self, String> {
        let root = hookwire_testkit::workspace_root();
        let python = root.join(".cache/venv/bin/python");
        let stamp = root.join(".cache/venv/.hookwire-sdk-python-sha256");
        if !stamp.exists() {
            return Err(format!(
                "{} is missing: run scripts/setup.sh (scripts/test.sh does) before the python transport",
                stamp.display()
            ));
        }
        let script = root.join("tests/fixtures/conformance/python_services.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut process = Self {
            stdin: child.stdin.take(),
            child,
            lines,
            next: 0,
        };
        let ready = process.answer()?;
        if ready["ready"] != true {
            return Err(format!("the python services said {ready} instead of ready"));
        }
        Ok(process)
    }

    fn send(&mut self, line: &Value) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or("the python services' stdin is closed")?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("the python services are gone: {e}"))
    }

    fn answer(&mut self) -> Result<Value, String> {
        let line = self.lines.recv_timeout(ANSWER_TIMEOUT).map_err(|e| {
            format!("no answer from the python services within {ANSWER_TIMEOUT:?}: {e}")
        })?;
        serde_json::from_str(&line).map_err(|e| format!("python services said {line:?}: {e}"))
    }
}

/// A Python service in front of the script at `script` (`host:port`),
/// named `name`: its id (for [`close`]) and endpoint.
pub(crate) fn open(name: &str, script: &str) -> Result<(u64, String), String> {
    let mut guard = PROCESS
        .lock()
        .map_err(|_| "python services lock poisoned")?;
    if guard.is_none() {
        *guard = Some(Process::start()?);
    }
    let process = guard.as_mut().expect("started above");
    process.next += 1;
    let id = process.next;
    process.send(&json!({"op": "open", "id": id, "name": name, "script": script}))?;
    let answer = process.answer()?;
    match answer["port"].as_u64() {
        Some(port) if answer["id"] == id => Ok((id, format!("http://127.0.0.1:{port}"))),
        _ => Err(format!(
            "the python services could not open {name}: {answer}"
        )),
    }
}

/// Stops service `id` (in the background, without an answer).
pub(crate) fn close(id: u64) {
    if let Ok(mut guard) = PROCESS.lock()
        && let Some(process) = guard.as_mut()
    {
        let _ = process.send(&json!({"op": "close", "id": id}));
    }
}

/// Ends the process: its stdin closes, it stops every server and exits
/// (killed when it has not within the bound).
pub(crate) fn shutdown() {
    let Some(mut process) = PROCESS.lock().ok().and_then(|mut g| g.take()) else {
        return;
    };
    drop(process.stdin.take());
    let (tx, rx) = mpsc::channel();
    let mut child = process.child;
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    if rx.recv_timeout(ANSWER_TIMEOUT).is_err() {
        eprintln!(
            "conformance: the python services did not exit within {ANSWER_TIMEOUT:?}; killing {pid}"
        );
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
}
