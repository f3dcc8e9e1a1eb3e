//! The signing sink: a [`RecordSink`] that appends each record as a
//! signed, hash-chained line. This is the one place the crate meets the
//! host, through `hookwire`'s sink trait: any host (`hookwire-client`)
//! takes it, and the crate needs nothing of the host itself.
//!
//! One writer owns the file, the chain state and the key; records reach it
//! either through a bounded queue and a writer thread
//! ([`Delivery::Background`], the default: the emission pays for a clone
//! and a queue push) or under a mutex on the emission path
//! ([`Delivery::Inline`]: the line is written, and synced when the policy
//! says so, before the emission returns). Either way lines never
//! interleave and `seq` follows the order records were handed over.
//!
//! A [`RecordSink`] cannot fail an emission, so a write failure is latched:
//! the sink logs it once (`tracing::error`), stops writing (a log with a
//! hole would no longer say what happened), counts every later record as
//! dropped, and reports it through [`SigningSink::status`] and
//! [`SigningSink::sync`], which an agent can check to stop when its audit
//! trail is gone.

use std::fs::File;
use std::io::Write;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use hookwire::{InterceptionRecord, RecordSink};

use crate::error::AuditError;
use crate::key::AuditKey;
use crate::line::{Hash, checkpoint_line, line_hash, record_line};
use crate::verify::{Checkpoint, checkpoint_path, verify_log};

/// When the sink asks the operating system to put written lines on disk
/// (`fdatasync`). Each sync also rewrites the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// After every line: a crash loses nothing that was written, at the
    /// cost of one disk flush per record (milliseconds on many disks).
    EveryRecord,
    /// After every `n` lines: a crash (of the machine, not the process)
    /// loses at most the last `n - 1` lines, which the checkpoint then
    /// shows as missing only if it was synced after them.
    Every(NonZeroU32),
    /// Never on its own (only on [`SigningSink::sync`]): the operating
    /// system writes back when it likes; cheapest, and a machine crash may
    /// lose the tail.
    Never,
}

impl Default for Fsync {
    /// Every 64 lines.
    fn default() -> Self {
        Self::Every(NonZeroU32::new(64).unwrap_or(NonZeroU32::MIN))
    }
}

impl Fsync {
    fn due(self, unsynced: u32) -> bool {
        match self {
            Self::EveryRecord => true,
            Self::Every(n) => unsynced >= n.get(),
            Self::Never => false,
        }
    }
}

/// How records travel from the emission to the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A bounded queue to a writer thread. The emission only clones the
    /// record; when the queue is full it waits (back-pressure, never a
    /// dropped record).
    Background {
        /// Records the queue holds (at least 1).
        queue: usize,
    },
    /// The emission itself signs and writes under a mutex: the line (and,
    /// per [`Fsync`], its sync) is done before the action proceeds.
    Inline,
}

impl Default for Delivery {
    /// A background writer with a queue of 1024 records.
    fn default() -> Self {
        Self::Background { queue: 1024 }
    }
}

/// How a [`SigningSink`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct SinkOptions {
    fsync: Fsync,
    delivery: Delivery,
    no_checkpoint: bool,
}

impl SinkOptions {
    /// The sync policy (default: every 64 lines).
    pub fn fsync(mut self, fsync: Fsync) -> Self {
        self.fsync = fsync;
        self
    }

    /// How records reach the writer (default: a background writer).
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Whether to keep the signed checkpoint file next to the log (default
    /// yes).
    pub fn checkpoint(mut self, keep: bool) -> Self {
        self.no_checkpoint = !keep;
        self
    }
}

/// What a sink has done so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkStatus {
    /// Lines in the log (including those it held when opened).
    pub lines: u64,
    /// Records this sink could not write (after a failure, every record).
    pub dropped: u64,
    /// The failure that stopped the sink, if one did.
    pub error: Option<String>,
}

impl SinkStatus {
    /// Whether every record handed over so far is in the log.
    pub fn is_healthy(&self) -> bool {
        self.error.is_none() && self.dropped == 0
    }
}

/// Appends every record to a signed, hash-chained JSON-lines log; cheap to
/// clone (clones share the log). See the crate documentation for the line
/// format. When the last clone is dropped, queued records are written, the
/// log is synced (unless [`Fsync::Never`]) and the checkpoint updated.
#[derive(Clone)]
pub struct SigningSink(Arc<Shared>);

struct Shared {
    path: PathBuf,
    counters: Arc<Counters>,
    engine: Engine,
}

enum Engine {
    Inline(Box<Mutex<ChainWriter>>),
    Background {
        queue: Option<SyncSender<Message>>,
        thread: Option<JoinHandle<()>>,
    },
}

enum Message {
    Record(Box<InterceptionRecord>),
    Sync(SyncSender<Result<(), AuditError>>),
}

#[derive(Default)]
struct Counters {
    lines: AtomicU64,
    dropped: AtomicU64,
    error: Mutex<Option<String>>,
}

