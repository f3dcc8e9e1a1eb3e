//! A stdio upstream: the server command as a child process, one JSON-RPC
//! message per line on its stdin and stdout, its stderr passed through.
//! A writer task owns stdin, a reader task reads stdout bounded per line;
//! the child is killed when the session drops it.

use std::process::Stdio as ProcessStdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc};

use super::shared::{Failure, Shared};
use crate::jsonrpc::{self, Message};
use crate::lines::{Line, read_line};

/// How long a child whose stdin was closed may take to exit before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Lines queued for the child's stdin.
const WRITE_QUEUE: usize = 64;

/// The child and the queue to its stdin.
pub(super) struct Stdio {
    tx: Mutex<Option<mpsc::Sender<String>>>,
    child: Arc<Mutex<Option<Child>>>,
    /// Set once the session closes the child: its end is expected.
    closing: Arc<AtomicBool>,
}

impl Stdio {
    /// Spawns `program` and the tasks that write its stdin and read its
    /// stdout (routing what it sends through `shared`).
    pub(super) fn spawn(
        program: &str,
        args: &[String],
        shared: Arc<Shared>,
    ) -> Result<Self, Failure> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(ProcessStdio::piped())
            .stdout(ProcessStdio::piped())
            .stderr(ProcessStdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Failure::Failed(format!("cannot start {program:?}: {e}")))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Failure::Failed("the child has no stdin or stdout".into()));
        };
        let child = Arc::new(Mutex::new(Some(child)));
        let (tx, mut rx) = mpsc::channel::<String>(WRITE_QUEUE);
        let writer_shared = shared.clone();
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                let written = async {
                    stdin.write_all(line.as_bytes()).await?;
                    stdin.write_all(b"\n").await?;
                    stdin.flush().await
                };
                if let Err(e) = written.await {
                    writer_shared.break_with(format!("cannot write to the upstream: {e}"));
                    return;
                }
            }
            // Dropping stdin closes it: the child's signal to exit.
        });
        let reader_child = child.clone();
        let closing = Arc::new(AtomicBool::new(false));
        let expected = closing.clone();
        tokio::spawn(async move {
            let mut out = BufReader::new(stdout);
            let reason = loop {
                match read_line(&mut out, shared.max_bytes).await {
                    Ok(Line::Text(bytes)) => match jsonrpc::decode(&bytes, shared.max_bytes) {
                        Ok(m) => shared.route(m).await,
                        Err(e) => break format!("the upstream sent a malformed message ({e})"),
                    },
                    Ok(Line::Oversized) => {
                        break format!(
                            "the upstream sent a message over {} bytes",
                            shared.max_bytes
                        );
                    }
                    Ok(Line::Eof) => break exit_reason(&reader_child).await,
                    Err(e) => break format!("cannot read from the upstream: {e}"),
                }
            };
            if expected.load(Ordering::Acquire) {
                tracing::debug!(reason = %reason, "mcp upstream closed");
            } else {
                tracing::warn!(reason = %reason, "mcp upstream connection broken");
            }
            shared.break_with(reason);
            // A child that broke the protocol is not left running.
            if let Some(c) = reader_child.lock().await.as_mut() {
                let _ = c.start_kill();
            }
        });
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            child,
            closing,
        })
    }

    /// Queues one message for the child's stdin.
    pub(super) async fn send(&self, message: &Message) -> Result<(), Failure> {
        let tx = self.tx.lock().await.clone();
        let Some(tx) = tx else {
            return Err(Failure::Failed("the upstream's stdin is closed".into()));
        };
        tx.send(message.encode())
            .await
            .map_err(|_| Failure::Failed("the upstream's stdin is closed".into()))
    }

    /// Closes the child's stdin, waits for its exit within the grace,
    /// then kills it.
    pub(super) async fn close(&self) {
        self.closing.store(true, Ordering::Release);
        self.tx.lock().await.take();
        let mut guard = self.child.lock().await;
        if let Some(child) = guard.as_mut()
            && tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
        {
            let _ = child.kill().await;
        }
        guard.take();
    }
}

/// Why the child's stdout ended: its exit status when it has exited
/// within a moment, else a closed stdout.
async fn exit_reason(child: &Mutex<Option<Child>>) -> String {
    let mut guard = child.lock().await;
    let Some(c) = guard.as_mut() else {
        return "the upstream was stopped".into();
    };
    match tokio::time::timeout(Duration::from_millis(500), c.wait()).await {
        Ok(Ok(status)) => format!("the upstream exited ({status})"),
        _ => "the upstream closed its stdout".into(),
    }
}
