//! The trait an interceptor author implements, and the routing from a
//! context to the hook for its point.
//!
//! [`InterceptorService`] has one typed hook per interception point. Every
//! hook defaults to [`InterceptorService::intercept`], whose default is
//! `allow`, so a service overrides only the points it cares about. Nothing
//! here knows about gRPC: [`crate::adapter`] puts a service on the wire, and
//! [`dispatch`] lets hosts and tests call one in-process.

use std::sync::Arc;

use async_trait::async_trait;
use hookwire::wire::{InterceptorResponse, Manifest};
use hookwire::{AgentContext, InterceptionPoint, SPEC_VERSION, Verdict};

/// An AGENT-HOOKS-0.1 interceptor: decides at the interception points of an
/// agent's loop.
///
/// Implement [`manifest`](Self::manifest) (a service must name itself) and
/// choose a [`Response`](Self::Response) type: [`Verdict`] when a verdict is
/// all you return, [`InterceptorResponse`] when you also attach namespaced
/// extensions (§5.5). Then override the hooks you need; the others fall
/// back to [`intercept`](Self::intercept), which allows.
///
/// Hooks receive a context already checked against the §4 envelope. A hook
/// that panics does not take the server down: the call fails with
/// `INTERNAL`, which the host records as `host_error:interceptor_failed`
/// (fail-closed). A hook that cannot decide should prefer returning a
/// `deny` with its own reason, which tells operators more.
///
/// # Example
///
/// ```no_run
/// use hookwire_server::prelude::*;
///
/// struct NoShell;
///
/// #[async_trait]
/// impl InterceptorService for NoShell {
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
///
/// # async fn run() -> Result<(), hookwire_server::Error> {
/// Server::builder()
///     .service(NoShell)
///     .serve("127.0.0.1:50051".parse().unwrap())
///     .await
/// # }
/// ```
#[async_trait]
pub trait InterceptorService: Send + Sync + 'static {
    /// What the hooks return: anything that becomes an interceptor
    /// response, and that a bare verdict becomes (so the defaults can
    /// allow). [`Verdict`] and [`InterceptorResponse`] both qualify.
    type Response: Into<InterceptorResponse> + From<Verdict> + Send;

    /// What this service is and where it wants to be called, answered by
    /// `Describe`. Hosts may bind the service only at `points` (empty
    /// means all eight). Start from [`crate::manifest`].
    fn manifest(&self) -> Manifest;

    /// The fallback of every hook that is not overridden. Default: `allow`.
    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        let _ = ctx;
        Verdict::allow().into()
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

/// Shares one service between a server and the code that built it (for
/// example a test that inspects what the service saw).
#[async_trait]
impl<T: InterceptorService + ?Sized> InterceptorService for Arc<T> {
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

/// Calls the hook for `ctx.point()` and returns its response: the routing
/// the gRPC adapter uses, available for in-process calls and tests.
pub async fn dispatch<S>(service: &S, ctx: &AgentContext) -> InterceptorResponse
where
    S: InterceptorService + ?Sized,
{
    let response = match ctx.point() {
        InterceptionPoint::AgentStartup => service.agent_startup(ctx).await,
        InterceptionPoint::Input => service.input(ctx).await,
        InterceptionPoint::PreModelCall => service.pre_model_call(ctx).await,
        InterceptionPoint::PostModelCall => service.post_model_call(ctx).await,
        InterceptionPoint::PreToolCall => service.pre_tool_call(ctx).await,
        InterceptionPoint::PostToolCall => service.post_tool_call(ctx).await,
        InterceptionPoint::Output => service.output(ctx).await,
        InterceptionPoint::AgentShutdown => service.agent_shutdown(ctx).await,
    };
    response.into()
}

/// A manifest for a service called at all eight points, speaking the
/// contract version of this crate, with no description. Narrow it with
/// struct update syntax: `Manifest { points: vec![..], ..manifest(n, v) }`.
pub fn manifest(name: impl Into<String>, version: impl Into<String>) -> Manifest {
    Manifest {
        name: name.into(),
        version: version.into(),
        spec: SPEC_VERSION.to_owned(),
        points: Vec::new(),
        description: String::new(),
    }
}