impl Counters {
    fn error(&self) -> MutexGuard<'_, Option<String>> {
        self.error.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SigningSink {
    /// Opens (or creates) the log at `path`, signing with `key`. An existing
    /// log is verified under the key first, and against its checkpoint when
    /// there is one, and the chain continues from its last line; a broken
    /// or cut-off log is refused rather than extended.
    pub fn open(
        path: impl AsRef<Path>,
        key: AuditKey,
        options: SinkOptions,
    ) -> Result<Self, AuditError> {
        let path = path.as_ref().to_owned();
        let public = key.public();
        let checkpoint = (!options.no_checkpoint).then(|| checkpoint_path(&path));
        let existing = match &checkpoint {
            Some(c) if c.exists() => Some(Checkpoint::load(c, &public)?),
            _ => None,
        };
        // A regular file is verified and extended; anything else (a pipe to
        // a collector, a device) starts a fresh chain.
        let (lines, prev) = if path.metadata().is_ok_and(|m| m.is_file()) {
            let v = verify_log(&path, &public, existing.as_ref())?;
            (v.records, v.head)
        } else if !path.exists() && existing.is_some_and(|c| c.count > 0) {
            return Err(AuditError::io(&path)(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the log is gone but its checkpoint is not",
            )));
        } else {
            (0, crate::line::GENESIS)
        };
        let file = File::options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(AuditError::io(&path))?;
        let counters = Arc::new(Counters::default());
        counters.lines.store(lines, Ordering::Relaxed);
        let writer = ChainWriter {
            path: path.clone(),
            file,
            checkpoint,
            key,
            seq: lines,
            prev,
            fsync: options.fsync,
            unsynced: 0,
            stopped: false,
            counters: counters.clone(),
        };
        let engine = match options.delivery {
            Delivery::Inline => Engine::Inline(Box::new(Mutex::new(writer))),
            Delivery::Background { queue } => {
                let (tx, rx) = sync_channel(queue.max(1));
                let thread = std::thread::Builder::new()
                    .name("hookwire-audit".into())
                    .spawn(move || {
                        run_as_batch();
                        write_queued(writer, rx)
                    })
                    .map_err(AuditError::io(&path))?;
                Engine::Background {
                    queue: Some(tx),
                    thread: Some(thread),
                }
            }
        };
        Ok(Self(Arc::new(Shared {
            path,
            counters,
            engine,
        })))
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Lines written, records dropped, and the failure if one stopped the
    /// sink.
    pub fn status(&self) -> SinkStatus {
        let c = &self.0.counters;
        SinkStatus {
            lines: c.lines.load(Ordering::Acquire),
            dropped: c.dropped.load(Ordering::Acquire),
            error: c.error().clone(),
        }
    }

    /// Waits until every record handed over before this call is written,
    /// syncs the log (whatever the [`Fsync`] policy) and rewrites the
    /// checkpoint. Blocks the calling thread. `Err` when the sink has
    /// stopped after a failure, or this sync failed.
    pub fn sync(&self) -> Result<SinkStatus, AuditError> {
        match &self.0.engine {
            Engine::Inline(writer) => lock(writer).sync()?,
            Engine::Background { queue, .. } => {
                let (reply, answer) = sync_channel(1);
                let sent = queue
                    .as_ref()
                    .is_some_and(|q| q.send(Message::Sync(reply)).is_ok());
                match answer.recv() {
                    Ok(result) if sent => result?,
                    _ => return Err(AuditError::Stopped("the writer thread is gone".into())),
                }
            }
        }
        Ok(self.status())
    }
}

impl std::fmt::Debug for SigningSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningSink")
            .field("path", &self.0.path)
            .field("status", &self.status())
            .finish()
    }
}

