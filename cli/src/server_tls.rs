//! TLS and client authentication for the commands that serve interceptor
//! services over gRPC (`policy serve`): one set of flags, read into the
//! PEM documents the service's settings carry (which the service applies
//! to the SDK server's builder, `hookwire_server::Server::tls` and
//! `client_ca`).
//! With `--client-ca`, a host without a certificate from that authority is
//! refused at the handshake and no hook runs.

use std::path::{Path, PathBuf};

use hookwire_policy::settings::ServerTls;

use crate::error::CliError;

/// `--tls-cert`, `--tls-key`, `--client-ca`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServerTlsArgs {
    /// Serve over TLS with this PEM certificate chain (hosts connect to
    /// `https://`), with `--tls-key`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Require every host to present a client certificate signed by this
    /// PEM authority (mutual TLS); needs `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) client_ca: Option<PathBuf>,
}

impl ServerTlsArgs {
    /// Whether TLS was asked for.
    pub(crate) fn enabled(&self) -> bool {
        self.tls_cert.is_some()
    }

    /// The PEM documents the flags name, read (`None` without TLS).
    pub(crate) fn pem(&self) -> Result<Option<ServerTls>, CliError> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        Ok(Some(ServerTls {
            cert_pem: read(cert)?,
            key_pem: read(key)?,
            client_ca_pem: self.client_ca.as_deref().map(read).transpose()?,
        }))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Tls(format!("cannot read {}: {e}", path.display())))
}
