//! Where interception records go (§10.3): an in-memory log, and
//! [`AsyncSink`], which takes a slow or faulty sink off the emission path.
//! The sink trait itself, [`RecordSink`], is `hookwire`'s, next to the
//! record, so sink crates need not depend on the host.
//!
//! The host calls every sink on the emission path, synchronously, once per
//! emission. A sink that writes to a file, a database or the network
//! should sit behind an [`AsyncSink`]: a bounded queue drained by a thread
//! of its own, so that the emission only enqueues. When the queue is full
//! the sink either drops the record and counts it ([`Overflow::DropNewest`],
//! the default: emissions never wait) or makes the emission wait for room
//! ([`Overflow::Block`], the durable mode: nothing is dropped, a slow sink
//! slows the agent down). A panic of the wrapped sink is caught, counted
//! and logged; the thread goes on with the next record.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookwire::{InterceptionRecord, RecordSink};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::Error;

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

/// Records an [`AsyncSink`] queues by default before its overflow policy
/// applies.
pub const DEFAULT_SINK_QUEUE: usize = 4096;

/// What an [`AsyncSink`] does with a record when its queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Drop the record and count it ([`AsyncSink::dropped`]): the
    /// emission never waits for the sink.
    #[default]
    DropNewest,
    /// Wait until the queue has room: no record is lost, and a slow sink
    /// applies backpressure to the emissions (the durable mode). On a
    /// multi-threaded tokio runtime the wait moves the runtime's other
    /// tasks off the waiting worker (`block_in_place`).
    Block,
}

/// A [`RecordSink`] that hands each record to a bounded queue drained by
/// a dedicated thread calling the wrapped sink, so that the wrapped sink's
/// latency and panics stay off the emission path. Cheap to clone: clones
/// share the queue, the thread and the counters. The thread ends once
/// every clone is dropped and the queue is drained; call
/// [`flush`](Self::flush) before exiting to wait for it.
#[derive(Clone)]
pub struct AsyncSink {
    queue: SyncSender<Queued>,
    overflow: Overflow,
    counters: Arc<SinkCounters>,
}

impl std::fmt::Debug for AsyncSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncSink")
            .field("overflow", &self.overflow)
            .field("queued", &self.queued())
            .field("delivered", &self.delivered())
            .field("dropped", &self.dropped())
            .field("panicked", &self.panicked())
            .finish()
    }
}

/// The counters of one [`AsyncSink`], shared with its thread.
#[derive(Debug, Default)]
struct SinkCounters {
    delivered: Counter,
    dropped: Counter,
    panicked: Counter,
    queued: Gauge,
}

enum Queued {
    Record(Box<InterceptionRecord>),
    Flush(SyncSender<()>),
}

impl AsyncSink {
    /// Wraps `sink` with a queue of [`DEFAULT_SINK_QUEUE`] records that
    /// drops (and counts) records when full. Fails when the operating
    /// system refuses the sink's thread ([`Error::SinkThread`]).
    pub fn new(sink: impl RecordSink) -> Result<Self, Error> {
        Self::with_queue(sink, DEFAULT_SINK_QUEUE, Overflow::DropNewest)
    }

    /// The durable mode: a queue of `capacity` records that makes
    /// emissions wait when full instead of dropping. Fails when the
    /// operating system refuses the sink's thread ([`Error::SinkThread`]).
    pub fn durable(sink: impl RecordSink, capacity: usize) -> Result<Self, Error> {
        Self::with_queue(sink, capacity, Overflow::Block)
    }

    /// Wraps `sink` with a queue of `capacity` records (at least 1) and
    /// the given overflow policy, drained by a thread of its own. Fails
    /// when the operating system refuses that thread
    /// ([`Error::SinkThread`]): records would otherwise queue up with
    /// nobody to deliver them.
    pub fn with_queue(
        sink: impl RecordSink,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Self, Error> {
        let (queue, records) = sync_channel(capacity.max(1));
        let counters = Arc::new(SinkCounters::default());
        let drained = counters.clone();
        std::thread::Builder::new()
            .name("hookwire-record-sink".into())
            .spawn(move || drain(&sink, &records, &drained))
            .map_err(Error::SinkThread)?;
        Ok(Self {
            queue,
            overflow,
            counters,
        })
    }

    /// Records the wrapped sink returned from.
    pub fn delivered(&self) -> u64 {
        self.counters.delivered.get()
    }

    /// Records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.get()
    }