impl RecordSink for SigningSink {
    fn record(&self, record: &InterceptionRecord) {
        match &self.0.engine {
            Engine::Inline(writer) => lock(writer).append(record),
            Engine::Background { queue, .. } => {
                let sent = queue
                    .as_ref()
                    .is_some_and(|q| q.send(Message::Record(Box::new(record.clone()))).is_ok());
                if !sent {
                    self.0.counters.dropped.fetch_add(1, Ordering::AcqRel);
                }
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Engine::Background { queue, thread } = &mut self.engine {
            // Closing the queue lets the thread drain it, then close the log.
            drop(queue.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn lock(writer: &Mutex<ChainWriter>) -> MutexGuard<'_, ChainWriter> {
    writer.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How often the writer looks at the queue while records keep coming.
const POLL: Duration = Duration::from_millis(1);

/// How many empty looks it takes before the writer blocks on the queue
/// again.
const IDLE_POLLS: u32 = 5;

/// The writer thread's loop. It blocks on the queue while the log is idle;
/// once records flow it drains the queue every [`POLL`] instead, so that
/// handing over a record finds no blocked receiver to wake: a wake-up per
/// record cost every emission a futex call and the writer a context switch
/// per line. A line therefore reaches the file at most [`POLL`] later than
/// its record was handed over; [`SigningSink::sync`] is answered in turn.
fn write_queued(mut writer: ChainWriter, queue: Receiver<Message>) {
    let mut handle = |message| match message {
        Message::Record(record) => writer.append(&record),
        Message::Sync(reply) => {
            let _ = reply.send(writer.sync());
        }
    };
    while let Ok(first) = queue.recv() {
        handle(first);
        let mut idle = 0;
        while idle < IDLE_POLLS {
            match queue.try_recv() {
                Ok(message) => {
                    handle(message);
                    idle = 0;
                }
                Err(TryRecvError::Empty) => {
                    idle += 1;
                    std::thread::sleep(POLL);
                }
                Err(TryRecvError::Disconnected) => return,
            }
        }
    }
}

/// The file, the chain's state and the key: the only writer of a log.
struct ChainWriter {
    path: PathBuf,
    file: File,
    checkpoint: Option<PathBuf>,
    key: AuditKey,
    /// `seq` of the last line written (0: none).
    seq: u64,
    /// Hash of the last line written.
    prev: Hash,
    fsync: Fsync,
    unsynced: u32,
    stopped: bool,
    counters: Arc<Counters>,
}

impl ChainWriter {
    fn append(&mut self, record: &InterceptionRecord) {
        if self.stopped {
            self.counters.dropped.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let seq = self.seq + 1;
        let mut line = match record_line(
            seq,
            &self.prev,
            &record.to_json(),
            &record.extensions,
            &self.key,
        ) {
            Ok(line) => line,
            Err(e) => return self.stop(&format!("cannot encode record {seq}: {e}"), true),
        };
        let hash = line_hash(&line);
        line.push(b'\n');
        // One write of the whole line: the file is opened for appending and
        // this writer is its only user, so lines never interleave.
        if let Err(e) = self.file.write_all(&line) {
            return self.stop(&format!("cannot write line {seq}: {e}"), true);
        }
        self.seq = seq;
        self.prev = hash;
        self.counters.lines.store(seq, Ordering::Release);
        self.unsynced = self.unsynced.saturating_add(1);
        if self.fsync.due(self.unsynced) {
            let _ = self.sync();
        }
    }

    /// Syncs the log, then rewrites the checkpoint: the checkpoint never
    /// claims a line that is not on disk.
    fn sync(&mut self) -> Result<(), AuditError> {
        if self.stopped {
            return Err(AuditError::Stopped(
                self.counters.error().clone().unwrap_or_default(),
            ));
        }
        let synced = self
            .file
            .sync_data()
            .map_err(AuditError::io(&self.path))
            .and_then(|()| self.write_checkpoint(true));
        match synced {
            Ok(()) => {
                self.unsynced = 0;
                Ok(())
            }
            Err(e) => {
                self.stop(&e.to_string(), false);
                Err(e)
            }
        }
    }

    /// Writes the checkpoint to a temporary file and renames it over the
    /// old one, so a reader sees the old or the new one, never a mix.
    fn write_checkpoint(&self, durable: bool) -> Result<(), AuditError> {
        let Some(path) = &self.checkpoint else {
            return Ok(());
        };
        let mut line = checkpoint_line(self.seq, &self.prev, &self.key);
        line.push(b'\n');
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(&line)?;
            if durable {
                f.sync_data()?;
            }
            std::fs::rename(&tmp, path)
        };
        write().map_err(AuditError::io(path))
    }

    /// Latches a failure: nothing more is written to this log.
    fn stop(&mut self, error: &str, record_lost: bool) {
        if record_lost {
            self.counters.dropped.fetch_add(1, Ordering::AcqRel);
        }
        self.stopped = true;
        let mut slot = self.counters.error();
        if slot.is_none() {
            tracing::error!(
                log = %self.path.display(),
                error,
                "signed record log stopped: later records are dropped"
            );
            *slot = Some(error.to_owned());
        }
    }
}

impl Drop for ChainWriter {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        let closed = if self.fsync == Fsync::Never {
            self.write_checkpoint(false)
        } else {
            self.sync()
        };
        if let Err(e) = closed {
            self.stop(&e.to_string(), false);
        }
    }
}

/// Puts the calling thread (the background writer) under `SCHED_BATCH`, at
/// the default niceness: it keeps its fair share of the CPU, but waking it
/// for a record no longer preempts the thread that handed the record over
/// (the agent's emission, whose latency is what the host is measured by).
/// Hashing, signing and writing a line cost the writer tens of
/// microseconds; woken per record with wake-up preemption, it took the
/// core from the emission that had just queued it. Best effort: a platform
/// or sandbox that refuses the policy leaves the thread as it was.
fn run_as_batch() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
            set_thread_priority_and_policy, thread_native_id,
        };
        if let Err(e) = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Os(Default::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        ) {
            tracing::debug!(error = ?e, "the audit writer keeps the default scheduling policy");
        }
    }
}
