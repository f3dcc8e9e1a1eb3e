//! The unary transport to one endpoint: each emission its own RPC (the
//! point's method of `hookwire.v1.Interceptor`), and the request stamping
//! every unary call of a binding shares (`Describe` and health too).

use std::time::{Duration, Instant};

use hookwire::InterceptorResponse;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use super::attempt::{AttemptFailure, decoded, status_failure, within};

/// A request carrying the binding's static `metadata`, when bounded the
/// `grpc-timeout` header, and the current span's W3C trace context.
pub(super) fn stamped<T>(
    message: T,
    metadata: &MetadataMap,
    timeout: Option<Duration>,
) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    for entry in metadata.iter() {
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

/// Calls the point's RPC with `request` over `channel`, bounded by
/// `timeout`; a failure says how far the attempt got.
pub(super) async fn call(
    channel: Channel,
    metadata: &MetadataMap,
    request: Box<PointRequest>,
    timeout: Option<Duration>,
) -> Result<InterceptorResponse, AttemptFailure> {
    // Responses up to hookwire's wire bound, above the §12.3 context
    // bound: a transform may carry a whole (large) target back.
    let mut client = InterceptorClient::new(channel)
        .max_decoding_message_size(hookwire::WIRE_RESPONSE_MAX_BYTES);
    let started = Instant::now();
    let answer = async move {
        macro_rules! rpc {
            ($method:ident, $msg:expr) => {{ client.$method(stamped($msg, metadata, timeout)).await }};
        }
        let outcome = match *request {
            PointRequest::AgentStartup(m) => rpc!(agent_startup, m),
            PointRequest::Input(m) => rpc!(input, m),
            PointRequest::PreModelCall(m) => rpc!(pre_model_call, m),
            PointRequest::PostModelCall(m) => rpc!(post_model_call, m),
            PointRequest::PreToolCall(m) => rpc!(pre_tool_call, m),
            PointRequest::PostToolCall(m) => rpc!(post_tool_call, m),
            PointRequest::Output(m) => rpc!(output, m),
            PointRequest::AgentShutdown(m) => rpc!(agent_shutdown, m),
        };
        outcome.map_err(|status| status_failure(&status, started.elapsed(), timeout))
    };
    decoded(within(timeout, answer).await?.into_inner())
}
