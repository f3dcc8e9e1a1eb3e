//! The one way to write a policy: [`Interceptor`], whether the policy runs
//! inside the agent's process (bound with `hookwire-client`) or as a gRPC
//! service (served with `hookwire-server`).
//!
//! - [`Interceptor`]: one async hook per interception point, each falling
//!   back to [`Interceptor::intercept`], which allows; plus the
//!   [`Manifest`] the policy describes itself with.
//! - [`HookResponse`]: what a hook may return — a bare [`Verdict`], a full
//!   [`InterceptorResponse`], or a `Result` of either when the hook can
//!   fail. A failed hook is never an allow: in-process it is
//!   `host_error:interceptor_failed`; over gRPC it is an `INTERNAL` status
//!   (whose message does not carry the error), which the host records the
//!   same way.
//! - [`dispatch`]: the routing from a context to the hook for its point.
//! - [`DynInterceptor`]: the object-safe form every [`Interceptor`] has, so
//!   a host or a server can keep policies of different types side by side.
//! - [`interceptor_fn`]: a policy from an async closure.
//!
//! Nothing here knows about transports or hosts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;

use crate::context::AgentContext;
use crate::manifest::{Manifest, manifest};
use crate::point::InterceptionPoint;
use crate::response::InterceptorResponse;
use crate::verdict::Verdict;

/// The error a failing hook returns, boxed. Whatever it says stays with the
/// policy's operator: records and gRPC statuses never carry it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A boxed, sendable future, as object-safe async traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a hook returns: anything that becomes an interceptor response or a
/// failure, and that an `allow` verdict becomes (so the default hooks can
/// allow). Implemented for [`Verdict`], [`InterceptorResponse`], and
/// `Result<T, E>` of either with any error convertible to [`BoxError`].
pub trait HookResponse: Send {
    /// The response a default hook gives: `verdict`, unchanged.
    fn from_verdict(verdict: Verdict) -> Self;

    /// The response the host receives, or the failure it records.
    fn into_response(self) -> Result<InterceptorResponse, BoxError>;
}

impl HookResponse for Verdict {
    fn from_verdict(verdict: Verdict) -> Self {
        verdict
    }
    fn into_response(self) -> Result<InterceptorResponse, BoxError> {
        Ok(self.into())
    }
}

impl HookResponse for InterceptorResponse {
    fn from_verdict(verdict: Verdict) -> Self {
        verdict.into()
    }
    fn into_response(self) -> Result<InterceptorResponse, BoxError> {
        Ok(self)
    }
}

impl<T, E> HookResponse for Result<T, E>
where
    T: HookResponse,
    E: Into<BoxError> + Send,
{
    fn from_verdict(verdict: Verdict) -> Self {
        Ok(T::from_verdict(verdict))
    }
    fn into_response(self) -> Result<InterceptorResponse, BoxError> {
        self.map_err(Into::into)?.into_response()
    }
}

