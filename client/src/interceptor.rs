//! In-process interceptors: the trait a Rust control implements to run
//! inside the agent, and an adapter for plain async closures.

use std::future::Future;
use std::pin::Pin;

use hookwire::AgentContext;
use hookwire::wire::InterceptorResponse;

/// A boxed error an in-process interceptor may fail with; the host turns it
/// into `host_error:interceptor_failed` (§6.3) and records only its type.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A boxed future, as the object-safe traits of this crate return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A control that decides in the agent's own process (§7). The host hands
/// it a shared reference, so it cannot mutate what other interceptors see.
/// Panics and errors fail closed as `host_error:interceptor_failed`.
pub trait Interceptor: Send + Sync + 'static {
    /// Decides on one context.
    fn intercept<'a>(
        &'a self,
        ctx: &'a AgentContext,
    ) -> BoxFuture<'a, Result<InterceptorResponse, BoxError>>;
}

/// An [`Interceptor`] made from an async closure; see [`interceptor_fn`].
pub struct InterceptorFn<F>(F);

/// Wraps `f(ctx) -> impl Future<Output = Result<impl Into<InterceptorResponse>, BoxError>>`
/// as an interceptor. The closure receives an owned copy of the context.
pub fn interceptor_fn<F, Fut, R>(f: F) -> InterceptorFn<F>
where
    F: Fn(AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, BoxError>> + Send + 'static,
    R: Into<InterceptorResponse>,
{
    InterceptorFn(f)
}

impl<F, Fut, R> Interceptor for InterceptorFn<F>
where
    F: Fn(AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, BoxError>> + Send + 'static,
    R: Into<InterceptorResponse>,
{
    fn intercept<'a>(
        &'a self,
        ctx: &'a AgentContext,
    ) -> BoxFuture<'a, Result<InterceptorResponse, BoxError>> {
        let fut = (self.0)(ctx.clone());
        Box::pin(async move { fut.await.map(Into::into) })
    }
}
