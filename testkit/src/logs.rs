//! Every log line of a test process, for the checks that no secret ever
//! reaches a log: one global `tracing` subscriber at TRACE writing into a
//! shared buffer, installed once whichever test asks first.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// The buffer every log line of this process is written to once
/// [`process_logs`] has been called.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// What has been logged so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber as the process's global default on
/// the first call and returns its buffer; later calls return the same one.
/// A test binary that calls this should hold only tests that tolerate
/// TRACE logging of everything that runs after it.
pub fn process_logs() -> LogCapture {
    static LOGS: OnceLock<LogCapture> = OnceLock::new();
    LOGS.get_or_init(|| {
        let capture = LogCapture::default();
        let writer = capture.clone();
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init();
        capture
    })
    .clone()
}
