//! Remote interceptors: an interceptor service reached over gRPC.
//!
//! The channel connects lazily, so a host builds even when a service is not
//! up yet; an unreachable service is a failed call, i.e.
//! `host_error:interceptor_failed`, never a build error. Each call carries
//! the binding's timeout both as a local deadline (the call future is
//! dropped, which cancels the HTTP/2 stream) and as the `grpc-timeout`
//! header, so a well-behaved service stops working on it too.
//!
//! A response is decoded and validated once, by the wire conversion
//! (`InterceptorResponse::try_from`, which applies
//! [`InterceptorResponse::validate`]); [`TlsConfig`] says how an
//! `https://` endpoint is verified and, with a [`ClientIdentity`], how the
//! host proves who it is to a service requiring mutual TLS.

use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use hookwire::{HostError, InterceptorResponse, InvalidVerdict, Manifest};
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::Error;

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

/// What [`Host::health_remotes`](crate::Host::health_remotes) reports for
/// a reachable service that does not serve `grpc.health.v1` (it answered
/// `UNIMPLEMENTED`): health is recommended, `Describe` is the contract.
pub const HEALTH_UNIMPLEMENTED: &str = "UNIMPLEMENTED";

/// How a call to an interceptor failed, remote or in-process; each maps to
/// one reserved reason (§6.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// Transport error or error status; or an in-process interceptor that
    /// panicked or returned an error.
    Failed(String),
    /// The deadline passed.
    TimedOut,
    /// The response failed §5 / §5.5 validation.
    Invalid(InvalidVerdict),
}

impl CallFailure {
    pub(crate) fn host_error(&self) -> HostError {
        match self {
            Self::Failed(_) => HostError::InterceptorFailed,
            Self::TimedOut => HostError::InterceptorTimeout,
            Self::Invalid(_) => HostError::VerdictInvalid,
        }
    }
}

/// A connection to one interceptor service.
#[derive(Debug, Clone)]
pub(crate) struct RemoteInterceptor {
    /// The lazily connecting channel every call (and health check) uses.
    channel: Channel,
    endpoint: String,
    /// Static metadata sent on every call, values marked sensitive.
    metadata: std::sync::Arc<MetadataMap>,
}

impl RemoteInterceptor {
    /// A lazily connecting client for `endpoint` (e.g. `http://127.0.0.1:50051`)
    /// sending `metadata` on every call.
    pub(crate) fn new(
        name: &str,
        endpoint: &str,
        metadata: &[(String, String)],
        tls: Option<&TlsConfig>,
    ) -> Result<Self, Error> {
        let invalid = |reason: String| Error::InvalidEndpoint {
            name: name.to_owned(),
            endpoint: endpoint.to_owned(),
            reason,
        };
        let ep = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| invalid(e.to_string()))?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(5))
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_while_idle(true);
        if ep.uri().scheme_str().is_none() || ep.uri().host().is_none() {
            return Err(invalid(
                "expected an absolute http:// or https:// URL".into(),
            ));
        }
        let ep = match (ep.uri().scheme_str(), tls) {
            (Some("https"), tls) => ep
                .tls_config(client_tls(tls))
                .map_err(|e| invalid(format!("TLS settings refused: {e}")))?,
            (_, Some(_)) => return Err(invalid("TLS settings need an https:// endpoint".into())),
            (_, None) => ep,
        };
        let mut map = MetadataMap::new();
        for (key, value) in metadata {
            let (key, value) =
                metadata_entry(key, value).map_err(|reason| Error::InvalidMetadata {
                    name: name.to_owned(),
                    key: key.clone(),
                    reason,
                })?;
            map.append(key, value);
        }
        let channel = ep.connect_lazy();
        Ok(Self {
            channel,
            endpoint: endpoint.to_owned(),
            metadata: std::sync::Arc::new(map),
        })
    }

    /// A request carrying the static metadata and, when bounded, the
    /// `grpc-timeout` header.
    fn request<T>(&self, message: T, timeout: Option<Duration>) -> tonic::Request<T> {
        let mut req = tonic::Request::new(message);
        for entry in self.metadata.iter() {
            if let tonic::metadata::KeyAndValueRef::Ascii(k, v) = entry {
                req.metadata_mut().append(k.clone(), v.clone());
            }
        }
        if let Some(t) = timeout {
            req.set_timeout(t);
        }
        req
    }

    /// The endpoint URL.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Calls the point's RPC with `request`, bounded by `timeout`.
    pub(crate) async fn call(
        &self,
        request: PointRequest,
        timeout: Option<Duration>,
    ) -> Result<InterceptorResponse, CallFailure> {
        let mut client = InterceptorClient::new(self.channel.clone());
        let fut = async move {
            macro_rules! rpc {
                ($method:ident, $msg:expr) => {{ client.$method(self.request($msg, timeout)).await }};
            }
            match request {
                PointRequest::AgentStartup(m) => rpc!(agent_startup, m),
                PointRequest::Input(m) => rpc!(input, m),
                PointRequest::PreModelCall(m) => rpc!(pre_model_call, m),
                PointRequest::PostModelCall(m) => rpc!(post_model_call, m),
                PointRequest::PreToolCall(m) => rpc!(pre_tool_call, m),
                PointRequest::PostToolCall(m) => rpc!(post_tool_call, m),
                PointRequest::Output(m) => rpc!(output, m),
                PointRequest::AgentShutdown(m) => rpc!(agent_shutdown, m),
            }
        };
        let started = Instant::now();
        let outcome = match timeout {
            Some(t) => tokio::time::timeout(t, fut)
                .await
                .map_err(|_| CallFailure::TimedOut)?,
            None => fut.await,
        };
        let response = match outcome {
            Err(status) if is_deadline(status.code(), started.elapsed(), timeout) => {
                return Err(CallFailure::TimedOut);
            }
            Err(status) => return Err(CallFailure::Failed(format!("{:?}", status.code()))),
            Ok(r) => r.into_inner(),
        };
        InterceptorResponse::try_from(response).map_err(CallFailure::Invalid)
    }

    /// Asks the service's `grpc.health.v1` service how the interceptor
    /// service is doing (with the binding's metadata): `SERVING`,
    /// `NOT_SERVING`, ...
    pub(crate) async fn health(&self, timeout: Duration) -> Result<String, String> {
        use tonic_health::pb::health_client::HealthClient;
        use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
        let mut client = HealthClient::new(self.channel.clone());
        let req = self.request(
            HealthCheckRequest {
                service: pb::interceptor_server::SERVICE_NAME.to_owned(),
            },
            Some(timeout),
        );
        let answer = tokio::time::timeout(timeout, client.check(req))
            .await
            .map_err(|_| "timed out".to_owned())?;
        let status = match answer {
            Ok(response) => response.into_inner().status,
            // Reachable, but without grpc.health.v1: not a failure.
            Err(s) if s.code() == tonic::Code::Unimplemented => {
                return Ok(HEALTH_UNIMPLEMENTED.to_owned());
            }
            Err(s) => return Err(format!("{:?}: {}", s.code(), s.message())),
        };
        Ok(ServingStatus::try_from(status)
            .map_or("UNKNOWN", |s| s.as_str_name())
            .to_owned())
    }

    /// Asks the service for its manifest.
    pub(crate) async fn describe(&self, timeout: Duration) -> Result<Manifest, String> {
        let mut client = InterceptorClient::new(self.channel.clone());
        let req = self.request(pb::DescribeRequest {}, Some(timeout));
        let manifest = tokio::time::timeout(timeout, client.describe(req))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .into_inner();
        Manifest::try_from(manifest).map_err(|e| e.to_string())
    }
}

