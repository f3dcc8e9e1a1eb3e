//! Where interception records go (§10.3): a sink trait and an in-memory log.

use std::collections::VecDeque;
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
/// short-lived agents. Unbounded unless made with [`RecordLog::bounded`].
#[derive(Debug, Clone, Default)]
pub struct RecordLog(Arc<Mutex<Log>>);

#[derive(Debug, Default)]
struct Log {
    records: VecDeque<InterceptionRecord>,
    bound: Option<usize>,
    dropped: u64,
}

impl RecordLog {
    /// An empty, unbounded log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log keeping at most `max` records: when full, the oldest
    /// record is dropped (and counted) to make room for the newest.
    pub fn bounded(max: usize) -> Self {
        Self(Arc::new(Mutex::new(Log {
            bound: Some(max),
            ..Log::default()
        })))
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of every record held.
    pub fn records(&self) -> Vec<InterceptionRecord> {
        self.log().records.iter().cloned().collect()
    }

    /// Takes every record held, leaving the log empty.
    pub fn drain(&self) -> Vec<InterceptionRecord> {
        self.log().records.drain(..).collect()
    }

    /// How many records a bounded log dropped to stay within its bound.
    pub fn dropped(&self) -> u64 {
        self.log().dropped
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
        let mut log = self.log();
        if let Some(max) = log.bound {
            if max == 0 {
                log.dropped += 1;
                return;
            }
            while log.records.len() >= max {
                log.records.pop_front();
                log.dropped += 1;
            }
        }
        log.records.push_back(record.clone());
    }
}
