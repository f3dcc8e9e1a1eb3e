//! The one error type of `hookwire-client`, with [`StreamFailure`], the
//! reason an approval stream could not carry a request.
//!
//! Emissions never fail with an error: every failure on the emission path
//! becomes the spec's `host_error:*` deny with a record. Errors are for
//! configuration mistakes at build time and for misuse of a session's
//! lifecycle (§3.1, §6.1a).

use hookwire::InterceptionPoint;

use hookwire_declaration::Refusal;

/// What went wrong building a host or driving a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two interceptors were registered under the same name.
    #[error("interceptor name {0:?} is registered twice; names must be unique")]
    DuplicateInterceptor(String),
    /// An interceptor name is empty.
    #[error("interceptor names must be non-empty")]
    EmptyInterceptorName,
    /// A remote endpoint URL is not a valid URI.
    #[error("interceptor {name:?}: invalid endpoint {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// The interceptor's name.
        name: String,
        /// The offending endpoint.
        endpoint: String,
        /// Why it was refused.
        reason: String,
    },
    /// A custom identity provider name breaks the §10.1 rules.
    #[error(
        "identity provider name {0:?} must match ^[a-z][a-z0-9_-]*$ and must not start with \"jcs\" (§10.1)"
    )]
    InvalidIdentityProviderName(String),
    /// `agent.id` is empty or `agent.framework` breaks `^[a-z0-9_-]+$`.
    #[error("invalid agent identity: {0}")]
    InvalidAgent(String),
    /// A timeout of zero would deny every call.
    #[error("interceptor {0:?}: timeout must be greater than zero")]
    ZeroTimeout(String),
    /// A session id must be non-empty (§4.1).
    #[error("session id must be non-empty")]
    EmptySessionId,
    /// An emission before `agent_startup` (§3.1).
    #[error("session {0:?} has not emitted agent_startup yet")]
    NotStarted(String),
    /// `agent_startup` was already emitted.
    #[error("session {0:?} already emitted agent_startup")]
    AlreadyStarted(String),
    /// `agent_startup` or `agent_shutdown` was passed to `Session::emit`:
    /// they bracket the session and carry its lifecycle, so they have
    /// their own methods.
    #[error(
        "session {session:?}: {point} is emitted with Session::start or Session::shutdown, not Session::emit"
    )]
    LifecyclePoint {
        /// The session.
        session: String,
        /// The point passed to `emit`.
        point: InterceptionPoint,
    },
    /// An emission after a denied `agent_startup` (§6.1a): only
    /// `agent_shutdown` may follow.
    #[error("session {0:?} was denied at agent_startup; only agent_shutdown may follow")]
    StartupDenied(String),
    /// An emission after `agent_shutdown` (§3.1).
    #[error("session {0:?} is closed")]
    Closed(String),
    /// An emission out of the §3.1 order (rules 3–5, §6.2): a `post_*`
    /// without its own permitted `pre_*`, a second `pre_tool_call` for an
    /// id still open, or (with strict turns) a model, tool or output point
    /// before an `input` permitted the turn. Nothing was emitted.
    #[error("session {session:?}: {point} refused, out of order: {reason}")]
    OutOfOrder {
        /// The session.
        session: String,
        /// The point that was refused.
        point: InterceptionPoint,
        /// Which rule it breaks.
        reason: String,
    },
    /// A session of a declared host was opened with a mode or composition
    /// override: a declared host's configuration is sealed (§7.7.7).
    #[error(
        "session {0:?}: a declared host is sealed; its sessions take no mode or composition overrides"
    )]
    SealedHost(String),
    /// A static metadata entry of a remote binding was refused. The reason
    /// names the rule, never the value.
    #[error("interceptor {name:?}: metadata {key:?}: {reason}")]
    InvalidMetadata {
        /// The interceptor's name.
        name: String,
        /// The metadata key.
        key: String,
        /// Why it was refused.
        reason: String,
    },
    /// A binding's visibility or mutation grant was refused (a member
    /// name that is not `^[a-z][a-z0-9_]*$`, a path outside the §5.2
    /// grammar). The reason names the rule and the entry's position.
    #[error("interceptor {name:?}: {reason}")]
    InvalidGrant {
        /// The interceptor's name.
        name: String,
        /// Why it was refused.
        reason: String,
    },
    /// A host declaration was refused (§7.7.6): its class and findings.
    #[error("{0}")]
    Declaration(Box<Refusal>),
    /// A registry registration was refused (a duplicate or reserved name):
    /// a programming error of the host, not of a document.
    #[error("host registry: {0}")]
    Registry(String),
    /// The approval stream could not carry a request. The approval seam
    /// turns it into `host_error:approval_resolver_failed` (§9).
    #[error("approval stream: {0}")]
    ApprovalStream(StreamFailure),
    /// A `Describe` call to an interceptor service failed.
    #[error("describe {name:?}: {reason}")]
    Describe {
        /// The interceptor's name.
        name: String,
        /// What failed.
        reason: String,
    },
    /// The operating system refused the thread of an
    /// [`AsyncSink`](crate::AsyncSink): without it no record would be
    /// delivered.
    #[error("record sink: no thread for the asynchronous sink: {0}")]
    SinkThread(#[source] std::io::Error),
    /// A `grpc.health.v1` check of an interceptor service failed (the
    /// service is unreachable, refused the call, or does not know
    /// `hookwire.v1.Interceptor`).
    #[error("health {name:?}: {reason}")]
    Health {
        /// The interceptor's name.
        name: String,
        /// What failed.
        reason: String,
    },
}

impl Error {
    /// The refusal, when this error is a refused declaration.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Declaration(r) => Some(r),
            _ => None,
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Self::Declaration(Box::new(r))
    }
}

/// Why the approval stream could not carry a request. Each one is, to the
/// seam, a failed resolver: `host_error:approval_resolver_failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamFailure {
    /// No stream to the service came up in time.
    Unavailable,
    /// The stream ended or broke while the request was pending.
    Lost,
    /// No resolution arrived within the resolver's deadline.
    Deadline,
    /// The service refused or gave up on the request; the reason is the
    /// service's.
    Refused(String),
    /// The resolver was built outside a tokio runtime.
    NoRuntime,
}

impl std::fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable => f.write_str("no stream to the approval service"),
            Self::Lost => f.write_str("the approval stream dropped while the request was pending"),
            Self::Deadline => f.write_str("no resolution within the approval deadline"),
            Self::Refused(reason) => write!(f, "the approval service gave up: {reason}"),
            Self::NoRuntime => {
                f.write_str("a stream resolver must be built within a tokio runtime")
            }
        }
    }
}
