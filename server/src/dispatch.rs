//! One emission answered: decode, route, isolate panics, encode. The
//! unary RPCs (`adapter`) and the `Multiplex` stream (`multiplex`) both
//! answer through a [`Dispatch`], so an emission gets the same answer
//! whichever way it came.
//!
//! The request is decoded into a validated [`AgentContext`] (failure:
//! `INVALID_ARGUMENT`) and routed to the hook for its point
//! ([`DynInterceptor::decide`], the routing hosts use in-process too) with
//! the caller's verified client certificate, if any, as [`Peer::current`].
//! A hook that returns an error costs one `INTERNAL` status whose message
//! does not carry the error. The whole call runs under `catch_unwind`, so
//! a panicking hook costs one `INTERNAL` status, never the server.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use hookwire::pb;
use hookwire::wire::{PointRequest, context_from_request};
use hookwire::{AgentContext, Decision, DynInterceptor, InterceptorResponse};
use tonic::Status;

use crate::error::Error;
use crate::metrics::{ServerMetrics, ServiceInstruments};
use crate::peer::Peer;

/// A policy with what answering for it takes: its object-safe form and,
/// when the server counts requests, its instruments.
pub(crate) struct Dispatch {
    service: Arc<dyn DynInterceptor>,
    metrics: Option<ServiceInstruments>,
}

impl Dispatch {
    /// Answers for `service`, counting nothing.
    pub(crate) fn new(service: Arc<dyn DynInterceptor>) -> Self {
        Self {
            service,
            metrics: None,
        }
    }

    /// The same policy, counted in `metrics` (`None`: no metrics) under the
    /// `service` label of its manifest name.
    pub(crate) fn with_metrics(&self, metrics: Option<&ServerMetrics>) -> Self {
        let metrics = metrics.map(|m| {
            let described =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.service.describe().name));
            m.service(described.as_deref().unwrap_or("unknown"))
        });
        Self {
            service: self.service.clone(),
            metrics,
        }
    }

    /// The policy's manifest on the wire; a panicking `manifest` costs one
    /// `INTERNAL` status.
    pub(crate) async fn describe(&self) -> Result<pb::Manifest, Status> {
        let described = unwind_guard(async { Ok(pb::Manifest::from(&self.service.describe())) });
        Ok(described.await?)
    }

    /// Answers one interception request: decode, route (with the caller's
    /// verified identity as [`Peer::current`]), encode. The request comes
    /// boxed: it is kilobytes, and every future on its way here (span,
    /// deadline, unwind guard) would otherwise copy it.
    pub(crate) async fn answer(
        &self,
        peer: Option<Peer>,
        request: Box<PointRequest>,
    ) -> Result<pb::InterceptorResponse, Status> {
        let point = request.point();
        let answering = self.metrics.as_ref().map(|m| m.started(point));
        let answered = unwind_guard(async {
            let ctx = context_from_request(*request).inspect_err(|e| {
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
        answered.map(|(r, _)| r).map_err(Status::from)
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
fn warn_if_invalid(ctx: &AgentContext, response: &InterceptorResponse) {
    let point = ctx.point();
    if let Err(e) = response.validate() {
        tracing::warn!(%point, error = %e, "hook returned an invalid verdict");
    } else if response.verdict.decision == Decision::Transform && !point.permits_transform() {
        tracing::warn!(%point, "hook returned a transform where transform is forbidden");
    }
}