    /// Records the wrapped sink panicked on (and so lost).
    pub fn panicked(&self) -> u64 {
        self.counters.panicked.get()
    }

    /// Records waiting in the queue.
    pub fn queued(&self) -> u64 {
        u64::try_from(self.counters.queued.get()).unwrap_or_default()
    }

    /// Waits up to `timeout` until every record queued before the call has
    /// been handed to the wrapped sink; `false` on timeout. Waits for room
    /// in the queue whatever the overflow policy.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (done, flushed) = sync_channel(1);
        if self.queue.send(Queued::Flush(done)).is_err() {
            return true;
        }
        flushed.recv_timeout(timeout).is_ok()
    }

    /// Registers this sink's series in `registry` (pass a sub-registry
    /// labelled with the sink's name when a host has several):
    /// `hookwire_host_record_sink_async_delivered_total`, `.._dropped_total`
    /// (queue full), `.._panics_total` and the `.._queued` gauge.
    pub fn register_metrics(&self, registry: &mut Registry) {
        let c = &self.counters;
        registry.register(
            "hookwire_host_record_sink_async_delivered",
            "Records an asynchronous sink handed to the sink it wraps",
            c.delivered.clone(),
        );
        registry.register(
            "hookwire_host_record_sink_async_dropped",
            "Records an asynchronous sink dropped because its queue was full",
            c.dropped.clone(),
        );
        registry.register(
            "hookwire_host_record_sink_async_panics",
            "Records lost because the sink behind an asynchronous sink panicked",
            c.panicked.clone(),
        );
        registry.register(
            "hookwire_host_record_sink_async_queued",
            "Records waiting in an asynchronous sink's queue",
            c.queued.clone(),
        );
    }

    fn blocking_send(&self, item: Queued) -> bool {
        let send = || self.queue.send(item).is_ok();
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(send)
            }
            _ => send(),
        }
    }
}

impl RecordSink for AsyncSink {
    fn record(&self, record: &InterceptionRecord) {
        let item = Queued::Record(Box::new(record.clone()));
        self.counters.queued.inc();
        let queued = match self.overflow {
            Overflow::DropNewest => match self.queue.try_send(item) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            Overflow::Block => self.blocking_send(item),
        };
        if !queued {
            self.counters.queued.dec();
            self.counters.dropped.inc();
        }
    }
}

