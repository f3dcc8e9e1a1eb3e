//! Downloading a bundle over HTTP(S), as OPA's bundle plugin does: `GET`
//! with `If-None-Match` set to the ETag of the last bundle that was
//! activated, so that a `304 Not Modified` costs nothing. The whole request
//! is bounded in time and the body in size; TLS is rustls with the webpki
//! roots, or only the authority the operator names.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::header::{ETAG, IF_NONE_MATCH};
use hyper::{Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;

/// What one download brought.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// The server's copy is the one already active (`304`).
    NotModified,
    /// A bundle, and the server's ETag for it.
    Bundle {
        /// The archive.
        bytes: Bytes,
        /// The `ETag` header, when the server sent one.
        etag: Option<String>,
    },
}

/// A bundle URL and the client that downloads it.
#[derive(Debug, Clone)]
pub(crate) struct HttpSource {
    uri: Uri,
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    timeout: Duration,
    max_bytes: usize,
}

impl HttpSource {
    /// A source for `url` (`http` or `https`), each download bounded by
    /// `timeout` and `max_bytes`; `ca_pem`: the only authority a server
    /// certificate may chain to (else the webpki roots).
    pub(crate) fn new(
        url: &str,
        timeout: Duration,
        max_bytes: usize,
        ca_pem: Option<&[u8]>,
    ) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|_| "not a URL".to_owned())?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err("a bundle URL is http:// or https:// with a host".into());
        }
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match ca_pem {
            None => builder.with_webpki_roots(),
            Some(pem) => builder.with_tls_config(private_roots(pem)?),
        };
        let connector = builder.https_or_http().enable_http1().build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Self {
            uri,
            client,
            timeout,
            max_bytes,
        })
    }

    /// Downloads the bundle unless its ETag is still `etag`.
    pub(crate) async fn fetch(&self, etag: Option<&str>) -> Result<Fetched, String> {
        tokio::time::timeout(self.timeout, self.fetch_unbounded(etag))
            .await
            .map_err(|_| format!("no complete answer within {:?}", self.timeout))?
    }

    async fn fetch_unbounded(&self, etag: Option<&str>) -> Result<Fetched, String> {
        let mut request = Request::get(self.uri.clone());
        if let Some(etag) = etag {
            request = request.header(IF_NONE_MATCH, etag);
        }
        let request = request
            .body(Empty::new())
            .map_err(|e| format!("cannot build the request: {e}"))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| format!("download failed: {e}"))?;
        match response.status() {
            StatusCode::NOT_MODIFIED => return Ok(Fetched::NotModified),
            StatusCode::OK => {}
            other => return Err(format!("the server answered {other}")),
        }
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= 256)
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), self.max_bytes)
            .collect()
            .await
            .map_err(|e| {
                format!(
                    "the body could not be read within {} bytes: {e}",
                    self.max_bytes
                )
            })?
            .to_bytes();
        Ok(Fetched::Bundle { bytes: body, etag })
    }
}

/// A client configuration trusting only the authorities in `pem`.
fn private_roots(pem: &[u8]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|_| "the bundle CA file is not PEM".to_owned())?;
        roots
            .add(cert)
            .map_err(|e| format!("the bundle CA file holds an unusable certificate: {e}"))?;
    }
    if roots.is_empty() {
        return Err("the bundle CA file holds no certificate".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("no TLS protocol version: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
