//! The services as child processes: the example policies of
//! `examples/python` (on the `hookwire` Python package) and `examples/node`
//! (on the `@hookwire/sdk` TypeScript package), started on `127.0.0.1:0`
//! (or an owner-only Unix socket), their `PORT <n>` (`SOCKET unix:<path>`)
//! line awaited, their stderr kept for failure messages and their call log
//! (one JSON line per call) read back.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hookwire::json;
use hookwire_testkit as testkit;
use serde_json::Value;

/// The language a service is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Node,
}

impl Lang {
    /// Its name in messages and file names.
    pub fn label(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Node => "node",
        }
    }

    /// The name the service gives itself in `Describe`.
    pub fn service_name(self) -> &'static str {
        match self {
            Self::Python => "python-policy",
            Self::Node => "node-policy",
        }
    }

    fn command(self) -> Command {
        let root = testkit::workspace_root();
        let (program, script, needs) = match self {
            Self::Python => (
                root.join(".cache/venv/bin/python"),
                root.join("examples/python/policy.py"),
                root.join(".cache/venv/.hookwire-sdk-python-sha256"),
            ),
            Self::Node => (
                PathBuf::from("node"),
                root.join("examples/node/policy.js"),
                root.join("sdks/typescript/node_modules/.hookwire-build-sha256"),
            ),
        };
        assert!(
            needs.exists(),
            "{} is missing: run scripts/setup.sh (scripts/test.sh does) before cargo test",
            needs.display()
        );
        let mut cmd = Command::new(program);
        cmd.arg(script);
        cmd
    }
}

/// A running interceptor service: killed on drop, its stderr kept for the
/// failure message, its call log (one JSON line per call) readable.
pub struct Service {
    /// The language it is written in.
    pub lang: Lang,
    child: Child,
    /// What a host binds: `http://127.0.0.1:<port>` or `unix:<path>`.
    endpoint: String,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
    call_log: PathBuf,
}

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

impl Service {
    /// Starts the example policy with `args` on 127.0.0.1:0 and waits for
    /// its `PORT <n>` line.
    pub fn spawn(lang: Lang, args: &[&str]) -> Self {
        Self::spawn_on(lang, &["--host", "127.0.0.1", "--port", "0"], args)
    }

    /// Starts the example policy with `args` on an owner-only Unix socket
    /// at `path` and waits for its `SOCKET unix:<path>` line.
    pub fn spawn_unix(lang: Lang, path: &std::path::Path, args: &[&str]) -> Self {
        let path = path.to_str().expect("a UTF-8 socket path");
        Self::spawn_on(lang, &["--unix", path], args)
    }

    fn spawn_on(lang: Lang, listen: &[&str], args: &[&str]) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let call_log = std::env::temp_dir().join(format!(
            "hookwire-polyglot-{}-{}-{}.jsonl",
            std::process::id(),
            lang.label(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_file(&call_log);
        let mut child = lang
            .command()
            .args(listen)
            .arg("--call-log")
            .arg(&call_log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start the {} service: {e}", lang.label()));

        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        // Keeps draining stdout after the PORT (SOCKET) line so the child
        // never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line.strip_prefix("PORT ") {
                    let _ = tx.send(
                        port.trim()
                            .parse::<u16>()
                            .ok()
                            .filter(|p| *p != 0)
                            .map(|p| format!("http://127.0.0.1:{p}")),
                    );
                } else if let Some(socket) = line.strip_prefix("SOCKET ") {
                    let socket = socket.trim();
                    let _ = tx.send(socket.starts_with("unix:/").then(|| socket.to_owned()));
                }
            }
        });

        let mut service = Self {
            lang,
            child,
            endpoint: String::new(),
            stderr,
            stderr_reader: Some(stderr_reader),
            call_log,
        };
        match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(Some(endpoint)) => service.endpoint = endpoint,
            Ok(None) => service.fail("printed an unusable PORT (SOCKET) line"),
            Err(RecvTimeoutError::Timeout) => {
                service.fail("printed no PORT (SOCKET) line within 30 s")
            }
            Err(RecvTimeoutError::Disconnected) => {
                service.fail("exited before printing its PORT (SOCKET) line")
            }
        }
        service
    }

    fn fail(&mut self, what: &str) -> ! {
        let _ = self.child.kill();
        let status = self.child.wait();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        panic!(
            "the {} service {what} (exit: {status:?}); its stderr:\n{}",
            self.lang.label(),
            self.stderr.lock().unwrap()
        );
    }

    /// The service's endpoint: `http://127.0.0.1:<port>`, or
    /// `unix:<path>` when spawned on a Unix socket.
    pub fn url(&self) -> String {
        self.endpoint.clone()
    }

    /// Every call the service received so far: the point and the context as
    /// the service's helper rebuilt it (spec JSON, `target` included).
    pub fn calls(&self) -> Vec<(String, Value)> {
        let text = std::fs::read_to_string(&self.call_log).unwrap_or_default();
        text.lines()
            .map(|line| {
                let v = json::decode(line).expect("a call log line is exact JSON");
                (
                    v["point"].as_str().unwrap_or_default().to_owned(),
                    v["context"].clone(),
                )
            })
            .collect()
    }

    /// How many calls the service received, by point.
    pub fn calls_by_point(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for (point, _) in self.calls() {
            *counts.entry(point).or_default() += 1;
        }
        counts
    }

    /// How many calls came over each transport (`unary`, `multiplex`), as
    /// the service's package logged them.
    pub fn calls_by_transport(&self) -> BTreeMap<String, usize> {
        let text = std::fs::read_to_string(&self.call_log).unwrap_or_default();
        let mut counts = BTreeMap::new();
        for line in text.lines() {
            let v = json::decode(line).expect("a call log line is exact JSON");
            let transport = v["transport"].as_str().unwrap_or_default().to_owned();
            *counts.entry(transport).or_default() += 1;
        }
        counts
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid} failed");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the service") {
                return status;
            }
            if Instant::now() > deadline {
                self.fail("did not exit after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.call_log);
    }
}
