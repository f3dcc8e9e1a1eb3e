//! Where interception records go (§10.3): a sink trait and an in-memory log.

use std::sync::{Arc, Mutex, PoisonError};

use hookwire::InterceptionRecord;

/// Receives one payload-free record per emission, in emission completion
/// order. Called on the emission path: keep it fast, or hand the record to a
/// channel.
pub trait RecordSink: Send + Sync + 'static {
    /// Takes one record.
    fn record(&self, record: &InterceptionRecord);
}

/// An in-memory record log, cheap to clone and share: for tests, demos and
/// short-lived agents.
#[derive(Debug, Clone, Default)]
pub struct RecordLog(Arc<Mutex<Vec<InterceptionRecord>>>);

impl RecordLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every record so far.
    pub fn records(&self) -> Vec<InterceptionRecord> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records of one session, sorted by sequence.
    pub fn session(&self, session_id: &str) -> Vec<InterceptionRecord> {
        let mut out: Vec<_> = self
            .records()
            .into_iter()
            .filter(|r| r.session_id == session_id)
            .collect();
        out.sort_by_key(|r| r.sequence);
        out
    }
}

impl RecordSink for RecordLog {
    fn record(&self, record: &InterceptionRecord) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record.clone());
    }
}
