//! The verifier: reads a log line by line and checks each line's
//! signature, sequence number and hash link, stopping at the first broken
//! line; against a checkpoint it also catches a cut-off tail and a log
//! replaced wholesale.

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::AuditError;
use crate::key::PublicKey;
use crate::line::{GENESIS, Hash, line_hash, open_checkpoint_line, open_record_line};

/// What a verified log holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// How many record lines were verified.
    pub records: u64,
    /// The hash of the last line ([`GENESIS`] for an empty log): write it
    /// down, or keep the checkpoint, to detect a truncation later.
    pub head: Hash,
    /// The checkpoint the log was checked against, if any.
    pub checkpoint: Option<Checkpoint>,
}

/// A signed statement that a log's first `count` lines end with a line
/// hashing to `head`. The signing sink keeps one next to its log
/// ([`checkpoint_path`]); copied somewhere the log's writer cannot reach,
/// it proves later that the log was not cut short or replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// How many lines it covers.
    pub count: u64,
    /// The hash of line `count` ([`GENESIS`] when `count` is 0).
    pub head: Hash,
}

impl Checkpoint {
    /// Reads a checkpoint file and checks its signature against `key`.
    pub fn load(path: impl AsRef<Path>, key: &PublicKey) -> Result<Self, AuditError> {
        let path = path.as_ref();
        let text = std::fs::read(path).map_err(AuditError::io(path))?;
        let line = text.strip_suffix(b"\n").unwrap_or(&text);
        open_checkpoint_line(line, key)
            .map(|(count, head)| Self { count, head })
            .map_err(|problem| AuditError::Checkpoint {
                path: path.to_owned(),
                detail: problem.to_string(),
            })
    }
}

/// Where a signing sink keeps the checkpoint of the log at `log`: the same
/// path with `.checkpoint` appended.
pub fn checkpoint_path(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".checkpoint");
    PathBuf::from(p)
}

/// The first broken line of a log and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

/// Why a line does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The line does not end with a newline.
    Incomplete,
    /// The line is not a signed record line.
    Malformed(String),
    /// The signature does not match the line's bytes under the key.
    BadSignature,
    /// The line's `seq` is not its position in the log.
    OutOfSequence {
        /// The line number, which `seq` must equal.
        expected: u64,
        /// The `seq` the line carries.
        found: u64,
    },
    /// `prev` is not the hash of the line before.
    BrokenLink,
    /// The checkpoint covers more lines than the log holds.
    Truncated {
        /// Lines the checkpoint covers.
        expected: u64,
        /// Lines the log holds.
        found: u64,
    },
    /// The line the checkpoint covers last is not the one it signed.
    CheckpointMismatch,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Incomplete => f.write_str("no newline at its end: a torn write, or the file was cut mid-line"),
            Self::Malformed(detail) => write!(f, "not a signed record line: {detail}"),
            Self::BadSignature => f.write_str(
                "the signature does not match: the line was modified, inserted, or signed by another key",
            ),
            Self::OutOfSequence { expected, found } => write!(
                f,
                "seq is {found} where {expected} was expected: a line was deleted, inserted or moved"
            ),
            Self::BrokenLink => f.write_str(
                "prev is not the hash of the line before it: lines were replaced or spliced in from another log",
            ),
            Self::Truncated { expected, found } => write!(
                f,
                "missing: the checkpoint covers {expected} records but the log ends after {found}: its tail was cut off"
            ),
            Self::CheckpointMismatch => f.write_str(
                "not the line the checkpoint covers: the log was rewritten or replaced",
            ),
        }
    }
}

/// Verifies the log at `path` under `key`, and against `checkpoint` when
/// given. `Err(AuditError::Broken)` names the first broken line.
pub fn verify_log(
    path: impl AsRef<Path>,
    key: &PublicKey,
    checkpoint: Option<&Checkpoint>,
) -> Result<Verified, AuditError> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(AuditError::io(path))?;
    verify_lines(std::io::BufReader::new(file), key, checkpoint).map_err(|e| match e {
        Failure::Read(source) => AuditError::Io {
            path: path.to_owned(),
            source,
        },
        Failure::Broken(broken) => AuditError::Broken {
            path: path.to_owned(),
            broken,
        },
    })
}

/// Why [`verify_lines`] stopped.
#[derive(Debug)]
pub(crate) enum Failure {
    Read(std::io::Error),
    Broken(Broken),
}

/// Verifies a log read from `reader`.
pub(crate) fn verify_lines(
    mut reader: impl BufRead,
    key: &PublicKey,
    checkpoint: Option<&Checkpoint>,
) -> Result<Verified, Failure> {
    let broken = |line, problem| Failure::Broken(Broken { line, problem });
    if let Some(c) = checkpoint
        && c.count == 0
        && c.head != GENESIS
    {
        return Err(broken(1, Problem::CheckpointMismatch));
    }
    let mut prev = GENESIS;
    let mut count = 0u64;
    let mut buf = Vec::with_capacity(2048);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(Failure::Read)? == 0 {
            break;
        }
        let number = count + 1;
        if buf.pop() != Some(b'\n') {
            return Err(broken(number, Problem::Incomplete));
        }
        let entry = open_record_line(&buf, key).map_err(|p| broken(number, p))?;
        if entry.seq != number {
            return Err(broken(
                number,
                Problem::OutOfSequence {
                    expected: number,
                    found: entry.seq,
                },
            ));
        }
        if entry.prev != prev {
            return Err(broken(number, Problem::BrokenLink));
        }
        prev = line_hash(&buf);
        count = number;
        if let Some(c) = checkpoint
            && c.count == number
            && c.head != prev
        {
            return Err(broken(number, Problem::CheckpointMismatch));
        }
    }
    if let Some(c) = checkpoint
        && c.count > count
    {
        return Err(broken(
            count + 1,
            Problem::Truncated {
                expected: c.count,
                found: count,
            },
        ));
    }
    Ok(Verified {
        records: count,
        head: prev,
        checkpoint: checkpoint.copied(),
    })
}
