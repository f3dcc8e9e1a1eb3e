//! The gRPC edge: any [`Interceptor`] as the generated
//! `hookwire.v1.Interceptor` service.
//!
//! Each RPC decodes its request into a validated [`AgentContext`]
//! (failure: `INVALID_ARGUMENT`), routes it to the hook for its point
//! ([`DynInterceptor::decide`], the routing hosts use in-process too) with
//! the caller's verified client certificate, if any, as
//! [`Peer::current`], and encodes the response. A hook that returns an
//! error costs one `INTERNAL`
//! status whose message does not carry the error. The whole call runs
//! under `catch_unwind`, so a panicking hook costs one `INTERNAL` status,
//! never the server.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use hookwire::pb;
use hookwire::pb::interceptor_server::{self, InterceptorServer};
use hookwire::wire::{PointRequest, context_from_request};
use hookwire::{AgentContext, Decision, DynInterceptor, Interceptor, InterceptorResponse};
use tonic::{Request, Response, Status};

use crate::error::Error;
use crate::metrics::{ServerMetrics, ServiceInstruments};
use crate::peer::Peer;

/// Largest request the server decodes by default, in bytes: the default
/// §12.3 context bound (5 MiB) with room for framing. tonic's own default
/// (4 MiB) would refuse contexts a host considers valid.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Serves an [`Interceptor`] as the generated gRPC service. Use it
/// directly to mount an interceptor on a tonic router of your own;
/// [`crate::Server`] does this for you.
#[derive(Clone)]
pub struct GrpcAdapter {
    service: Arc<dyn DynInterceptor>,
    metrics: Option<Arc<ServiceInstruments>>,
}

impl std::fmt::Debug for GrpcAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcAdapter").finish_non_exhaustive()
    }
}

impl GrpcAdapter {
    /// Wraps a policy. To share it with other code, pass an `Arc` of it
    /// (an `Arc` of an interceptor is an interceptor).
    pub fn new(service: impl Interceptor) -> Self {
        Self::from_dyn(Arc::new(service))
    }

    /// Wraps a policy already held as its object-safe form.
    pub fn from_dyn(service: Arc<dyn DynInterceptor>) -> Self {
        Self {
            service,
            metrics: None,
        }
    }

    /// Counts every request in `metrics` (`None`: no metrics), under the
    /// `service` label of the policy's manifest name.
    #[must_use]
    pub fn with_metrics(self, metrics: Option<&ServerMetrics>) -> Self {
        let metrics = metrics.map(|m| {
            let described =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.service.describe().name));
            Arc::new(m.service(described.as_deref().unwrap_or("unknown")))
        });
        Self { metrics, ..self }
    }

    /// The tonic service to add to a router, accepting requests up to
    /// [`DEFAULT_MAX_MESSAGE_BYTES`].
    pub fn into_server(self) -> InterceptorServer<Self> {
        InterceptorServer::new(self).max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// Answers one interception request: decode, route (with the caller's
    /// verified identity as [`Peer::current`]), encode.
    async fn handle(
        &self,
        peer: Option<Peer>,
        request: PointRequest,
    ) -> Result<pb::InterceptorResponse, Error> {
        let point = request.point();
        let answering = self.metrics.as_ref().map(|m| m.started(point));
        let answered = unwind_guard(async {
            let ctx = context_from_request(request).inspect_err(|e| {
                tracing::debug!(%point, error = %e, "refused an invalid context");
            })?;
            let decided = Peer::scope(peer, self.service.decide(&ctx)).await;
            let response = decided.map_err(|e| {
                tracing::error!(%point, error = %e, "hook failed; answering INTERNAL");
                Error::HookFailed
            })?;
            warn_if_invalid(&ctx, &response);
            Ok((
                pb::InterceptorResponse::from(&response),
                response.verdict.decision,
            ))
        })
        .await;
        if let Some(a) = answering {
            a.finished(answered.as_ref().map(|(_, d)| *d));
        }
        answered.map(|(r, _)| r)
    }
}

/// The verified client certificate of the call's connection, when it came
/// in over mutual TLS (the leaf is the first certificate).
fn peer_of<T>(request: &Request<T>) -> Option<Peer> {
    let certs = request.peer_certs()?;
    Peer::from_der(certs.first()?.as_ref())
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
fn warn_if_invalid(ctx: &AgentContext, response: &InterceptorResponse) {
    let point = ctx.point();
    if let Err(e) = response.validate() {
        tracing::warn!(%point, error = %e, "hook returned an invalid verdict");
    } else if response.verdict.decision == Decision::Transform && !point.permits_transform() {
        tracing::warn!(%point, "hook returned a transform where transform is forbidden");
    }
}

/// The generated trait: each point RPC wraps its request in the matching
/// [`PointRequest`] variant. (The whole impl is generated so that
/// `async_trait` sees the methods.)
macro_rules! impl_interceptor {
    ($($method:ident($req:ident) => $variant:ident;)*) => {
        #[tonic::async_trait]
        impl interceptor_server::Interceptor for GrpcAdapter {
            $(
                async fn $method(
                    &self,
                    request: Request<pb::$req>,
                ) -> Result<Response<pb::InterceptorResponse>, Status> {
                    let peer = peer_of(&request);
                    self.handle(peer, PointRequest::$variant(request.into_inner()))
                        .await
                        .map(Response::new)
                        .map_err(Status::from)
                }
            )*

            async fn describe(
                &self,
                _request: Request<pb::DescribeRequest>,
            ) -> Result<Response<pb::Manifest>, Status> {
                unwind_guard(async { Ok(pb::Manifest::from(&self.service.describe())) })
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
