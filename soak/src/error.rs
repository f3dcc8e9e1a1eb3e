//! The soak's one error type.

use std::path::PathBuf;

/// Why a soak could not run, or what it found lost.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// The async runtime could not start.
    #[error("the runtime could not start: {0}")]
    Runtime(std::io::Error),
    /// A replica process could not be started or did not come up.
    #[error("replica {index}: {reason}")]
    Replica {
        /// Its position in the fleet.
        index: usize,
        /// What went wrong.
        reason: String,
    },
    /// The host could not be built.
    #[error("host: {0}")]
    Host(#[from] hookwire_client::Error),
    /// The report could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The report's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The soak ran and found records lost, sequences skipped or failures
    /// unrecorded.
    #[error("the soak lost something: {0}")]
    Lost(String),
}
