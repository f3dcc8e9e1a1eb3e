//! The gRPC edge: any [`Interceptor`] as the generated
//! `hookwire.v1.Interceptor` service.
//!
//! Each point RPC reads the caller's verified client certificate and its
//! W3C trace context from the call, and has the `dispatch` module answer
//! the request (decode, route, panic isolation, encode). `Describe` sends
//! the policy's manifest, with the `Multiplex` stream declared in its
//! `hookwire` extension unless [`GrpcAdapter::unary_only`].
//!
//! The same service also serves the `Multiplex` stream (a hookwire
//! extension): many sessions' emissions on one stream, each answered
//! exactly as its unary RPC would be (a response, or the error status as
//! an error outcome), in any order, each under its own deadline and
//! cancellable by the host. The emissions of one session are decided one
//! after the other in the order they arrived; at most
//! [`MULTIPLEX_IN_FLIGHT`](crate::MULTIPLEX_IN_FLIGHT) run at once per
//! stream, and an emission beyond that waits, the stream unread behind it,
//! until one finishes, so HTTP/2 flow control holds back a host that sends
//! faster than the policy decides. How the stream is served is the
//! `multiplex` module's; the unary RPCs and the stream are siblings over
//! `dispatch`.

use std::sync::Arc;

use hookwire::pb;
use hookwire::pb::interceptor_server::{self, InterceptorServer};
use hookwire::wire::{PointRequest, declare_multiplex};
use hookwire::{DynInterceptor, Interceptor};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;

use crate::dispatch::Dispatch;
use crate::metrics::ServerMetrics;
use crate::multiplex::MultiplexStream;
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
    dispatch: Arc<Dispatch>,
    /// Whether `Describe` declares the `Multiplex` stream.
    multiplex: bool,
    /// `true` once the server drains: `Multiplex` streams stop taking
    /// emissions and end when those in flight are answered.
    drain: Arc<watch::Sender<bool>>,
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
            dispatch: Arc::new(Dispatch::new(service)),
            multiplex: true,
            drain: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Ends every `Multiplex` stream, now and from now on: each stops
    /// taking emissions, answers those in flight and ends, so the host
    /// goes on elsewhere or over a new connection. Call it when a router
    /// of your own starts a graceful shutdown, which an open stream would
    /// otherwise hold up; [`crate::Server`] does this for you.
    pub fn end_streams(&self) {
        self.drain.send_replace(true);
    }

    /// Shares the server's drain signal (fired when shutdown starts).
    pub(crate) fn with_drain(self, drain: Arc<watch::Sender<bool>>) -> Self {
        Self { drain, ..self }
    }

    /// Leaves the `Multiplex` stream out of the manifest, so hosts call
    /// the unary RPCs only (the stream itself is still answered): for a
    /// deployment whose proxies cut long-lived streams, or to measure the
    /// unary path.
    #[must_use]
    pub fn unary_only(self) -> Self {
        Self {
            multiplex: false,
            ..self
        }
    }

    /// Counts every request in `metrics` (`None`: no metrics), under the
    /// `service` label of the policy's manifest name.
    #[must_use]
    pub fn with_metrics(self, metrics: Option<&ServerMetrics>) -> Self {
        Self {
            dispatch: Arc::new(self.dispatch.with_metrics(metrics)),
            ..self
        }
    }

    /// The tonic service to add to a router, accepting requests up to
    /// [`DEFAULT_MAX_MESSAGE_BYTES`].
    pub fn into_server(self) -> InterceptorServer<Self> {
        InterceptorServer::new(self).max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
    }
}

/// The verified client certificate of the call's connection, when it came
/// in over mutual TLS (the leaf is the first certificate).
#[cfg(feature = "tls")]
fn peer_of<T>(request: &Request<T>) -> Option<Peer> {
    let certs = request.peer_certs()?;
    Peer::from_der(certs.first()?.as_ref())
}

/// Without the `tls` feature no connection carries a certificate.
#[cfg(not(feature = "tls"))]
fn peer_of<T>(_request: &Request<T>) -> Option<Peer> {
    None
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
                    let metadata = crate::trace::MetadataExtractor(request.metadata());
                    let span = crate::trace::handler_span(&metadata, stringify!($method));
                    let request = Box::new(PointRequest::$variant(request.into_inner()));
                    span.record("hookwire.point", request.point().as_str());
                    let answered = self.dispatch.answer(peer, request).instrument(span.clone()).await;
                    crate::trace::record_handled(&span, answered.is_ok());
                    answered.map(Response::new)
                }
            )*

            async fn describe(
                &self,
                _request: Request<pb::DescribeRequest>,
            ) -> Result<Response<pb::Manifest>, Status> {
                let mut manifest = self.dispatch.describe().await?;
                if self.multiplex {
                    declare_multiplex(&mut manifest);
                }
                Ok(Response::new(manifest))
            }

            type MultiplexStream = MultiplexStream;

            async fn multiplex(
                &self,
                request: Request<Streaming<pb::MultiplexRequest>>,
            ) -> Result<Response<MultiplexStream>, Status> {
                let peer = peer_of(&request);
                let answers = crate::multiplex::answers(
                    self.dispatch.clone(),
                    self.drain.subscribe(),
                    peer,
                    request.into_inner(),
                );
                Ok(Response::new(answers))
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
