//! Decision logs, as OPA's: one entry per decision the service makes, with
//! the input's identity and never its payload unless the operator includes
//! paths of it (and masks parts of those).
//!
//! [`DecisionObserver`] is how the service reports each decision (the
//! decision log and the metrics both observe); [`DecisionLog`] turns one
//! into a JSON entry and hands it to a writer thread through a bounded
//! queue. A full queue drops the entry and counts it (never blocks a
//! decision); [`DecisionLog::close`] drains the queue and reports what was
//! written and dropped. Where entries go is a [`LogWriter`]: a JSON-lines
//! file, stdout, or any other (the CLI's OTLP logs).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread;
use std::time::Duration;

use hookwire::{AgentContext, ContextLimits, Verdict};
use prometheus_client::metrics::counter::Counter;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::Error;

/// Entries a log holds before it drops, unless configured.
pub const DEFAULT_BUFFER: usize = 10_000;

/// Longest reason or error text an entry carries (longer ones are cut).
const MAX_TEXT: usize = 1024;

/// Largest included input (serialized) an entry carries; a larger one is
/// replaced by a note saying so.
const MAX_INCLUDED_BYTES: usize = 16 * 1024;

/// How long [`DecisionLog::close`] waits for the writer to finish what is
/// queued (a sink that hangs must not hang the shutdown).
pub const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// Most include or mask paths a log accepts.
const MAX_PATHS: usize = 64;

/// What a decision package contributed to one decision: the contract rules
/// it defined (never their values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRules {
    /// The package, e.g. `hookwire.tools`.
    pub package: String,
    /// The rules that were defined and non-empty (`deny`, `warn`, ...).
    pub rules: Vec<String>,
}

/// One decision, as the service reports it to its observers.
#[derive(Debug)]
pub struct Decision<'a> {
    /// The context decided on.
    pub ctx: &'a AgentContext,
    /// The verdict, or why there is none (the host fails closed).
    pub outcome: Result<&'a Verdict, &'a Error>,
    /// What each package deciding at the point contributed (empty when the
    /// evaluation failed).
    pub packages: &'a [PackageRules],
    /// The generation of the set that decided.
    pub generation: u64,
    /// The bundle revision of that set, when it came from a bundle.
    pub revision: Option<&'a str>,
    /// How long the evaluation took.
    pub duration: Duration,
}

/// Sees every decision the service makes (after it is made).
pub trait DecisionObserver: Send + Sync {
    /// Called once per decision, on the decision's task: keep it short.
    fn observe(&self, decision: &Decision<'_>);
}

/// Where decision log entries are written.
pub trait LogWriter: Send + 'static {
    /// Writes one entry.
    fn write_entry(&mut self, entry: &Value) -> io::Result<()>;
    /// Writes out what is buffered (called when the queue runs empty).
    fn flush(&mut self) -> io::Result<()>;
}

/// JSON lines to a file (appended) or to stdout.
pub struct JsonLines {
    out: BufWriter<Box<dyn Write + Send>>,
}

impl JsonLines {
    /// Appends to the file at `path` (created when missing, readable by
    /// its owner only: entries name agents and sessions).
    pub fn file(path: &Path) -> Result<Self, Error> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file: File = options.open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::new(Box::new(file)))
    }

    /// Writes to stdout.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()))
    }

    /// Writes to `out` (a pipe, a socket, `io::sink()` in a benchmark).
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: BufWriter::new(out),
        }
    }
}

/// A writer chosen at run time (the served service's `Writer` sink).
impl LogWriter for Box<dyn LogWriter> {
    fn write_entry(&mut self, entry: &Value) -> io::Result<()> {
        (**self).write_entry(entry)
    }

    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }
}

impl LogWriter for JsonLines {
    fn write_entry(&mut self, entry: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, entry)?;
        self.out.write_all(b"\n")
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Which parts of the context an entry carries under `input`: nothing
/// unless paths are included; masked paths are removed from what is.
/// Paths are `/`-separated member names from the context's root, as OPA's
/// (`/target/tool_name`; an array index is a number).
#[derive(Debug, Clone, Default)]
pub struct Inclusion {
    include: Vec<Vec<String>>,
    mask: Vec<Vec<String>>,
}

impl Inclusion {
    /// Includes `include` and masks `mask`; refuses malformed or too many
    /// paths.
    pub fn new(include: &[String], mask: &[String]) -> Result<Self, Error> {
        let parse = |paths: &[String]| -> Result<Vec<Vec<String>>, Error> {
            if paths.len() > MAX_PATHS {
                return Err(Error::DecisionLog(format!(
                    "at most {MAX_PATHS} include or mask paths"
                )));
            }
            paths.iter().map(|p| parse_path(p)).collect()
        };
        Ok(Self {
            include: parse(include)?,
            mask: parse(mask)?,
        })
    }

