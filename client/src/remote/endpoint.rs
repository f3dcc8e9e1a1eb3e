//! One replica of an interceptor service: its lazily connecting channel,
//! the point call under the binding's deadline, and the `Describe` and
//! `grpc.health.v1` questions a host asks it.

use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use hookwire::{InterceptorResponse, Manifest};
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};

use super::metadata::metadata_entry;
use super::tls::{TlsConfig, client_tls};
use super::{CallFailure, HEALTH_UNIMPLEMENTED};
use crate::error::Error;

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

    /// A request carrying the static metadata, when bounded the
    /// `grpc-timeout` header, and the current span's W3C trace context.
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
        crate::trace::inject_metadata(&tracing::Span::current(), req.metadata_mut());
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
