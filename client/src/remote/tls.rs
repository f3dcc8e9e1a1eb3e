//! TLS for `https://` endpoints: which authority verifies a service, the
//! name its certificate must carry, and the client certificate a host
//! presents to a service requiring mutual TLS. The settings are plain data;
//! applying them to a channel needs the `tls` feature (on by default), and
//! a build without it refuses `https://` endpoints when the host is built.

use tonic::transport::Endpoint;
#[cfg(feature = "tls")]
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

/// `endpoint` set up for its scheme: an `https://` one verified with `tls`
/// (or the public Web PKI roots), a plain one as it is. Refused: TLS
/// settings for a plain endpoint, settings tonic cannot use, and
/// `https://` in a build without the `tls` feature.
pub(crate) fn secured(endpoint: Endpoint, tls: Option<&TlsConfig>) -> Result<Endpoint, String> {
    match (endpoint.uri().scheme_str(), tls) {
        #[cfg(feature = "tls")]
        (Some("https"), tls) => endpoint
            .tls_config(client_tls(tls))
            .map_err(|e| format!("TLS settings refused: {e}")),
        #[cfg(not(feature = "tls"))]
        (Some("https"), _) => Err(
            "https:// needs hookwire-client built with its `tls` feature (on by default)".into(),
        ),
        (_, Some(_)) => Err("TLS settings need an https:// endpoint".into()),
        (_, None) => Ok(endpoint),
    }
}

/// The client TLS settings for an `https://` endpoint: the given authority,
/// or the public Web PKI roots.
#[cfg(feature = "tls")]
fn client_tls(tls: Option<&TlsConfig>) -> ClientTlsConfig {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &'static str) -> Endpoint {
        Endpoint::from_static(url)
    }

    #[test]
    fn settings_for_a_plain_endpoint_are_refused_and_plain_passes() {
        assert!(secured(endpoint("http://127.0.0.1:1"), None).is_ok());
        let refused = secured(endpoint("http://127.0.0.1:1"), Some(&TlsConfig::default()));
        assert_eq!(
            refused.unwrap_err(),
            "TLS settings need an https:// endpoint"
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn https_is_verified_with_the_tls_feature() {
        assert!(secured(endpoint("https://127.0.0.1:1"), None).is_ok());
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn https_is_refused_without_the_tls_feature() {
        let refused = secured(endpoint("https://127.0.0.1:1"), None).unwrap_err();
        assert!(refused.contains("`tls` feature"), "{refused}");
    }
}
