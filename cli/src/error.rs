//! The one error type of the `hookwire` command.

/// What stopped a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The host library refused something: a declaration (with its class
    /// and findings), a registration, an endpoint.
    #[error(transparent)]
    Host(#[from] hookwire_client::Error),
    /// An interceptor service could not be served.
    #[error(transparent)]
    Serve(#[from] hookwire_server::Error),
    /// The approval service (`hookwire approvals serve`) could not be
    /// served, or its access list, certificates or store were unusable.
    #[error(transparent)]
    Approvals(#[from] hookwire_approvals::Error),
    /// The OTLP export asked for with `--otlp-endpoint` could not be set up.
    #[error(transparent)]
    Telemetry(#[from] hookwire_telemetry::Error),
    /// `hookwire check` found endpoints that are down or answer wrongly.
    #[error("{0} of the declared endpoints failed their checks")]
    Unhealthy(usize),
    /// A signing key, a signed record log or its checkpoint failed.
    #[error(transparent)]
    Audit(#[from] hookwire_audit::AuditError),
    /// `hookwire policy` could not load, evaluate or serve policies.
    #[error(transparent)]
    Policy(#[from] hookwire_policy::Error),
    /// `hookwire gateway` could not be configured or served.
    #[error(transparent)]
    Gateway(#[from] hookwire_gateway::Error),
    /// `hookwire hooks serve` could not be configured or served.
    #[error(transparent)]
    Hooks(#[from] hookwire_hooks::Error),
    /// `hookwire mcp` could not be configured or served.
    #[error(transparent)]
    Mcp(#[from] hookwire_mcp::Error),
    /// `hookwire policy test` found failing tests, or `eval` a bad input.
    #[error("policy: {0}")]
    PolicyTests(String),
    /// `hookwire approvals serve` was given unusable settings. Never
    /// quotes a token, hash, key or database URL.
    #[error("approvals: {0}")]
    ApprovalsConfig(String),
    /// An approver command (`approvals list|show|approve|reject`) could
    /// not reach the service, was refused, or its decision did not count.
    /// Says what to do; never quotes the token.
    #[error("approvals: {0}")]
    ApprovalsClient(String),
}