/// An AGENT-HOOKS-0.1 interceptor: a policy deciding at the interception
/// points of an agent's loop, in-process or over gRPC.
///
/// Implement [`manifest`](Self::manifest) (a policy names itself) and
/// choose a [`Response`](Self::Response) type: [`Verdict`] when a verdict is
/// all you return, [`InterceptorResponse`] when you also attach namespaced
/// extensions (§5.5), `Result<_, E>` of either when a hook can fail. Then
/// override the hooks you need; the others fall back to
/// [`intercept`](Self::intercept), which allows.
///
/// Hooks receive a context already checked against the §4 envelope, by
/// shared reference, so a policy cannot change what other interceptors
/// see. A hook that fails or panics fails closed: the host records
/// `host_error:interceptor_failed`. A hook that cannot decide should
/// prefer a `deny` with its own reason, which tells operators more.
///
/// # Example
///
/// ```
/// use hookwire::{AgentContext, InterceptionPoint, Interceptor, Manifest, Verdict};
/// use hookwire::{async_trait, manifest};
///
/// struct NoShell;
///
/// #[async_trait]
/// impl Interceptor for NoShell {
///     type Response = Verdict;
///
///     fn manifest(&self) -> Manifest {
///         Manifest {
///             points: vec![InterceptionPoint::PreToolCall],
///             ..manifest("no-shell", "0.1.0")
///         }
///     }
///
///     async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
///         match ctx.tool_name() {
///             Some("shell") => Verdict::deny("shell_forbidden"),
///             _ => Verdict::allow(),
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// What the hooks return; see [`HookResponse`].
    type Response: HookResponse;

    /// What this policy is and where it wants to be called, answered by
    /// `Describe` when served. Hosts may bind a service only at `points`
    /// (empty means all eight). Start from [`manifest`](crate::manifest()).
    fn manifest(&self) -> Manifest;

    /// The fallback of every hook that is not overridden. Default: `allow`.
    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        let _ = ctx;
        Self::Response::from_verdict(Verdict::allow())
    }

    /// `agent_startup`: once per session; target `agent_init`. Transform
    /// is forbidden here.
    async fn agent_startup(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `input`: each external request; target `input`.
    async fn input(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `pre_model_call`: before each model request; target `messages`.
    async fn pre_model_call(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `post_model_call`: after each model response; target `response`.
    async fn post_model_call(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `pre_tool_call`: before each tool invocation; target
    /// `tool_call.args`.
    async fn pre_tool_call(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `post_tool_call`: after each tool invocation; target
    /// `tool_result.value`.
    async fn post_tool_call(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `output`: before the final response reaches the caller; target
    /// `output`.
    async fn output(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }

    /// `agent_shutdown`: once per session, last; target `summary`.
    /// Transform is forbidden here.
    async fn agent_shutdown(&self, ctx: &AgentContext) -> Self::Response {
        self.intercept(ctx).await
    }
}

/// Shares one policy between its binding or server and the code that built
/// it (for example a test that inspects what the policy saw).
#[async_trait]
impl<T: Interceptor + ?Sized> Interceptor for Arc<T> {
    type Response = T::Response;

    fn manifest(&self) -> Manifest {
        (**self).manifest()
    }
    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        (**self).intercept(ctx).await
    }
    async fn agent_startup(&self, ctx: &AgentContext) -> Self::Response {
        (**self).agent_startup(ctx).await
    }
    async fn input(&self, ctx: &AgentContext) -> Self::Response {
        (**self).input(ctx).await
    }
    async fn pre_model_call(&self, ctx: &AgentContext) -> Self::Response {
        (**self).pre_model_call(ctx).await
    }
    async fn post_model_call(&self, ctx: &AgentContext) -> Self::Response {
        (**self).post_model_call(ctx).await
    }
    async fn pre_tool_call(&self, ctx: &AgentContext) -> Self::Response {
        (**self).pre_tool_call(ctx).await
    }
    async fn post_tool_call(&self, ctx: &AgentContext) -> Self::Response {
        (**self).post_tool_call(ctx).await
    }
    async fn output(&self, ctx: &AgentContext) -> Self::Response {
        (**self).output(ctx).await
    }
    async fn agent_shutdown(&self, ctx: &AgentContext) -> Self::Response {
        (**self).agent_shutdown(ctx).await
    }
}

/// Calls the hook for `ctx.point()` and returns its response, or the
/// failure it returned. The routing every host and server uses.
pub async fn dispatch<I>(
    interceptor: &I,
    ctx: &AgentContext,
) -> Result<InterceptorResponse, BoxError>
where
    I: Interceptor + ?Sized,
{
    let response = match ctx.point() {
        InterceptionPoint::AgentStartup => interceptor.agent_startup(ctx).await,
        InterceptionPoint::Input => interceptor.input(ctx).await,
        InterceptionPoint::PreModelCall => interceptor.pre_model_call(ctx).await,
        InterceptionPoint::PostModelCall => interceptor.post_model_call(ctx).await,
        InterceptionPoint::PreToolCall => interceptor.pre_tool_call(ctx).await,
        InterceptionPoint::PostToolCall => interceptor.post_tool_call(ctx).await,
        InterceptionPoint::Output => interceptor.output(ctx).await,
        InterceptionPoint::AgentShutdown => interceptor.agent_shutdown(ctx).await,
    };
    response.into_response()
}

/// The object-safe form of an [`Interceptor`] (whose associated
/// `Response` type keeps it from being a trait object itself). Every
/// interceptor is one; hosts and servers hold `Arc<dyn DynInterceptor>`.
pub trait DynInterceptor: Send + Sync + 'static {
    /// [`Interceptor::manifest`].
    fn describe(&self) -> Manifest;

    /// [`dispatch`]: the hook for `ctx.point()`, its response or failure.
    fn decide<'a>(
        &'a self,
        ctx: &'a AgentContext,
    ) -> BoxFuture<'a, Result<InterceptorResponse, BoxError>>;
}

impl<I: Interceptor> DynInterceptor for I {
    fn describe(&self) -> Manifest {
        self.manifest()
    }

    fn decide<'a>(
        &'a self,
        ctx: &'a AgentContext,
    ) -> BoxFuture<'a, Result<InterceptorResponse, BoxError>> {
        Box::pin(dispatch(self, ctx))
    }
}

/// An [`Interceptor`] made from an async closure; see [`interceptor_fn`].
pub struct InterceptorFn<F> {
    f: F,
    manifest: Manifest,
}

/// Wraps `f(ctx) -> impl Future<Output = R>` as an interceptor deciding the
/// same way at every point, where `R` is any [`HookResponse`] (typically
/// `Result<Verdict, BoxError>`). The closure receives an owned copy of the
/// context. Its manifest is named `interceptor_fn` and asks for all eight
/// points; [`InterceptorFn::with_manifest`] replaces it.
pub fn interceptor_fn<F, Fut, R>(f: F) -> InterceptorFn<F>
where
    F: Fn(AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: HookResponse,
{
    InterceptorFn {
        f,
        manifest: manifest("interceptor_fn", env!("CARGO_PKG_VERSION")),
    }
}

impl<F> InterceptorFn<F> {
    /// The same interceptor, describing itself with `manifest`.
    pub fn with_manifest(mut self, manifest: Manifest) -> Self {
        self.manifest = manifest;
        self
    }
}

#[async_trait]
impl<F, Fut, R> Interceptor for InterceptorFn<F>
where
    F: Fn(AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: HookResponse,
{
    type Response = R;

    fn manifest(&self) -> Manifest {
        self.manifest.clone()
    }

    async fn intercept(&self, ctx: &AgentContext) -> R {
        (self.f)(ctx.clone()).await
    }
}

#[cfg(test)]
mod tests;
