//! Transport security of an approval service: one certificate and key
//! (PEM files) for both the gRPC port and the web page, and optionally the
//! authority whose client certificates are verified (mutual TLS).
//!
//! gRPC uses tonic's rustls server; the page is served by axum over
//! [`TlsListener`], which runs each handshake in its own task (bounded in
//! time) so that a slow or silent client never holds up the others.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;

use crate::error::Error;

/// How long a client has to finish its TLS handshake on the page's port.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in progress at once on the page's port; more wait in the
/// kernel's backlog.
const MAX_HANDSHAKES: usize = 128;

/// The service's certificate, its key, and the client authority.
#[derive(Clone)]
pub struct ServiceTls {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    client_ca_pem: Option<Vec<u8>>,
    require_client_certificate: bool,
}

impl std::fmt::Debug for ServiceTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("ServiceTls")
            .field("client_ca", &self.client_ca_pem.is_some())
            .field(
                "require_client_certificate",
                &self.require_client_certificate,
            )
            .finish_non_exhaustive()
    }
}

impl ServiceTls {
    /// The service's certificate chain and private key, PEM. Checked now:
    /// an unreadable pair is an error before anything is served (the
    /// message never quotes the key).
    pub fn new(cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Result<Self, Error> {
        let tls = Self {
            cert_pem: cert_pem.into(),
            key_pem: key_pem.into(),
            client_ca_pem: None,
            require_client_certificate: false,
        };
        tls.rustls_config()?;
        Ok(tls)
    }

    /// Reads the certificate and key from files.
    pub fn from_files(
        cert: impl AsRef<std::path::Path>,
        key: impl AsRef<std::path::Path>,
    ) -> Result<Self, Error> {
        Self::new(read(cert.as_ref())?, read(key.as_ref())?)
    }

    /// Verifies client certificates against `ca_pem`. A verified
    /// certificate authenticates the principal that names it; with
    /// `required`, a client without one is refused during the handshake
    /// (otherwise it may still authenticate with a token).
    pub fn client_ca(mut self, ca_pem: impl Into<Vec<u8>>, required: bool) -> Result<Self, Error> {
        self.client_ca_pem = Some(ca_pem.into());
        self.require_client_certificate = required;
        self.rustls_config()?;
        Ok(self)
    }

    /// The gRPC server's TLS settings.
    pub(crate) fn grpc_config(&self) -> tonic::transport::ServerTlsConfig {
        let identity = tonic::transport::Identity::from_pem(&self.cert_pem, &self.key_pem);
        let config = tonic::transport::ServerTlsConfig::new().identity(identity);
        match &self.client_ca_pem {
            None => config,
            Some(ca) => config
                .client_ca_root(tonic::transport::Certificate::from_pem(ca))
                .client_auth_optional(!self.require_client_certificate),
        }
    }

    /// The page's rustls settings (HTTP/1.1).
    pub(crate) fn rustls_config(&self) -> Result<Arc<rustls::ServerConfig>, Error> {
        let bad = |what: &str| Error::Tls(what.to_owned());
        let certs = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad("the certificate file is not PEM"))?;
        if certs.is_empty() {
            return Err(bad("the certificate file holds no certificate"));
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem)
            .map_err(|_| bad("the key file holds no PEM private key"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|_| bad("no TLS protocol version available"))?;
        let builder = match &self.client_ca_pem {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(ca) {
                    let c = c.map_err(|_| bad("the client CA file is not PEM"))?;
                    roots
                        .add(c)
                        .map_err(|_| bad("the client CA file holds an unusable certificate"))?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                );
                let verifier = if self.require_client_certificate {
                    verifier
                } else {
                    verifier.allow_unauthenticated()
                };
                let verifier = verifier
                    .build()
                    .map_err(|_| bad("the client CA cannot verify certificates"))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|_| bad("the certificate and key do not form a usable pair"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Tls(format!("cannot read {}: {e}", path.display())))
}

/// A TCP listener whose connections are TLS streams: what the page is
/// served on under TLS. Handshakes run in their own tasks, each bounded
/// by a timeout; failed ones are dropped (and logged without detail).
pub(crate) struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    acceptor_task: JoinHandle<()>,
}

impl TlsListener {
    pub(crate) fn new(
        listener: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = TlsAcceptor::from(config);
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        let acceptor_task = tokio::spawn(async move {
            loop {
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                    return;
                };
                let (tcp, addr) = match listener.accept().await {
                    Ok(c) => c,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send((stream, addr)).await;
                        }
                        _ => tracing::debug!(%addr, "approval page: TLS handshake failed"),
                    }
                });
            }
        });
        Ok(Self {
            local,
            ready,
            acceptor_task,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor_task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The acceptor task only ends when the listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
