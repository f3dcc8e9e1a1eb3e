//! The crate's one error type. No variant carries a token, a key or a
//! certificate's bytes: messages are safe to log and to return.

/// What can go wrong in the shared edge machinery.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An `Authorization` header that is not `Bearer` followed by a
    /// token68 (RFC 6750 §2.1, RFC 9110 §11.4); says why, never the value.
    #[error("invalid authorization header: {0}")]
    InvalidAuthorization(&'static str),
    /// An upstream TLS option that cannot be used (a CA bundle, a client
    /// certificate or key that is unreadable or not PEM); names the file,
    /// never its content.
    #[error("upstream TLS: {0}")]
    Tls(String),
    /// A server-sent event over the parser's bound: the stream fails,
    /// since an event the chain cannot see must not pass or be skipped.
    #[error("a server-sent event exceeds {0} bytes")]
    SseEventTooLarge(usize),
    /// A server-sent event that is not UTF-8 (the event-stream format is).
    #[error("a server-sent event is not UTF-8")]
    SseNotUtf8,
    /// A clients file that cannot be used: unreadable, too large, or a
    /// line that is not `NAME SHA256-HEX`; names the file and the line,
    /// never a hash.
    #[error("clients file: {0}")]
    Clients(String),
    /// A Unix socket path that is refused or cannot be bound: names the
    /// path and says why (a loose directory, a live socket, too long).
    #[error("cannot serve on the Unix socket {}: {reason}", path.display())]
    Socket {
        /// The socket path asked for.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// A session key names a session another owner opened: a key is not
    /// a credential (module `sessions`).
    #[error("the session belongs to another principal")]
    SessionNotOwned,
    /// The session table holds as many sessions as it may, none of which
    /// could make room.
    #[error("{0} sessions are open: no room for another")]
    SessionsFull(usize),
    /// The owner holds as many sessions as one owner may, none of which
    /// could make room.
    #[error("every one of the {0} sessions one owner may hold is open")]
    SessionQuota(usize),
    /// The operating system's random generator gave nothing.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}
