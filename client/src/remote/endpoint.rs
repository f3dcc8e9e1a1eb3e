//! One replica of an interceptor service: its lazily connecting channel,
//! the point call under the deadline left to the emission, and the
//! `Describe` and `grpc.health.v1` questions a host asks it.
//!
//! A failed attempt says how far it got ([`Reach`]): the balancer may retry
//! on another replica only an attempt that provably never reached a
//! handler — the connection was refused, or HTTP/2 refused the stream
//! (`REFUSED_STREAM`, or a `GOAWAY` that excluded it), both of which the
//! protocol defines as "not processed".

use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use hookwire::{InterceptorResponse, Manifest};
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

use super::multiplex::Multiplexer;
use super::tls::{TlsConfig, client_tls};
use super::HEALTH_UNIMPLEMENTED;
use crate::call_failure::CallFailure;
use crate::error::Error;

/// How far a failed attempt got, which decides what the balancer may do
/// next: retry elsewhere, eject the replica, or only report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// The request provably never reached a handler (connection refused,
    /// stream refused): safe to send to another replica.
    NeverReached,
    /// The transport failed after the request may have been sent (a
    /// reset, a closed connection, a server-side `UNAVAILABLE`): not
    /// retried, counted toward passive ejection.
    Transport,
    /// The deadline passed with no answer: not retried; the replica is
    /// probed.
    TimedOut,
    /// The service answered (a status of its handler or an invalid
    /// response): the replica is reachable.
    Answered,
}

/// A failed attempt: what the binding reports, and how far it got.
#[derive(Debug)]
pub(super) struct AttemptFailure {
    /// The failure the binding turns into its slot deny.
    pub(super) failure: CallFailure,
    /// How far the attempt got.
    pub(super) reach: Reach,
}

/// The answer of a health question: the serving status, `UNIMPLEMENTED`
/// for a reachable service without `grpc.health.v1`, or why no answer came.
pub(super) type HealthAnswer = Result<String, String>;

/// A connection to one replica of an interceptor service.
#[derive(Debug, Clone)]
pub(super) struct EndpointClient {
    /// The lazily connecting channel every call (and health check) uses.
    channel: Channel,
    endpoint: String,
    /// Static metadata sent on every call, values marked sensitive.
    metadata: std::sync::Arc<MetadataMap>,
    /// The `Multiplex` stream, used instead of unary calls when the
    /// service declares it.
    multiplex: std::sync::Arc<Multiplexer>,
}

