//! One replica of an interceptor service: its lazily connecting channel,
//! the point call under the deadline left to the emission (over the
//! `Multiplex` stream when the service declares it, as unary RPCs
//! otherwise), and the `Describe` and `grpc.health.v1` questions a host
//! asks it.

use std::time::{Duration, Instant};

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use hookwire::{InterceptorResponse, Manifest};
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

use super::attempt::AttemptFailure;
use super::described::{Described, Transport};
use super::multiplex::{Called, Multiplexer};
use super::tls::{TlsConfig, secured};
use super::unary::{self, stamped};
use crate::error::Error;

/// What [`Host::health_remotes`](crate::Host::health_remotes) reports for
/// a reachable service that does not serve `grpc.health.v1` (it answered
/// `UNIMPLEMENTED`): health is recommended, `Describe` is the contract.
pub const HEALTH_UNIMPLEMENTED: &str = "UNIMPLEMENTED";

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
        let ep = secured(ep, tls).map_err(invalid)?;
        let channel = ep.connect_lazy();
        let multiplex = std::sync::Arc::new(Multiplexer::new(
            channel.clone(),
            metadata.clone(),
            endpoint,
            streams,
        ));
        Ok(Self {
            channel,
            endpoint: endpoint.to_owned(),
            metadata,
            multiplex,
        })
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
        // The stream when the service declares it; the wait for the
        // probe (bounded apart, `choice`) comes out of the emission's
        // bound, and so does a stream's refusal before the unary call
        // that replaces it.
        let asked = Instant::now();
        let left = |timeout: Option<Duration>| timeout.map(|t| t.saturating_sub(asked.elapsed()));
        let request = if self.multiplex.available(timeout).await {
            match self.multiplex.call(request, left(timeout)).await {
                Called::Done(answer) => return answer,
                Called::Refused(request) => request,
            }
        } else {
            request
        };
        unary::call(self.channel.clone(), &self.metadata, request, left(timeout)).await
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
        let req = stamped(
            HealthCheckRequest {
                service: pb::interceptor_server::SERVICE_NAME.to_owned(),
            },
            &self.metadata,
            Some(timeout),
        );
        let answer = tokio::time::timeout(timeout, client.check(req))
            .await
            .ok()?;
        Some(answer.map(|response| response.into_inner().status))
    }

    /// Asks the service for its manifest.
    pub(super) async fn describe(&self, timeout: Duration) -> Result<Described, String> {
        let mut client = InterceptorClient::new(self.channel.clone());
        let req = stamped(pb::DescribeRequest {}, &self.metadata, Some(timeout));
        let manifest = tokio::time::timeout(timeout, client.describe(req))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .into_inner();
        let transport = if hookwire::wire::declares_multiplex(&manifest) {
            Transport::Multiplex
        } else {
            Transport::Unary
        };
        let manifest = Manifest::try_from(manifest).map_err(|e| e.to_string())?;
        Ok(Described {
            manifest,
            transport,
        })
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
        let req = stamped(
            HealthCheckRequest {
                service: pb::interceptor_server::SERVICE_NAME.to_owned(),
            },
            &self.metadata,
            None,
        );
        Ok(client.watch(req).await?.into_inner())
    }
}

/// The name of a `grpc.health.v1` serving status.
pub(super) fn serving_status_name(status: i32) -> &'static str {
    ServingStatus::try_from(status).map_or("UNKNOWN", |s| s.as_str_name())
}
