//! Remote interceptors: an interceptor service reached over gRPC.
//!
//! The channel connects lazily, so a host builds even when a service is not
//! up yet; an unreachable service is a failed call, i.e.
//! `host_error:interceptor_failed`, never a build error. Each call carries
//! the binding's timeout both as a local deadline (the call future is
//! dropped, which cancels the HTTP/2 stream) and as the `grpc-timeout`
//! header, so a well-behaved service stops working on it too.

use std::time::Duration;

use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::{InterceptorResponse, Manifest, PointRequest};
use hookwire::{HostError, InvalidVerdict};
use tonic::transport::{Channel, Endpoint};

use crate::error::Error;

/// How a remote call failed; each maps to one reserved reason (§6.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// Transport error or error status.
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
    client: InterceptorClient<Channel>,
    endpoint: String,
}

impl RemoteInterceptor {
    /// A lazily connecting client for `endpoint` (e.g. `http://127.0.0.1:50051`).
    pub(crate) fn new(name: &str, endpoint: &str) -> Result<Self, Error> {
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
        Ok(Self {
            client: InterceptorClient::new(ep.connect_lazy()),
            endpoint: endpoint.to_owned(),
        })
    }

    /// The endpoint URL.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Calls the point's RPC with `request`, bounded by `timeout`.
    pub(crate) async fn call(
        &self,
        request: PointRequest,
        timeout: Duration,
    ) -> Result<InterceptorResponse, CallFailure> {
        let mut client = self.client.clone();
        let fut = async move {
            macro_rules! rpc {
                ($method:ident, $msg:expr) => {{
                    let mut req = tonic::Request::new($msg);
                    req.set_timeout(timeout);
                    client.$method(req).await
                }};
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
        let response = match tokio::time::timeout(timeout, fut).await {
            Err(_) => return Err(CallFailure::TimedOut),
            Ok(Err(status)) if status.code() == tonic::Code::DeadlineExceeded => {
                return Err(CallFailure::TimedOut);
            }
            Ok(Err(status)) => return Err(CallFailure::Failed(format!("{:?}", status.code()))),
            Ok(Ok(r)) => r.into_inner(),
        };
        InterceptorResponse::try_from(response).map_err(CallFailure::Invalid)
    }

    /// Asks the service for its manifest.
    pub(crate) async fn describe(&self, timeout: Duration) -> Result<Manifest, String> {
        let mut client = self.client.clone();
        let mut req = tonic::Request::new(pb::DescribeRequest {});
        req.set_timeout(timeout);
        let manifest = tokio::time::timeout(timeout, client.describe(req))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .into_inner();
        Manifest::try_from(manifest).map_err(|e| e.to_string())
    }
}