    /// The included, masked parts of `ctx`, or `None` when nothing is
    /// included.
    fn select(&self, ctx: &AgentContext) -> Option<Value> {
        if self.include.is_empty() {
            return None;
        }
        let root = ctx.members();
        let mut picked = Value::Object(Map::new());
        for path in &self.include {
            if let Some(value) = lookup(root, path) {
                place(&mut picked, path, value.clone());
            }
        }
        for path in &self.mask {
            remove(&mut picked, path);
        }
        let size = serde_json::to_vec(&picked).map_or(usize::MAX, |v| v.len());
        if size > MAX_INCLUDED_BYTES {
            return Some(json!({"truncated": format!("{size} bytes, over {MAX_INCLUDED_BYTES}")}));
        }
        Some(picked)
    }
}

fn parse_path(path: &str) -> Result<Vec<String>, Error> {
    let rest = path.strip_prefix('/').ok_or_else(|| {
        Error::DecisionLog(format!(
            "{path}: a path starts with `/` (e.g. /target/tool_name)"
        ))
    })?;
    let parts: Vec<String> = rest.split('/').map(str::to_owned).collect();
    if parts.iter().any(String::is_empty) || parts.len() > 32 {
        return Err(Error::DecisionLog(format!(
            "{path}: empty member name or deeper than 32"
        )));
    }
    Ok(parts)
}

fn lookup<'v>(root: &'v Map<String, Value>, path: &[String]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    let mut at = root.get(first)?;
    for part in rest {
        at = match at {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Puts `value` at `path` in `into`, creating objects on the way (array
/// indexes become object members named by the index).
fn place(into: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = into;
    for part in parents {
        let Value::Object(m) = at else { return };
        at = m
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(m) = at {
        m.insert(last.clone(), value);
    }
}

fn remove(from: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = from;
    for part in parents {
        at = match at {
            Value::Object(m) => match m.get_mut(part) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let Value::Object(m) = at {
        m.remove(last);
    }
}

/// What a closed log did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSummary {
    /// Entries written.
    pub written: u64,
    /// Entries dropped because the queue was full.
    pub dropped: u64,
    /// Entries the writer failed to write.
    pub failed: u64,
    /// Entries still queued when the writer did not finish within
    /// [`CLOSE_BOUND`] (lost).
    pub unwritten: u64,
}

#[derive(Debug, Default)]
struct Counts {
    accepted: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// A decision log: observes decisions and writes one entry each through a
/// bounded queue.
pub struct DecisionLog {
    sender: std::sync::RwLock<Option<SyncSender<Value>>>,
    /// Signalled when the writer thread ends.
    finished: std::sync::Mutex<Option<mpsc::Receiver<()>>>,
    counts: Arc<Counts>,
    inclusion: Inclusion,
    dropped_metric: Option<Counter>,
    limits: ContextLimits,
}

impl std::fmt::Debug for DecisionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionLog").finish_non_exhaustive()
    }
}

impl DecisionLog {
    /// Starts a log writing to `writer`, holding at most `buffer` entries
    /// not yet written.
    pub fn start(
        writer: impl LogWriter,
        buffer: usize,
        inclusion: Inclusion,
    ) -> Result<Self, Error> {
        let (sender, receiver) = mpsc::sync_channel::<Value>(buffer.max(1));
        let counts = Arc::new(Counts::default());
        let written = Arc::clone(&counts);
        let mut writer = writer;
        let (finished_tx, finished) = mpsc::channel::<()>();
        thread::Builder::new()
            .name("hookwire-decision-log".into())
            .spawn(move || {
                while let Ok(entry) = receiver.recv() {
                    let mut next = Some(entry);
                    while let Some(entry) = next.take() {
                        match writer.write_entry(&entry) {
                            Ok(()) => written.written.fetch_add(1, Ordering::Relaxed),
                            Err(_) => written.failed.fetch_add(1, Ordering::Relaxed),
                        };
                        next = receiver.try_recv().ok();
                    }
                    if writer.flush().is_err() {
                        written.failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _ = writer.flush();
                let _ = finished_tx.send(());
            })
            .map_err(|source| Error::Io {
                path: PathBuf::from("<decision log thread>"),
                source,
            })?;
        Ok(Self {
            sender: std::sync::RwLock::new(Some(sender)),
            finished: std::sync::Mutex::new(Some(finished)),
            counts,
            inclusion,
            dropped_metric: None,
            limits: ContextLimits::default(),
        })
    }

    /// Also counts dropped entries in `counter` (a metric).
    #[must_use]
    pub fn count_drops_in(mut self, counter: Counter) -> Self {
        self.dropped_metric = Some(counter);
        self
    }

    /// Entries dropped so far.
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }

    /// Entries written so far.
    pub fn written(&self) -> u64 {
        self.counts.written.load(Ordering::Relaxed)
    }

    /// Stops taking entries, writes what is queued (waiting at most
    /// [`CLOSE_BOUND`]) and reports the counts.
    pub fn close(&self) -> LogSummary {
        self.close_within(CLOSE_BOUND)
    }

    /// [`DecisionLog::close`], waiting at most `bound` for the writer.
    pub fn close_within(&self, bound: Duration) -> LogSummary {
        drop(self.sender.write().ok().and_then(|mut s| s.take()));
        if let Some(finished) = self.finished.lock().ok().and_then(|mut f| f.take()) {
            let _ = finished.recv_timeout(bound);
        }
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let (written, failed) = (load(&self.counts.written), load(&self.counts.failed));
        LogSummary {
            written,
            dropped: load(&self.counts.dropped),
            failed,
            unwritten: load(&self.counts.accepted).saturating_sub(written + failed),
        }
    }

    /// The entry for one decision.
    pub fn entry(&self, decision: &Decision<'_>) -> Value {
        let ctx = decision.ctx;
        let now = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let mut entry = Map::new();
        entry.insert(
            "decision_id".into(),
            format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)).into(),
        );
        entry.insert("time".into(), now.into());
        entry.insert("point".into(), ctx.point().as_str().into());
        if let Some(agent) = ctx.get("agent").and_then(|a| a.get("id")) {
            entry.insert("agent".into(), agent.clone());
        }
        entry.insert("session_id".into(), ctx.session_id().into());
        entry.insert("sequence".into(), ctx.sequence().into());
        if let Ok(digest) = ctx.jcs_sha256_identity(&self.limits) {
            entry.insert("context_digest".into(), digest.into());
        }
        if let Some(tool) = ctx.tool_name() {
            entry.insert("tool".into(), cut(tool).into());
        }
        entry.insert("generation".into(), decision.generation.into());
        if let Some(revision) = decision.revision {
            entry.insert("revision".into(), cut(revision).into());
        }
        let packages: Vec<Value> = decision
            .packages
            .iter()
            .map(|p| json!({"package": p.package, "rules": p.rules}))
            .collect();
        entry.insert("packages".into(), packages.into());
        match decision.outcome {
            Ok(verdict) => {
                entry.insert("decision".into(), verdict.decision.as_str().into());
                if let Some(reason) = &verdict.reason {
                    entry.insert("reason".into(), cut(reason).into());
                }
            }
            Err(error) => {
                entry.insert("decision".into(), "error".into());
                entry.insert("error".into(), cut(&error.to_string()).into());
            }
        }
        entry.insert(
            "duration_us".into(),
            u64::try_from(decision.duration.as_micros())
                .unwrap_or(u64::MAX)
                .into(),
        );
        if let Some(input) = self.inclusion.select(ctx) {
            entry.insert("input".into(), input);
        }
        Value::Object(entry)
    }
}

impl DecisionObserver for DecisionLog {
    fn observe(&self, decision: &Decision<'_>) {
        let entry = self.entry(decision);
        let sent = match self.sender.read() {
            Ok(sender) => match sender.as_ref() {
                Some(sender) => sender.try_send(entry),
                None => Err(TrySendError::Disconnected(entry)),
            },
            Err(_) => Err(TrySendError::Disconnected(entry)),
        };
        if sent.is_ok() {
            self.counts.accepted.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            if let Some(counter) = &self.dropped_metric {
                counter.inc();
            }
        }
    }
}

/// `text`, cut to [`MAX_TEXT`] bytes at a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
