//! The verifier: reads a log line by line and checks each line's
//! signature, sequence number and hash link, stopping at the first broken
//! line; against a checkpoint it also catches a cut-off tail and a log
//! replaced wholesale.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::broken::{Broken, Problem};
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
