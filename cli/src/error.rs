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
    /// `hookwire check` found problems (each printed above): a refused
    /// document, endpoints that are down or answer wrongly, approval
    /// services that refuse the host.
    #[error("check: {0} finding(s), each printed above")]
    Findings(usize),
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
    /// `hookwire policy serve` was given unusable settings (a key, a
    /// decision log sink).
    #[error("policy serve: {0}")]
    PolicyServe(String),
    /// A TLS certificate, key or authority file could not be read.
    /// A client token could not be made (a bad name, no randomness).
    #[error("token: {0}")]
    ClientToken(String),
    #[error("tls: {0}")]
    Tls(String),
    /// The host failed closed on an emission the command ran (`demo`,
    /// `emit`): a `host_error:*` deny, "point (reason)".
    #[error("the host failed closed at {0}")]
    FailedClosed(String),
    /// An emission `emit` ran was denied by a verdict of the chain.
    #[error("denied at {0}")]
    Denied(String),
    /// `hookwire emit` was given an unusable context or script, or an
    /// emission outlived `--emission-timeout-ms`.
    #[error("emit: {0}")]
    Emit(String),
    /// `hookwire audit show` could not read its input, or lines of it are
    /// not interception records (each named on stderr).
    #[error("audit show: {0}")]
    AuditShow(String),
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

impl CliError {
    /// How many findings this error is for `check`: a refused
    /// declaration's own findings, else one.
    pub(crate) fn findings(&self) -> usize {
        match self {
            Self::Host(h) => h.refusal().map_or(1, |r| r.findings.len().max(1)),
            Self::Findings(n) => *n,
            _ => 1,
        }
    }

    /// The process's exit status for this error (see `exit`).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::FailedClosed(_) => crate::exit::FAILED_CLOSED,
            Self::Denied(_) => crate::exit::DENIED,
            _ => crate::exit::FAILURE,
        }
    }
}

/// Prints an error; a refused declaration one finding per line.
pub(crate) fn report(e: &CliError) {
    if let CliError::Host(h) = e
        && let Some(refusal) = h.refusal()
    {
        errln!("refused: {}", refusal.class);
        for f in &refusal.findings {
            let at = if f.pointer.is_empty() {
                "(document)"
            } else {
                &f.pointer
            };
            errln!("  {at}: {}", f.detail);
        }
        if !refusal.accepted.is_empty() {
            errln!("  accepted versions: {}", refusal.accepted.join(", "));
        }
        return;
    }
    errln!("hookwire: {e}");
}