/// The client TLS settings for an `https://` endpoint: the given authority,
/// or the public Web PKI roots.
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

/// Whether a failed call ended because its deadline passed (§6.3
/// `host_error:interceptor_timeout`): `DEADLINE_EXCEEDED`, or `CANCELLED`
/// once the deadline has passed. A service that honours `grpc-timeout`
/// gives up on the call when the deadline it was sent expires; grpcio and
/// grpc-js then reset the stream, which reads as `CANCELLED`, and that reset
/// can arrive a moment before the host's own timer fires. The service's
/// deadline starts when it receives the call, so its reset never arrives
/// before `timeout` has elapsed here.
fn is_deadline(code: tonic::Code, elapsed: Duration, timeout: Option<Duration>) -> bool {
    match code {
        tonic::Code::DeadlineExceeded => true,
        tonic::Code::Cancelled => timeout.is_some_and(|t| elapsed >= t),
        _ => false,
    }
}

/// Header names gRPC and HTTP/2 reserve for themselves.
const RESERVED_HEADERS: [&str; 6] = [
    "content-type",
    "te",
    "user-agent",
    "host",
    "connection",
    "authority",
];

/// Checks one static metadata entry: a lowercase ASCII header name that is
/// neither reserved nor binary (`-bin`), and a visible-ASCII value. The
/// reason names the rule, never the value.
pub(crate) fn metadata_entry(
    key: &str,
    value: &str,
) -> Result<(AsciiMetadataKey, AsciiMetadataValue), String> {
    let name_ok = !key.is_empty()
        && key.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        });
    if !name_ok {
        return Err("metadata keys are lowercase ASCII letters, digits, '-', '_' and '.'".into());
    }
    if key.starts_with("grpc-") || key.starts_with(':') || RESERVED_HEADERS.contains(&key) {
        return Err("the metadata key is reserved by gRPC or HTTP/2".into());
    }
    if key.ends_with("-bin") {
        return Err("binary (-bin) metadata is not supported".into());
    }
    if value.is_empty() || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err("metadata values are non-empty visible ASCII (spaces allowed)".into());
    }
    let key = AsciiMetadataKey::from_bytes(key.as_bytes())
        .map_err(|_| "invalid metadata key".to_owned())?;
    let mut value =
        AsciiMetadataValue::try_from(value).map_err(|_| "invalid metadata value".to_owned())?;
    value.set_sensitive(true);
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn a_cancel_at_the_deadline_is_a_timeout() {
        let t = Some(Duration::from_millis(400));
        assert!(is_deadline(Code::DeadlineExceeded, Duration::ZERO, t));
        assert!(is_deadline(Code::Cancelled, Duration::from_millis(400), t));
        assert!(is_deadline(Code::Cancelled, Duration::from_millis(401), t));
        assert!(!is_deadline(Code::Cancelled, Duration::from_millis(399), t));
        assert!(!is_deadline(Code::Cancelled, Duration::from_secs(9), None));
        assert!(!is_deadline(Code::Unavailable, Duration::from_secs(9), t));
        assert!(!is_deadline(Code::Internal, Duration::from_secs(9), t));
    }
}
