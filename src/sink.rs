//! Where interception records go (§10.3): the one trait every consumer of
//! records implements — the host's in-memory log, a signed audit file, an
//! OTLP exporter — next to the record it takes, so a sink crate depends on
//! the records, not on the host that emits them.

use crate::record::InterceptionRecord;

/// Receives one payload-free record per emission, in emission completion
/// order. Called on the emission path: keep it fast, or hand the record to a
/// channel (`hookwire_client::AsyncSink` does so for any sink).
pub trait RecordSink: Send + Sync + 'static {
    /// Takes one record.
    fn record(&self, record: &InterceptionRecord);
}
