//! The wire APIs the gateway governs, each an adapter over one
//! provider-neutral conversation model.
//!
//! An adapter only translates: a client request into a [`TurnRequest`]
//! (the transcript as the eight points see it) and back with the
//! verdicts' rewrites applied; an upstream answer (whole, or assembled
//! from its stream events) into a
//! [`ModelResponse`](hookwire_client::ModelResponse); and a [`Settled`]
//! answer (what the chain released) into the API's own response or
//! events. The core (`crate::core`) owns everything else: sessions,
//! order, history replay, tool-call pairing, verdict application,
//! upstream mutation, callbacks and records. A new API is one module
//! here implementing [`Api`], plus its tests.
//!
//! | module | API | route |
//! | --- | --- | --- |
//! | `chat` | OpenAI Chat Completions | `POST /v1/chat/completions` |
//! | `responses` | OpenAI Responses | `POST /v1/responses` |
//! | `messages` | Anthropic Messages | `POST /v1/messages` |
//!
//! Beside them, `model` holds the neutral conversation model and the
//! [`Api`] contract every adapter builds on (re-exported here), and
//! `mediation` the rules that read each adapter's table of members.

pub(crate) mod chat;
pub(crate) mod mediation;
pub(crate) mod messages;
mod model;
pub(crate) mod responses;

pub(crate) use model::{
    Api, ApiRequest, ApiResponse, Entry, EventAssembler, EventWriter, Finish, Rewrite, Settled,
    Text, TurnRequest,
};

/// The mediation table of an API, by its name (`chat_completions`,
/// `responses`, `messages`): what the gateway governs, passes as inert or
/// refuses of its requests and answers. Each adapter keeps its own table
/// (`members`); the rules that read them are in `mediation`.
pub fn mediation_table(api: &str) -> Option<&'static mediation::ApiTable> {
    [
        &chat::members::TABLE,
        &responses::members::TABLE,
        &messages::members::TABLE,
    ]
    .into_iter()
    .find(|t| t.api == api)
}
