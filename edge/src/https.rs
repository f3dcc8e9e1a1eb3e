//! The HTTP(S) client every edge reaches its upstream with: the gateway
//! its model provider, the MCP proxy a Streamable HTTP server, the
//! approval service its webhook receivers. HTTP/1.1 over hyper's pooled
//! client, TLS through rustls with the ring provider and the web PKI
//! roots, plus what an operator may add ([`UpstreamTls`]): an extra
//! certificate authority (a private CA, a TLS-inspecting proxy's) and a
//! client certificate for upstreams that require mutual TLS.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::Error;

/// The client type [`client`] builds, over request bodies of type `B`.
pub type HttpsClient<B> = Client<HttpsConnector<HttpConnector>, B>;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// The largest PEM file read (a CA bundle, a certificate chain, a key).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// TLS toward an upstream beyond the web PKI defaults. The default trusts
/// the web PKI roots and presents no client certificate; everything is
/// checked when the value is made, so a client built from it never fails.
#[derive(Clone, Default)]
pub struct UpstreamTls {
    /// `None`: the defaults, as hyper-rustls builds them.
    config: Option<Arc<rustls::ClientConfig>>,
    extra_ca: bool,
    client_certificate: bool,
}

impl fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never a key.
        f.debug_struct("UpstreamTls")
            .field("extra_ca", &self.extra_ca)
            .field("client_certificate", &self.client_certificate)
            .finish()
    }
}

impl UpstreamTls {
    /// The web PKI roots plus every certificate of `extra_ca_pem` (when
    /// given), presenting `client` (a PEM certificate chain and its PEM
    /// private key) to upstreams that ask for one.
    pub fn new(extra_ca_pem: Option<&[u8]>, client: Option<(&[u8], &[u8])>) -> Result<Self, Error> {
        if extra_ca_pem.is_none() && client.is_none() {
            return Ok(Self::default());
        }
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(pem) = extra_ca_pem {
            let mut added = 0;
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|_| Error::Tls("the CA file is not PEM".into()))?;
                roots.add(cert).map_err(|e| {
                    Error::Tls(format!("the CA file holds an unusable certificate: {e}"))
                })?;
                added += 1;
            }
            if added == 0 {
                return Err(Error::Tls("the CA file holds no certificate".into()));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(format!("no TLS protocol version: {e}")))?
            .with_root_certificates(roots);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert_pem, key_pem)) => {
                let chain = CertificateDer::pem_slice_iter(cert_pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| Error::Tls("the client certificate file is not PEM".into()))?;
                if chain.is_empty() {
                    return Err(Error::Tls(
                        "the client certificate file holds no certificate".into(),
                    ));
                }
                // The key's own error could quote it: a fixed message.
                let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| {
                    Error::Tls("the client key file holds no PEM private key".into())
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|_| {
                    Error::Tls("the client certificate and key do not make a usable pair".into())
                })?
            }
        };
        Ok(Self {
            config: Some(Arc::new(config)),
            extra_ca: extra_ca_pem.is_some(),
            client_certificate: client.is_some(),
        })
    }

    /// [`UpstreamTls::new`] from files: `ca` an extra CA bundle, `cert`
    /// and `key` the client certificate chain and key (both or neither).
    pub fn from_files(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Self, Error> {
        let client = match (cert, key) {
            (Some(c), Some(k)) => Some((read(c)?, read(k)?)),
            (None, None) => None,
            _ => {
                return Err(Error::Tls(
                    "a client certificate needs its key, and a key its certificate".into(),
                ));
            }
        };
        let ca = ca.map(read).transpose()?;
        Self::new(
            ca.as_deref(),
            client.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
        )
    }

    /// Whether a client certificate is presented.
    pub fn has_client_certificate(&self) -> bool {
        self.client_certificate
    }
}

/// Reads a PEM file of at most [`MAX_PEM_BYTES`]; the error names the
/// file, never its content.
fn read(path: &Path) -> Result<Vec<u8>, Error> {
    use std::io::Read as _;
    let what = |e: std::io::Error| Error::Tls(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(what)?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(what)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(Error::Tls(format!(
            "{} is larger than {MAX_PEM_BYTES} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// A pooled HTTP/1.1 client for `http://` and `https://` upstreams with
/// `tls`; idle connections are kept for a minute.
pub fn client<B>(tls: &UpstreamTls) -> HttpsClient<B>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
{
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match &tls.config {
        None => builder.with_webpki_roots(),
        Some(config) => builder.with_tls_config(config.as_ref().clone()),
    };
    let connector = builder.https_or_http().enable_http1().build();
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE)
        .build(connector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_refused_without_their_content() {
        let e = UpstreamTls::new(Some(b"not pem"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no certificate") || e.contains("not PEM"), "{e}");
        let secret = b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n";
        let e = UpstreamTls::new(None, Some((b"", secret)))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("c2VjcmV0"), "{e}");
        let e = UpstreamTls::from_files(None, Some(Path::new("/nonexistent")), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs its key"), "{e}");
        let e = UpstreamTls::from_files(Some(Path::new("/nonexistent/ca.pem")), None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn the_default_is_the_web_pki_alone() {
        let tls = UpstreamTls::default();
        assert!(!tls.has_client_certificate());
        assert_eq!(
            format!("{tls:?}"),
            "UpstreamTls { extra_ca: false, client_certificate: false }"
        );
    }
}