/// The sink thread: one record at a time, each panic caught and counted.
fn drain(sink: &dyn RecordSink, records: &Receiver<Queued>, counters: &SinkCounters) {
    for item in records {
        match item {
            Queued::Record(record) => {
                counters.queued.dec();
                match std::panic::catch_unwind(AssertUnwindSafe(|| sink.record(&record))) {
                    Ok(()) => {
                        counters.delivered.inc();
                    }
                    Err(_) => {
                        counters.panicked.inc();
                        tracing::error!(
                            session = %record.session_id,
                            sequence = record.sequence,
                            "record sink panicked; the record is lost"
                        );
                    }
                }
            }
            Queued::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use hookwire::Verdict;
    use serde_json::json;

    use super::*;
    use crate::{BoxError, Host, InputRole, interceptor_fn};

    /// A sink that sleeps before logging each record.
    struct Slow(RecordLog, Duration);

    impl RecordSink for Slow {
        fn record(&self, record: &InterceptionRecord) {
            std::thread::sleep(self.1);
            self.0.record(record);
        }
    }

    /// A sink that panics on odd sequences and logs the rest.
    struct PanicsOnOdd(RecordLog);

    impl RecordSink for PanicsOnOdd {
        fn record(&self, record: &InterceptionRecord) {
            assert!(record.sequence % 2 == 0, "odd sequence {}", record.sequence);
            self.0.record(record);
        }
    }

    fn host(sink: AsyncSink) -> Host {
        let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
        Host::builder("agent", "hookwire")
            .interceptor("allow", allow)
            .record_sink(sink)
            .build()
            .unwrap()
    }

    /// Startup then `n - 1` inputs; how long the emissions took, and the
    /// session, still open.
    async fn emit(host: &Host, n: usize) -> (Duration, crate::Session) {
        let session = host.session("s").unwrap();
        let started = Instant::now();
        session.start(["t"]).await.unwrap();
        for i in 1..n {
            session.input(json!(i), InputRole::User).await.unwrap();
        }
        (started.elapsed(), session)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_sink_drops_and_counts_instead_of_stalling_emissions() {
        let log = RecordLog::new();
        let sink = AsyncSink::with_queue(
            Slow(log.clone(), Duration::from_millis(100)),
            4,
            Overflow::DropNewest,
        )
        .unwrap();
        let host = host(sink.clone());
        let (took, _open) = emit(&host, 50).await;
        // Called inline, the sink alone would take 5 s.
        assert!(took < Duration::from_secs(2), "emissions waited: {took:?}");
        assert!(sink.flush(Duration::from_secs(10)));
        assert!(sink.dropped() > 0);
        assert_eq!(sink.panicked(), 0);
        assert_eq!(sink.queued(), 0);
        // Every record is accounted for: delivered or counted as dropped.
        // (The session's own shutdown record, if any, comes after.)
        assert_eq!(sink.delivered() + sink.dropped(), 50);
        assert_eq!(log.records().len() as u64, sink.delivered());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_durable_mode_applies_backpressure_and_loses_nothing() {
        let log = RecordLog::new();
        let sink = AsyncSink::durable(Slow(log.clone(), Duration::from_millis(20)), 2).unwrap();
        let host = host(sink.clone());
        let (took, _open) = emit(&host, 12).await;
        // At most the queue (2) and the record in hand ran ahead.
        assert!(
            took >= Duration::from_millis(20 * 8),
            "no backpressure: {took:?}"
        );
        assert!(sink.flush(Duration::from_secs(10)));
        assert_eq!(sink.dropped(), 0);
        let mut sequences: Vec<i64> = log.records().iter().map(|r| r.sequence).collect();
        sequences.sort_unstable();
        assert_eq!(sequences[..12], (0..12).collect::<Vec<i64>>()[..]);
    }

    #[tokio::test]
    async fn the_durable_mode_works_on_a_current_thread_runtime_too() {
        let log = RecordLog::new();
        let sink = AsyncSink::durable(Slow(log.clone(), Duration::from_millis(1)), 1).unwrap();
        let _open = emit(&host(sink.clone()), 5).await;
        assert!(sink.flush(Duration::from_secs(10)));
        assert_eq!(sink.dropped(), 0);
        assert!(log.records().len() >= 5);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sink_panics_are_counted_and_the_next_records_still_flow() {
        let log = RecordLog::new();
        let sink = AsyncSink::new(PanicsOnOdd(log.clone())).unwrap();
        let host = host(sink.clone());
        let _open = emit(&host, 10).await;
        assert!(sink.flush(Duration::from_secs(10)));
        assert_eq!(sink.panicked(), 5, "sequences 1, 3, 5, 7, 9");
        assert_eq!(sink.delivered(), 5);
        let kept: Vec<i64> = log.records().iter().map(|r| r.sequence).collect();
        assert_eq!(kept, vec![0, 2, 4, 6, 8]);
        let mut registry = Registry::default();
        sink.register_metrics(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("hookwire_host_record_sink_async_panics_total 5"),
            "{text}"
        );
        assert!(
            text.contains("hookwire_host_record_sink_async_delivered_total 5"),
            "{text}"
        );
    }
}
