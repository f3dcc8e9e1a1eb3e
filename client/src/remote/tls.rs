//! TLS for `https://` endpoints: which authority verifies a service, the
//! name its certificate must carry, and the client certificate a host
//! presents to a service requiring mutual TLS.

use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// How a host verifies an interceptor service reached over `https://`.
/// Without one, an `https://` endpoint is verified against the public Web
/// PKI roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM certificate(s) of the authority that signs the service's
    /// certificate; replaces the public roots when set.
    pub ca_pem: Option<Vec<u8>>,
    /// The name the service's certificate must carry, when it differs from
    /// the endpoint's host (e.g. an IP endpoint with a named certificate).
    pub domain_name: Option<String>,
    /// The certificate and key the host presents to a service that
    /// requires client certificates (mutual TLS); none by default.
    pub client_identity: Option<ClientIdentity>,
}

/// A client certificate chain and its private key, both PEM, which a host
/// presents to prove who it is to a service requiring mutual TLS. Its
/// `Debug` output never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl ClientIdentity {
    /// The PEM certificate chain (leaf first) and the PEM private key
    /// (PKCS#8, PKCS#1 or SEC1). Checked when the host is built.
    pub fn from_pem(cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Self {
        Self {
            cert_pem: cert_pem.into(),
            key_pem: key_pem.into(),
        }
    }

    /// Reads the certificate and key from PEM files. The error is the I/O
    /// error of the file that could not be read.
    pub fn from_files(
        cert_path: impl AsRef<std::path::Path>,
        key_path: impl AsRef<std::path::Path>,
    ) -> std::io::Result<Self> {
        Ok(Self::from_pem(
            std::fs::read(cert_path)?,
            std::fs::read(key_path)?,
        ))
    }
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &format_args!("<redacted>"))
            .finish()
    }
}

/// The client TLS settings for an `https://` endpoint: the given authority,
/// or the public Web PKI roots.
pub(crate) fn client_tls(tls: Option<&TlsConfig>) -> ClientTlsConfig {
    let mut config = ClientTlsConfig::new();
    match tls.and_then(|t| t.ca_pem.as_ref()) {
        Some(pem) => config = config.ca_certificate(Certificate::from_pem(pem)),
        None => config = config.with_webpki_roots(),
    }
    if let Some(name) = tls.and_then(|t| t.domain_name.as_ref()) {
        config = config.domain_name(name.clone());
    }
    if let Some(id) = tls.and_then(|t| t.client_identity.as_ref()) {
        config = config.identity(Identity::from_pem(&id.cert_pem, &id.key_pem));
    }
    config
}
