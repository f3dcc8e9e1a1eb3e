//! The upstream TLS flags `gateway` and `mcp` share (`--upstream-ca`,
//! `--upstream-client-cert`, `--upstream-client-key`), read into the
//! edges' one client option ([`UpstreamTls`]); `approvals serve` has the
//! same three for its webhooks (`--webhook-*`).

use std::path::{Path, PathBuf};

use hookwire_edge::https::UpstreamTls;

use crate::error::CliError;

/// TLS toward an `https` upstream beyond the web PKI roots.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct UpstreamTlsArgs {
    /// A PEM bundle of certificate authorities the upstream's certificate
    /// may chain to, beside the web PKI roots (a private CA, a
    /// TLS-inspecting proxy's).
    #[arg(long, value_name = "FILE", requires = "upstream")]
    upstream_ca: Option<PathBuf>,
    /// A PEM client certificate (chain) presented to an upstream that
    /// asks for one (mutual TLS); with `--upstream-client-key`.
    #[arg(long, value_name = "FILE", requires_all = ["upstream", "upstream_client_key"])]
    upstream_client_cert: Option<PathBuf>,
    /// The PEM private key of `--upstream-client-cert`.
    #[arg(long, value_name = "FILE", requires = "upstream_client_cert")]
    upstream_client_key: Option<PathBuf>,
}

impl UpstreamTlsArgs {
    /// The files read and checked; an error names the flag's file, never
    /// its content.
    pub(crate) fn load(&self) -> Result<UpstreamTls, CliError> {
        load(
            self.upstream_ca.as_deref(),
            self.upstream_client_cert.as_deref(),
            self.upstream_client_key.as_deref(),
        )
    }
}

/// [`UpstreamTls`] from a CA bundle and a client certificate and key,
/// each optional: the flags' common reading.
pub(crate) fn load(
    ca: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<UpstreamTls, CliError> {
    UpstreamTls::from_files(ca, cert, key).map_err(|e| CliError::Tls(e.to_string()))
}
