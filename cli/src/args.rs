//! Arguments and defaults shared by several `hookwire` subcommands: the
//! registry options a declaration is resolved against, and the table of
//! every address a command listens on unless told otherwise (each one
//! distinct, so that any set of commands runs side by side on one
//! machine; docs/operating.md lists the same table).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::CliError;

/// Where a service listens (`hooks serve --listen`, `policy serve
/// --addr`): `HOST:PORT`, or `unix:/path` for an owner-only Unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListenAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix("unix:") {
            Some("") => Err("`unix:` names no socket path".into()),
            Some(path) => Ok(Self::Unix(PathBuf::from(path))),
            None => s
                .parse()
                .map(Self::Tcp)
                .map_err(|e| format!("neither HOST:PORT nor unix:/path ({e})")),
        }
    }
}

/// Where `serve-demo` and `demo --serve` put the demo's policy service.
pub(crate) const DEMO_POLICY_ADDR: &str = "127.0.0.1:50151";
/// Where `serve-demo` and `demo --serve` put the demo's redactor service.
pub(crate) const DEMO_REDACTOR_ADDR: &str = "127.0.0.1:50152";

/// Where `mcp --listen` (given without an address) serves Streamable HTTP.
pub(crate) const MCP_ADDR: &str = "127.0.0.1:8791";

/// `approvals serve --metrics-addr` without an address.
pub(crate) const APPROVALS_METRICS_ADDR: &str = "127.0.0.1:9461";
/// `policy serve --metrics-addr` without an address.
pub(crate) const POLICY_METRICS_ADDR: &str = "127.0.0.1:9463";
/// `gateway --metrics-addr` without an address.
pub(crate) const GATEWAY_METRICS_ADDR: &str = "127.0.0.1:9464";
/// `hooks serve --metrics-addr` without an address.
pub(crate) const HOOKS_METRICS_ADDR: &str = "127.0.0.1:9465";
/// `mcp --metrics-addr` without an address.
pub(crate) const MCP_METRICS_ADDR: &str = "127.0.0.1:9466";
/// `demo --metrics-addr` without an address.
pub(crate) const DEMO_METRICS_ADDR: &str = "127.0.0.1:9467";
/// `serve-demo --metrics-addr` without an address.
pub(crate) const SERVE_DEMO_METRICS_ADDR: &str = "127.0.0.1:9468";

/// Every default listening address of the command: (command, flag,
/// address). An address flag given without a value (`--metrics-addr`,
/// `mcp --listen`) takes its row's address; the others are defaults.
#[cfg(test)]
pub(crate) const LISTEN_DEFAULTS: &[(&str, &str, &str)] = &[
    ("gateway", "--listen", crate::gateway::GATEWAY_ADDR),
    ("gateway", "--metrics-addr", GATEWAY_METRICS_ADDR),
    ("hooks serve", "--listen", hookwire_hooks::relay::HOOKS_ADDR),
    ("hooks serve", "--metrics-addr", HOOKS_METRICS_ADDR),
    ("mcp", "--listen", MCP_ADDR),
    ("mcp", "--metrics-addr", MCP_METRICS_ADDR),
    (
        "approvals serve",
        "--grpc-addr",
        crate::approvals::APPROVALS_GRPC_ADDR,
    ),
    (
        "approvals serve",
        "--web-addr",
        crate::approvals::APPROVALS_WEB_ADDR,
    ),
    ("approvals serve", "--metrics-addr", APPROVALS_METRICS_ADDR),
    ("policy serve", "--addr", crate::policy::POLICY_ADDR),
    ("policy serve", "--metrics-addr", POLICY_METRICS_ADDR),
    ("serve-demo", "--policy", DEMO_POLICY_ADDR),
    ("serve-demo", "--redactor", DEMO_REDACTOR_ADDR),
    ("serve-demo", "--metrics-addr", SERVE_DEMO_METRICS_ADDR),
    ("demo", "--metrics-addr", DEMO_METRICS_ADDR),
];

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
    /// hookwire's standard kinds and the in-process policy kinds
    /// (`hookwire.rego`, `hookwire.cedar`), plus what the options register.
    pub(crate) fn registry(&self) -> Result<hookwire_client::declaration::Registry, CliError> {
        let mut registry = hookwire_policy::embedded::register(
            hookwire_client::declaration::Registry::standard(),
        )?;
        if let Some((url, more)) = self.approval_endpoint.split_first() {
            let mut builder = self.approval_builder(url)?.endpoints(more.iter().cloned());
            if let Some(grace) = self.approval_reattach_grace {
                builder = builder.reattach_grace(std::time::Duration::from_secs(grace));
            }
            registry = registry.approval_stream_with("approval-stream", builder)?;
        }
        Ok(registry)
    }

    /// The approval service URLs given (`--approval-endpoint`), in order.
    pub(crate) fn approval_endpoints(&self) -> &[String] {
        &self.approval_endpoint
    }

    /// A resolver of the approval service at `url` with the options'
    /// credentials (token, authority, client certificate): what the
    /// registry binds, and what `check` probes each endpoint with.
    pub(crate) fn approval_builder(
        &self,
        url: &str,
    ) -> Result<hookwire_client::StreamResolverBuilder, CliError> {
        let read = |path: &std::path::Path| {
            std::fs::read(path).map_err(|e| {
                CliError::ApprovalsConfig(format!("cannot read {}: {e}", path.display()))
            })
        };
        let mut builder = hookwire_client::StreamResolver::builder(url.to_owned());
        if url.starts_with("https://") {
            let client_identity = match (&self.approval_client_cert, &self.approval_client_key) {
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
        Ok(builder)
    }
}

#[cfg(test)]
mod tests {
    use super::LISTEN_DEFAULTS;

    #[test]
    fn every_default_address_is_distinct() {
        let mut seen = std::collections::BTreeMap::new();
        for (command, flag, addr) in LISTEN_DEFAULTS {
            assert!(
                addr.parse::<std::net::SocketAddr>().is_ok(),
                "{command} {flag}: {addr}"
            );
            if let Some(other) = seen.insert(*addr, (command, flag)) {
                panic!("{addr} is the default of both {other:?} and {command} {flag}");
            }
        }
    }

    #[test]
    fn the_operating_guide_lists_every_default() {
        let guide = include_str!("../../docs/operating.md");
        let rows: Vec<&str> = guide
            .lines()
            .filter(|l| l.starts_with("| `hookwire ") && l.matches('|').count() == 5)
            .collect();
        for (command, flag, addr) in LISTEN_DEFAULTS {
            let row = format!("| `hookwire {command}` | `{flag}` | `{addr}` |");
            assert!(
                rows.iter().any(|r| r.starts_with(&row)),
                "docs/operating.md has no row {row}"
            );
        }
        assert_eq!(rows.len(), LISTEN_DEFAULTS.len(), "{rows:#?}");
    }
}
