//! What a verification finds wrong: the first broken line of a log and
//! why it does not verify. A leaf the error type, the line format and the
//! verifier all speak, so none of them depends on another for it.

use std::fmt;

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
