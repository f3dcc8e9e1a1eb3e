//! The crate's one error type.
//!
//! No variant carries the database URL or its password: connection
//! settings are reported by what was wrong with them, and the URL only
//! ever appears redacted ([`crate::redact_url`]).

/// Why the PostgreSQL store could not connect, migrate or answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database URL does not parse as a PostgreSQL URL.
    #[error("invalid PostgreSQL URL {redacted}: {reason}")]
    InvalidUrl {
        /// The URL with its password replaced.
        redacted: String,
        /// What the parser said (never quotes the password).
        reason: String,
    },
    /// The pool could not open its connections.
    #[error("cannot connect to PostgreSQL at {redacted}: {source}")]
    Connect {
        /// The URL with its password replaced.
        redacted: String,
        /// What the driver said.
        source: sqlx::Error,
    },
    /// The schema migrations failed.
    #[error("approval schema migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed.
    #[error("approval store query failed: {0}")]
    Query(#[from] sqlx::Error),
    /// A stored row does not decode (written by a newer or broken writer).
    #[error("stored approval request {id} is unreadable: {reason}")]
    Corrupt {
        /// The queue id of the row.
        id: String,
        /// What was wrong.
        reason: String,
    },
    /// The queue over the store could not start (its first read of the
    /// pending set failed).
    #[error("approval queue: {0}")]
    Queue(#[source] Box<hookwire_approvals::Error>),
    /// An instance id that is empty or too long.
    #[error("an instance id is 1 to {max} characters, got {len}")]
    InstanceId {
        /// The longest allowed.
        max: usize,
        /// What was given.
        len: usize,
    },
}

impl From<Error> for hookwire_approvals::Error {
    fn from(e: Error) -> Self {
        hookwire_approvals::Error::Store(Box::new(e))
    }
}
