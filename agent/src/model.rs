//! The model an [`Agent`](super::Agent) talks to: the [`Model`] trait, its
//! forwarding through `Arc` and `Box`, and [`model_fn`] for a model made
//! from an async closure.
//!
//! A model answers in one piece ([`Model::respond`]), or streams
//! ([`Model::respond_stream`], §12.1): the agent then assembles the stream
//! (buffered, the default) or mediates it segment by segment
//! ([`Agent::incremental_output`](super::Agent::incremental_output)).

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use hookwire_client::{BoxError, BoxFuture, ChunkStream, ModelResponse};

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

    /// Answers one request as a stream of chunks, when the model streams;
    /// `None` (the default) when it answers in one piece through
    /// [`Model::respond`]. The agent prefers the stream when there is one.
    fn respond_stream<'a>(&'a self, _messages: &'a [Value]) -> Option<ChunkStream<'a>> {
        None
    }

    /// Answers one request as the JSON text of a response object
    /// (`{content, tool_calls, finish_reason}`), exactly as a provider sent
    /// it, when the model has it; `None` (the default) otherwise. The host
    /// decodes the text exactly (§4.4): a literal it cannot carry without
    /// rounding denies the `post_model_call` `host_error:context_invalid`
    /// instead of being rounded. Preferred over [`Model::respond`].
    fn respond_json<'a>(
        &'a self,
        _messages: &'a [Value],
    ) -> Option<BoxFuture<'a, Result<String, BoxError>>> {
        None
    }
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
    fn respond_stream<'a>(&'a self, messages: &'a [Value]) -> Option<ChunkStream<'a>> {
        (**self).respond_stream(messages)
    }
    fn respond_json<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> Option<BoxFuture<'a, Result<String, BoxError>>> {
        (**self).respond_json(messages)
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
    fn respond_stream<'a>(&'a self, messages: &'a [Value]) -> Option<ChunkStream<'a>> {
        (**self).respond_stream(messages)
    }
    fn respond_json<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> Option<BoxFuture<'a, Result<String, BoxError>>> {
        (**self).respond_json(messages)
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
