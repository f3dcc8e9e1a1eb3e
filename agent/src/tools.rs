//! What an [`Agent`](super::Agent) may run: one [`Tool`], a [`Toolbox`]
//! looked up by name, [`Tools`] (a toolbox made of tools), [`tool_fn`] for
//! a tool made from an async closure, and the [`ToolError`] a failed call
//! reports.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use hookwire_client::BoxFuture;

/// A failed tool call: the value reported as the tool's result, with
/// `is_error: true` (§4.2 `tool_result`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// What the tool reports about its failure.
    pub value: Value,
}

impl ToolError {
    /// A tool error carrying `value`.
    pub fn new(value: impl Into<Value>) -> Self {
        Self {
            value: value.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool error: {}", self.value)
    }
}

impl std::error::Error for ToolError {}

/// One tool the model may call.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, as the model calls it.
    fn name(&self) -> &str;

    /// Runs the tool with the (verdicted) arguments.
    fn call<'a>(&'a self, args: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// The set of tools an agent can run, looked up by name.
pub trait Toolbox: Send + Sync + 'static {
    /// The names registered, reported at `agent_startup`.
    fn names(&self) -> Vec<String>;

    /// Runs tool `name` with `args`. An unknown name is a tool error.
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

impl<T: Toolbox + ?Sized> Toolbox for Arc<T> {
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args)
    }
}

impl<T: Toolbox + ?Sized> Toolbox for Box<T> {
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args)
    }
}

/// A [`Toolbox`] made of individual [`Tool`]s.
#[derive(Clone, Default)]
pub struct Tools {
    tools: Vec<Arc<dyn Tool>>,
}

impl Tools {
    /// An empty toolbox (an agent without tools).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. When two tools share a name, the first one added
    /// answers.
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl Toolbox for Tools {
    fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_owned()).collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match self.tools.iter().find(|t| t.name() == name) {
            Some(tool) => tool.call(args),
            None => Box::pin(async move { Err(ToolError::new(format!("unknown tool {name:?}"))) }),
        }
    }
}

/// A [`Tool`] made from an async closure; see [`tool_fn`].
pub struct ToolFn<F> {
    name: String,
    f: F,
}

/// Wraps `f(args) -> impl Future<Output = Result<Value, ToolError>>` as a
/// tool named `name`. The closure receives an owned copy of the arguments.
pub fn tool_fn<F, Fut>(name: impl Into<String>, f: F) -> ToolFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    ToolFn {
        name: name.into(),
        f,
    }
}

impl<F, Fut> Tool for ToolFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn call<'a>(&'a self, args: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin((self.f)(args.clone()))
    }
}
