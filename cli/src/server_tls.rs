//! TLS and client authentication for the commands that serve interceptor
//! services over gRPC (`policy serve`): one set of flags, applied to the
//! SDK server's builder (`hookwire_server::Server::tls` and `client_ca`).
//! With `--client-ca`, a host without a certificate from that authority is
//! refused at the handshake and no hook runs.

use std::path::{Path, PathBuf};

use hookwire_server::Server;

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

    /// `server` with the TLS settings applied (unchanged without them).
    pub(crate) fn apply(&self, server: Server) -> Result<Server, CliError> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(server);
        };
        let mut server = server.tls(read(cert)?, read(key)?)?;
        if let Some(ca) = &self.client_ca {
            server = server.client_ca(read(ca)?)?;
        }
        Ok(server)
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Tls(format!("cannot read {}: {e}", path.display())))
}
