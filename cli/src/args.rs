//! Arguments and defaults shared by several `hookwire` subcommands: the
//! registry options a declaration is resolved against, and the fixed
//! loopback addresses of the demo services.

use crate::error::CliError;

/// Where `serve-demo` and `demo --serve` put the demo's policy service.
pub(crate) const DEMO_POLICY_ADDR: &str = "127.0.0.1:50151";
/// Where `serve-demo` and `demo --serve` put the demo's redactor service.
pub(crate) const DEMO_REDACTOR_ADDR: &str = "127.0.0.1:50152";

/// Where traces and records go, for the commands that run hosts or
/// services.
#[derive(Debug, clap::Args)]
pub(crate) struct TelemetryArgs {
    /// Export spans (and the demo host's interception records, as logs)
    /// over OTLP/gRPC to the collector at this URL, e.g.
    /// `http://127.0.0.1:4317`. Nothing is exported without it.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
}

/// Options that build the registry a declaration is resolved against.
#[derive(Debug, clap::Args)]
pub(crate) struct RegistryArgs {
    /// Registers the approval service at this URL as the approval resolver
    /// named `approval-stream` (documents select it with
    /// `"approval": {"resolver": "approval-stream"}`). Repeat it for more
    /// instances of one service (sharing a PostgreSQL queue), tried in
    /// turn when a stream ends or a connection fails.
    #[arg(long, value_name = "URL")]
    approval_endpoint: Vec<String>,
    /// Keep pending approval requests this many seconds across a lost
    /// stream and re-attach them on the next one (any instance) with their
    /// original deadlines; without it they fail at once.
    #[arg(long, value_name = "SECONDS", requires = "approval_endpoint")]
    approval_reattach_grace: Option<u64>,
    /// PEM authority of the approval service's certificate (`https://`).
    #[arg(long, value_name = "FILE", requires = "approval_endpoint")]
    approval_ca: Option<std::path::PathBuf>,
    /// File holding the host's approval service token (sent as a bearer
    /// token; never on the command line).
    #[arg(long, value_name = "FILE", requires = "approval_endpoint")]
    approval_token_file: Option<std::path::PathBuf>,
    /// PEM client certificate for a service that authenticates hosts by
    /// mutual TLS (with `--approval-client-key`).
    #[arg(long, value_name = "FILE", requires = "approval_client_key")]
    approval_client_cert: Option<std::path::PathBuf>,
    /// PEM key of `--approval-client-cert`.
    #[arg(long, value_name = "FILE", requires = "approval_client_cert")]
    approval_client_key: Option<std::path::PathBuf>,
}

impl RegistryArgs {
    /// hookwire's standard kinds, plus what the options register.
    pub(crate) fn registry(&self) -> Result<hookwire_client::declaration::Registry, CliError> {
        let mut registry = hookwire_client::declaration::Registry::standard();
        if let Some((url, more)) = self.approval_endpoint.split_first() {
            let read = |path: &std::path::Path| {
                std::fs::read(path).map_err(|e| {
                    CliError::ApprovalsConfig(format!("cannot read {}: {e}", path.display()))
                })
            };
            let mut builder = hookwire_client::StreamResolver::builder(url.clone())
                .endpoints(more.iter().cloned());
            if let Some(grace) = self.approval_reattach_grace {
                builder = builder.reattach_grace(std::time::Duration::from_secs(grace));
            }
            if url.starts_with("https://") {
                let client_identity = match (&self.approval_client_cert, &self.approval_client_key)
                {
                    (Some(cert), Some(key)) => Some(hookwire_client::ClientIdentity::from_pem(
                        read(cert)?,
                        read(key)?,
                    )),
                    _ => None,
                };
                builder = builder.tls(hookwire_client::TlsConfig {
                    ca_pem: self.approval_ca.as_deref().map(read).transpose()?,
                    client_identity,
                    ..hookwire_client::TlsConfig::default()
                });
            }
            if let Some(path) = &self.approval_token_file {
                let token = String::from_utf8(read(path)?).map_err(|_| {
                    CliError::ApprovalsConfig(format!("{} is not UTF-8", path.display()))
                })?;
                builder = builder.bearer_token(token.trim());
            }
            registry = registry.approval_stream_with("approval-stream", builder)?;
        }
        Ok(registry)
    }
}
