//! The one error type of hookwire-audit: what stops opening a key or a
//! log, and what a verifier found broken.

use std::path::PathBuf;

use crate::broken::Broken;

/// What went wrong with a key, a log or a checkpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A file could not be read, created or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A key file does not hold a key of the expected kind.
    #[error("{}: {detail}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it (never the key material).
        detail: String,
    },
    /// A signing key file others than its owner may read or write.
    #[error(
        "{}: a signing key must be readable by its owner only (mode {mode:o}; chmod 600 it)",
        path.display()
    )]
    KeyPermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The operating system could not supply randomness for a new key.
    #[error("no randomness for a new key: {0}")]
    Randomness(String),
    /// A checkpoint file is malformed or not signed by the given key.
    #[error("{}: {detail}", path.display())]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A log (being verified, or reopened to append to) is broken at a line.
    #[error("{}: {broken}", path.display())]
    Broken {
        /// The log.
        path: PathBuf,
        /// The first broken line and what is wrong with it.
        broken: Broken,
    },
    /// A signing sink stopped writing after an earlier failure; the log on
    /// disk ends before the records it could not write.
    #[error("the record log stopped after a write failure: {0}")]
    Stopped(String),
}

impl AuditError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
