//! The model an [`Agent`](super::Agent) talks to: the [`Model`] trait, its
//! forwarding through `Arc` and `Box`, and [`model_fn`] for a model made
//! from an async closure.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::interceptor::{BoxError, BoxFuture};
use crate::payload::ModelResponse;

/// The model an agent talks to. It receives the conversation as the
/// `messages` array the `pre_model_call` verdict permitted (each message a
/// `{role, content, ...}` object) and answers with text and tool calls.
pub trait Model: Send + Sync + 'static {
    /// `model.id` in the contexts of both model points.
    fn id(&self) -> &str;

    /// Answers one request. An error (or a panic) fails the turn.
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>>;
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        (**self).respond(messages)
    }
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        (**self).respond(messages)
    }
}

/// A [`Model`] made from an async closure; see [`model_fn`].
pub struct ModelFn<F> {
    id: String,
    f: F,
}

/// Wraps `f(messages) -> impl Future<Output = Result<ModelResponse, BoxError>>`
/// as a model with id `id`. The closure receives an owned copy of the
/// messages.
pub fn model_fn<F, Fut>(id: impl Into<String>, f: F) -> ModelFn<F>
where
    F: Fn(Vec<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelResponse, BoxError>> + Send + 'static,
{
    ModelFn { id: id.into(), f }
}

impl<F, Fut> Model for ModelFn<F>
where
    F: Fn(Vec<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelResponse, BoxError>> + Send + 'static,
{
    fn id(&self) -> &str {
        &self.id
    }

    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        Box::pin((self.f)(messages.to_vec()))
    }
}
