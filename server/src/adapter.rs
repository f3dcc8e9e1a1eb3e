//! The gRPC edge: any [`InterceptorService`] as the generated
//! `hookwire.v1.Interceptor` service.
//!
//! Each RPC decodes its request into a validated [`AgentContext`]
//! (failure: `INVALID_ARGUMENT`), routes it to the hook for its point,
//! and encodes the response. The whole call runs under `catch_unwind`, so a
//! panicking hook costs one `INTERNAL` status, never the server.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use hookwire::pb;
use hookwire::pb::interceptor_server::{Interceptor, InterceptorServer};
use hookwire::wire::{PointRequest, context_from_request};
use hookwire::{AgentContext, Decision};
use tonic::{Request, Response, Status};

use crate::error::Error;
use crate::service::{InterceptorService, dispatch};

/// Largest request the server decodes by default, in bytes: the default
/// §12.3 context bound (5 MiB) with room for framing. tonic's own default
/// (4 MiB) would refuse contexts a host considers valid.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Serves an [`InterceptorService`] as the generated gRPC service. Use it
/// directly to mount an interceptor on a tonic router of your own;
/// [`crate::Server`] does this for you.
#[derive(Debug)]
pub struct GrpcAdapter<S: ?Sized> {
    service: Arc<S>,
}

impl<S: ?Sized> Clone for GrpcAdapter<S> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
        }
    }
}

impl<S: InterceptorService> GrpcAdapter<S> {
    /// Wraps a service.
    pub fn new(service: S) -> Self {
        Self::from_arc(Arc::new(service))
    }
}

impl<S: InterceptorService + ?Sized> GrpcAdapter<S> {
    /// Wraps a service that is shared with other code.
    pub fn from_arc(service: Arc<S>) -> Self {
        Self { service }
    }

    /// The tonic service to add to a router, accepting requests up to
    /// [`DEFAULT_MAX_MESSAGE_BYTES`].
    pub fn into_server(self) -> InterceptorServer<Self> {
        InterceptorServer::new(self).max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// Answers one interception request: decode, route, encode.
    async fn handle(&self, request: PointRequest) -> Result<pb::InterceptorResponse, Error> {
        let point = request.point();
        unwind_guard(async {
            let ctx = context_from_request(request).inspect_err(|e| {
                tracing::debug!(%point, error = %e, "refused an invalid context");
            })?;
            let response = dispatch(&*self.service, &ctx).await;
            warn_if_invalid(&ctx, &response.verdict);
            Ok(pb::InterceptorResponse::from(&response))
        })
        .await
    }
}

/// Runs `fut`, turning a panic into [`Error::Panicked`].
async fn unwind_guard<T>(fut: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(result) => result,
        Err(_) => {
            tracing::error!("interceptor panicked; answering INTERNAL");
            Err(Error::Panicked)
        }
    }
}

/// The host is the judge of verdicts (it turns an invalid one into
/// `host_error:verdict_invalid`); the server still sends it unchanged, but
/// tells the author early.
fn warn_if_invalid(ctx: &AgentContext, verdict: &hookwire::Verdict) {
    let point = ctx.point();
    if let Err(e) = verdict.validate() {
        tracing::warn!(%point, error = %e, "hook returned an invalid verdict");
    } else if verdict.decision == Decision::Transform && !point.permits_transform() {
        tracing::warn!(%point, "hook returned a transform where transform is forbidden");
    }
}

/// The generated trait: each point RPC wraps its request in the matching
/// [`PointRequest`] variant. (The whole impl is generated so that
/// `async_trait` sees the methods.)
macro_rules! impl_interceptor {
    ($($method:ident($req:ident) => $variant:ident;)*) => {
        #[tonic::async_trait]
        impl<S: InterceptorService + ?Sized> Interceptor for GrpcAdapter<S> {
            $(
                async fn $method(
                    &self,
                    request: Request<pb::$req>,
                ) -> Result<Response<pb::InterceptorResponse>, Status> {
                    self.handle(PointRequest::$variant(request.into_inner()))
                        .await
                        .map(Response::new)
                        .map_err(Status::from)
                }
            )*

            async fn describe(
                &self,
                _request: Request<pb::DescribeRequest>,
            ) -> Result<Response<pb::Manifest>, Status> {
                unwind_guard(async { Ok(pb::Manifest::from(&self.service.manifest())) })
                    .await
                    .map(Response::new)
                    .map_err(Status::from)
            }
        }
    };
}

impl_interceptor! {
    agent_startup(AgentStartupRequest) => AgentStartup;
    input(InputRequest) => Input;
    pre_model_call(PreModelCallRequest) => PreModelCall;
    post_model_call(PostModelCallRequest) => PostModelCall;
    pre_tool_call(PreToolCallRequest) => PreToolCall;
    post_tool_call(PostToolCallRequest) => PostToolCall;
    output(OutputRequest) => Output;
    agent_shutdown(AgentShutdownRequest) => AgentShutdown;
}