impl EndpointClient {
    /// A lazily connecting client for `endpoint` (e.g.
    /// `http://127.0.0.1:50051`) sending `metadata` on every call. A name
    /// resolved by the host itself (DNS replicas) passes the name in
    /// `tls.domain_name`, so the certificate is still checked against it.
    /// `streams`: how many `Multiplex` streams to keep (`None`: the
    /// default of [`Multiplexer::new`]).
    pub(super) fn new(
        name: &str,
        endpoint: &str,
        metadata: std::sync::Arc<MetadataMap>,
        tls: Option<&TlsConfig>,
        streams: Option<usize>,
    ) -> Result<Self, Error> {
        let invalid = |reason: String| Error::InvalidEndpoint {
            name: name.to_owned(),
            endpoint: endpoint.to_owned(),
            reason,
        };
        let ep = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| invalid(e.to_string()))?
            .tcp_nodelay(true)
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
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
        let channel = ep.connect_lazy();
        let multiplex =
            std::sync::Arc::new(Multiplexer::new(channel.clone(), metadata.clone(), streams));
        Ok(Self {
            channel,
            endpoint: endpoint.to_owned(),
            metadata,
            multiplex,
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
    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Calls the point's RPC with `request`, bounded by `timeout`; a
    /// failure says how far the attempt got.
    pub(super) async fn call(
        &self,
        request: Box<PointRequest>,
        timeout: Option<Duration>,
    ) -> Result<InterceptorResponse, AttemptFailure> {
        // The stream when the service declares it; the probe's time
        // (once) comes out of the emission's bound.
        let asked = Instant::now();
        let multiplexed = self.multiplex.available(timeout).await;
        let timeout = timeout.map(|t| t.saturating_sub(asked.elapsed()));
        if multiplexed {
            return self.multiplex.call(request, timeout).await;
        }
        // Responses up to hookwire's wire bound, above the §12.3 context
        // bound: a transform may carry a whole (large) target back.
        let mut client = InterceptorClient::new(self.channel.clone())
            .max_decoding_message_size(hookwire::WIRE_RESPONSE_MAX_BYTES);
        let fut = async move {
            macro_rules! rpc {
                ($method:ident, $msg:expr) => {{ client.$method(self.request($msg, timeout)).await }};
            }
            match *request {
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
        let timed_out = || AttemptFailure {
            failure: CallFailure::TimedOut,
            reach: Reach::TimedOut,
        };
        let outcome = match timeout {
            Some(t) => tokio::time::timeout(t, fut)
                .await
                .map_err(|_| timed_out())?,
            None => fut.await,
        };
        let response = match outcome {
            Err(status) if is_deadline(status.code(), started.elapsed(), timeout) => {
                return Err(timed_out());
            }
            Err(status) => {
                return Err(AttemptFailure {
                    failure: CallFailure::Failed(format!("{:?}", status.code())),
                    reach: reach_of(&status),
                });
            }
            Ok(r) => r.into_inner(),
        };
        InterceptorResponse::try_from(response).map_err(|invalid| AttemptFailure {
            failure: CallFailure::Invalid(invalid),
            reach: Reach::Answered,
        })
    }

    /// Asks the service's `grpc.health.v1` service how the interceptor
    /// service is doing (with the binding's metadata): `SERVING`,
    /// `NOT_SERVING`, ...
    pub(super) async fn health(&self, timeout: Duration) -> HealthAnswer {
        let answer = self
            .check(timeout)
            .await
            .ok_or_else(|| "timed out".to_owned())?;
        let status = match answer {
            Ok(status) => status,
            // Reachable, but without grpc.health.v1: not a failure.
            Err(s) if s.code() == tonic::Code::Unimplemented => {
                return Ok(HEALTH_UNIMPLEMENTED.to_owned());
            }
            Err(s) => return Err(format!("{:?}: {}", s.code(), s.message())),
        };
        Ok(serving_status_name(status).to_owned())
    }

    /// One health `Check` of the interceptor service within `timeout`:
    /// the serving status or the status the call ended with; `None` when
    /// nothing came back in time.
    pub(super) async fn check(&self, timeout: Duration) -> Option<Result<i32, tonic::Status>> {
        let mut client = HealthClient::new(self.channel.clone());
        let req = self.request(
            HealthCheckRequest {
                service: pb::interceptor_server::SERVICE_NAME.to_owned(),
            },
            Some(timeout),
        );
        let answer = tokio::time::timeout(timeout, client.check(req))
            .await
            .ok()?;
        Some(answer.map(|response| response.into_inner().status))
    }

    /// Asks the service for its manifest.
    pub(super) async fn describe(&self, timeout: Duration) -> Result<Manifest, String> {
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

/// How long a connection attempt may take before the replica counts as
/// unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// HTTP/2 keepalive: a ping this often on an idle or busy connection ...
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// ... and the connection is closed (its calls failing as transport
/// failures) when no pong comes back this fast: how a silently
/// partitioned replica is noticed without an emission paying for it.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

impl EndpointClient {
    /// Opens a `grpc.health.v1` `Watch` of the interceptor service: a
    /// stream of serving statuses, or the status the service refused it
    /// with (`UNIMPLEMENTED` where health is not served).
    pub(super) async fn watch(
        &self,
    ) -> Result<tonic::Streaming<tonic_health::pb::HealthCheckResponse>, tonic::Status> {
        let mut client = HealthClient::new(self.channel.clone());
        let req = self.request(
            HealthCheckRequest {
                service: pb::interceptor_server::SERVICE_NAME.to_owned(),
            },
            None,
        );
        Ok(client.watch(req).await?.into_inner())
    }
}

/// The name of a `grpc.health.v1` serving status.
pub(super) fn serving_status_name(status: i32) -> &'static str {
    ServingStatus::try_from(status).map_or("UNKNOWN", |s| s.as_str_name())
}

/// How far a call that ended with `status` got. Only a status the client
/// made from a connection error or an HTTP/2 refusal proves that no
/// handler saw the request; a status the service sent (it has no local
/// source error) means it was answered.
pub(super) fn reach_of(status: &tonic::Status) -> Reach {
    let mut source = std::error::Error::source(status);
    let local = source.is_some();
    while let Some(err) = source {
        if err.downcast_ref::<tonic::ConnectError>().is_some() {
            return Reach::NeverReached;
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            let refused = h2.reason() == Some(h2::Reason::REFUSED_STREAM);
            // A GOAWAY from the server reaches only the streams it did not
            // accept (those above its last stream id): not processed.
            if refused || (h2.is_go_away() && h2.is_remote()) {
                return Reach::NeverReached;
            }
        }
        source = err.source();
    }
    match status.code() {
        _ if local => Reach::Transport,
        tonic::Code::Unavailable => Reach::Transport,
        _ => Reach::Answered,
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
pub(super) fn is_deadline(code: tonic::Code, elapsed: Duration, timeout: Option<Duration>) -> bool {
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
