//! The crate's one error type.
//!
//! Loading a policy directory, evaluating a decision and watching for
//! changes all fail with an [`Error`]. On the emission path every error
//! becomes an error status at the gRPC edge ([`crate::service`]), which the
//! host records as a fail-closed deny; none of them is ever an allow.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong while loading, evaluating or watching policies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory of the policy set could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A `.rego` module does not parse.
    #[error("{path}: {message}")]
    Parse {
        /// The module's file.
        path: PathBuf,
        /// The parser's diagnostic (it quotes the policy, never a context).
        message: String,
    },
    /// A data document (`data.json`, `data.yaml`) is not valid JSON/YAML or
    /// conflicts with another document.
    #[error("data document {path}: {message}")]
    Data {
        /// The document's file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// The modules parse but do not compile together (unsafe variables,
    /// conflicting rules, unknown functions, ...).
    #[error("policies do not compile: {0}")]
    Compile(String),
    /// A package breaks the load-time part of the decision contract
    /// (`points` missing or invalid, a reserved package name, ...).
    #[error("package {package}: {message}")]
    Contract {
        /// The package, e.g. `hookwire.destructive_commands`.
        package: String,
        /// The rule that was broken.
        message: String,
    },
    /// The directory holds no decision package: serving it would allow
    /// everything, so it is refused.
    #[error("{0}: no decision package (a `package hookwire.<name>` declaring `points`)")]
    NoDecisions(PathBuf),
    /// Evaluating a decision failed (a runtime error in a policy, e.g. a
    /// conflict between complete-rule values or a builtin error).
    #[error("evaluation failed: {0}")]
    Evaluation(String),
    /// A built-in call was refused before it ran: it would have built more
    /// than hookwire lets one call build (see `docs/policies.md`).
    #[error("evaluation refused: {0}")]
    Limit(String),
    /// An evaluation ran past its bound and was cut off.
    #[error("evaluation cut off after {limit:?} (policy runs too long)")]
    Bounded {
        /// The configured bound.
        limit: Duration,
    },
    /// No evaluation worker can take the evaluation: every one is still
    /// inside an evaluation past its bound, or the queue is full. Refused
    /// at once rather than queued behind runaway evaluations.
    #[error("evaluation refused: {why} ({workers} workers)")]
    Saturated {
        /// The pool's workers.
        workers: usize,
        /// Which of the two.
        why: &'static str,
    },
    /// The decision document does not follow the contract
    /// (see `docs/policies.md`). Never turned into an allow.
    #[error("ill-formed decision from {package}.{rule}: {message}")]
    IllFormed {
        /// The package that produced the document (or `*` when the problem
        /// is in how documents of several packages combine).
        package: String,
        /// The contract rule (`deny`, `transform`, ...).
        rule: &'static str,
        /// What is wrong with it, without its value.
        message: String,
    },
    /// The context given to `eval` is not a valid agent context.
    #[error("invalid agent context: {0}")]
    Context(#[from] hookwire::InvalidContext),
    /// A Cedar file (policies, schema or test cases) does not parse, breaks
    /// the Cedar mapping, or its policies do not validate against the
    /// schema.
    #[error("{path}: {message}")]
    Cedar {
        /// The file.
        path: PathBuf,
        /// What was wrong (it quotes policies, never a context).
        message: String,
    },
    /// The file watcher could not be started.
    #[error("cannot watch {path}: {source}")]
    Watch {
        /// The watched directory.
        path: PathBuf,
        /// What the watcher said.
        source: notify::Error,
    },
    /// A decision log setting is refused (an include path, ...).
    #[error("decision log: {0}")]
    DecisionLog(String),
    /// A bundle could not be downloaded, unpacked, verified or read; the
    /// serving set, if any, keeps serving.
    #[error("bundle {source_name}: {message}")]
    Bundle {
        /// The bundle's path or URL.
        source_name: String,
        /// What was wrong.
        message: String,
    },
    /// The service's settings were refused before anything started (TLS
    /// on a Unix socket, no policy source).
    #[error("policy serve: {0}")]
    InvalidSettings(String),
    /// The service could not be served: a busy port, a refused socket, an
    /// unusable TLS certificate.
    #[error(transparent)]
    Serve(#[from] hookwire_server::Error),
}
