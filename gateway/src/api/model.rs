//! The provider-neutral conversation model every adapter translates to
//! and from, and the contract an adapter implements.
//!
//! The model: a request's transcript as [`Entry`]s of [`Text`] in a
//! [`TurnRequest`], the [`Rewrite`]s the core writes back into them, and
//! what the chain released of an answer ([`Settled`], ending with a
//! [`Finish`]). The contract: [`Api`] (routes, shapes, errors) with its
//! decoded [`ApiRequest`] and [`ApiResponse`], and the stream's
//! [`EventAssembler`] and [`EventWriter`]. A leaf: it names no adapter and
//! nothing of the core.

use axum::http::StatusCode;
use bytes::Bytes;
use hookwire_client::{ModelResponse, ToolCall};
use serde_json::Value;

use crate::error::Error;
use crate::extension::ModelOverrides;
use crate::sse::SseEvent;

/// The text of one transcript entry as the chain sees it: the text parts
/// joined (`input`, `output` and `pre_model_call` see and transform this),
/// and the types of the other parts (images, files, audio), which pass
/// through untouched and are named in the context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Text {
    /// The text parts, joined with no separator (a plain string content is
    /// its one part).
    pub(crate) text: String,
    /// The `type` of each non-text part, in order (e.g. `image_url`,
    /// `input_image`, `image`, `document`).
    pub(crate) other_parts: Vec<String>,
}

/// One entry of the transcript a client sends, in the order it sent them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A system or developer instruction: a `system`/`developer` message,
    /// the Responses `instructions`, the Messages `system`.
    Instructions(Text),
    /// A user message: each new one is an `input`.
    User(Text),
    /// A model turn the client replays: its text and the tool calls it
    /// proposed (not governed again; paired with the results that follow).
    Assistant {
        /// Its text.
        text: Text,
        /// The tool calls it proposed, arguments decoded.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result: each new one is a `post_tool_call` of the call it
    /// answers.
    ToolResult {
        /// The id of the call it answers (`tool_call_id`, `call_id`,
        /// `tool_use_id`).
        call_id: String,
        /// The result as sent: a string, or the API's content blocks.
        result: Value,
        /// Whether the client marked it as an error (`is_error`).
        is_error: bool,
    },
    /// Anything else the API carries (reasoning items, hosted-tool items,
    /// item references): passed through untouched, named by its type.
    Other(String),
}

/// What the core writes back into a request entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rewrite {
    /// The entry's text becomes this: the text parts are replaced by one
    /// text part holding it, where the first text part was; other parts
    /// stay where they are.
    Text(String),
    /// The tool result's content becomes this text (a transformed result,
    /// or the blocked notice of a denied one, then with `is_error` where
    /// the API has it).
    ToolResult {
        /// The text the model sees.
        text: String,
        /// Whether it reports an error.
        is_error: bool,
    },
}

/// The provider-neutral view of one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnRequest {
    /// `model`.
    pub(crate) model: String,
    /// Whether the client asked for a stream of events.
    pub(crate) stream: bool,
    /// The names of the request's function tools, sorted and deduplicated
    /// (`agent_startup`'s `tools_registered`).
    pub(crate) tools: Vec<String>,
    /// The transcript, in order. Entry indexes are what
    /// [`ApiRequest::rewrite`] takes.
    pub(crate) entries: Vec<Entry>,
    /// The API's own link to an earlier answer (Responses
    /// `previous_response_id`): the conversation it continues.
    pub(crate) continues: Option<String>,
}

/// Why an answer the client receives ended, in neutral terms; each
/// adapter maps it to its API's own stop or finish reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The model finished its answer (`stop`, `end_turn`, `completed`).
    Stop,
    /// The answer proposes tool calls that the chain permitted.
    ToolCalls,
    /// The model ran out of tokens (`length`, `max_tokens`, `incomplete`).
    Length,
    /// The chain withheld the answer or the rest of a stream
    /// (`content_filter`, `refusal`, `incomplete`/`content_filter`).
    Withheld,
    /// Any other reason the upstream gave, passed through as it named it.
    Upstream(String),
}

/// What the chain released of one answer: what the client receives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settled {
    /// The answer's text, with the gateway's notices (a blocked call, a
    /// withheld answer) where the chain put them.
    pub(crate) text: String,
    /// The tool calls the chain permitted, arguments as governed, in the
    /// order proposed.
    pub(crate) tool_calls: Vec<ToolCall>,
    /// Why the answer ends.
    pub(crate) finish: Finish,
    /// Whether the chain changed the answer's text from what the upstream
    /// wrote (a transform, a blocked call's notice). Every other copy of
    /// the upstream's text then goes with it, as it does for a withheld
    /// answer (see [`Settled::drops_copies`]).
    pub(crate) rewritten: bool,
}

impl Settled {
    /// Whether the members that repeat the upstream's text elsewhere
    /// (logprobs, audio transcripts, refusals, reasoning summaries,
    /// thinking, hosted-tool items) must be removed: the answer was
    /// withheld or rewritten, so a copy would carry what the chain took
    /// out.
    pub(crate) fn drops_copies(&self) -> bool {
        self.rewritten || self.finish == Finish::Withheld
    }
}

/// One wire API: its routes, its shapes, its errors.
pub(crate) trait Api: Send + Sync + 'static {
    /// Its name in logs, metrics labels and the gateway's record
    /// (`chat_completions`, `responses`, `messages`).
    const NAME: &'static str;
    /// The route the gateway serves it on (`/v1/chat/completions`).
    const ROUTE: &'static str;
    /// The path it is forwarded to, relative to the upstream base URL
    /// (`/chat/completions`).
    const UPSTREAM_PATH: &'static str;
    /// A decoded request, keeping everything it does not govern.
    type Request: ApiRequest;
    /// A decoded whole answer, keeping everything it does not govern.
    type Response: ApiResponse;
    /// Assembles the upstream's events into a [`Self::Response`].
    type Assembler: EventAssembler<Response = Self::Response>;
    /// Writes the events the client receives.
    type Writer: EventWriter<Assembler = Self::Assembler>;

    /// Decodes and checks a request body (bounded: entries, tools, parts).
    fn decode_request(body: &[u8]) -> Result<Self::Request, Error>;
    /// Decodes an upstream's whole answer.
    fn decode_response(body: &[u8]) -> Result<Self::Response, Error>;
    /// The body and status of an error in this API's own shape (Chat
    /// Completions and Responses: `{"error": {"message", "type", "param",
    /// "code"}}`; Messages: `{"type": "error", "error": {"type",
    /// "message"}}`).
    fn error_body(error: &Error) -> (StatusCode, Value);
    /// Where the upstream keeps answer `id` that a request may continue,
    /// and the items it was made from (`(answer, input items)` paths
    /// under the upstream base; `None`, the default: the API keeps no
    /// answers, its client replays the whole transcript).
    fn stored_paths(_id: &str) -> Option<(String, String)> {
        None
    }
    /// The header a pooled upstream key goes in: `authorization` (the
    /// default) carries `Bearer KEY`, any other header the key alone
    /// (Messages: `x-api-key`).
    fn pooled_credential_header() -> &'static str {
        "authorization"
    }
}

/// A decoded request.
pub(crate) trait ApiRequest: Send + Sized + 'static {
    /// The neutral view of the request.
    fn view(&self) -> &TurnRequest;
    /// Writes a verdict's rewrite into entry `index` of [`Self::view`].
    fn rewrite(&mut self, index: usize, rewrite: Rewrite) -> Result<(), Error>;
    /// Applies the model overrides the chain released (model, sampling,
    /// token limit, system prompt) in this API's terms.
    fn apply_overrides(&mut self, overrides: &ModelOverrides);
    /// Answers calls the upstream keeps in a conversation it stores but
    /// whose client never received them (`(call_id, text)`: calls the
    /// chain removed from an earlier answer). Responses with
    /// `previous_response_id`: without an output for each of them the
    /// upstream refuses the request. Written ahead of the client's own
    /// entries, outside [`Self::view`]. The default refuses: an API whose
    /// client replays its whole transcript never needs it.
    fn answer_withheld_calls(&mut self, answers: &[(String, String)]) -> Result<(), Error> {
        if answers.is_empty() {
            return Ok(());
        }
        Err(Error::BadRequest(
            "this API keeps no conversation upstream whose calls could be answered".into(),
        ))
    }
    /// Puts the items of the stored conversation the request continues
    /// (module `core::stored`: read back from the upstream, oldest first)
    /// ahead of its own entries in [`Self::view`]: governed with them,
    /// never sent again, and refused a rewrite (the upstream already
    /// holds them). The default refuses: an API whose client replays its
    /// whole transcript never needs it.
    fn with_stored(&mut self, _items: &[Value]) -> Result<(), Error> {
        Err(Error::BadRequest(
            "this API keeps no conversation upstream to continue".into(),
        ))
    }
    /// Tags the request with its owner (`key: tag` in its `metadata`)
    /// where the upstream keeps the answer, so that a later continuation
    /// is checked on any replica. The default does nothing.
    fn tag_owner(&mut self, _key: &str, _tag: &str) -> Result<(), Error> {
        Ok(())
    }
    /// The body that goes upstream.
    fn into_body(self) -> serde_json::Map<String, Value>;
}

/// A decoded whole answer.
pub(crate) trait ApiResponse: Send + Sized + 'static {
    /// The neutral answer: the text content (a string, `null` when none),
    /// the proposed function tool calls (arguments decoded) and the
    /// upstream's finish reason as neutral text (`stop`, `tool_calls`,
    /// `length`, or the upstream's own word).
    fn answer(&self) -> Result<ModelResponse, Error>;
    /// The types of output it carries that are neither text nor function
    /// calls (hosted tool calls, reasoning): they ran at the provider and
    /// surface at `post_model_call` only.
    fn other_outputs(&self) -> Vec<String> {
        Vec::new()
    }
    /// The answer's id, where the API lets a later request continue from
    /// it (Responses `id` for `previous_response_id`).
    fn id(&self) -> Option<String> {
        None
    }
    /// The members of the answer [`Self::settle`] removes for `settled`
    /// (paths such as `choices[0].logprobs`, `output[2](reasoning)`),
    /// for the gateway's record of the request.
    fn removed(&self, settled: &Settled) -> Vec<String>;
    /// The whole response the client receives.
    fn settle(self, settled: &Settled) -> Value;
}

/// Assembles an upstream's stream, one event at a time.
pub(crate) trait EventAssembler: Default + Send + 'static {
    /// The whole answer the events amount to.
    type Response;
    /// Adds one event; returns the answer text it adds (empty when none).
    /// Bounded: too many tool calls or an event of the wrong shape is an
    /// error.
    fn add(&mut self, event: &SseEvent) -> Result<String, String>;
    /// Whether the stream has ended by the API's terms (`[DONE]`,
    /// `response.completed`, `message_stop`).
    fn is_done(&self) -> bool;
    /// The members of the upstream's events the writer never relays
    /// because no point governs them (Chat `logprobs`, a legacy
    /// `function_call`), for the gateway's record.
    fn dropped(&self) -> Vec<String> {
        Vec::new()
    }
    /// The answer, as if it had come whole. An error when the stream did
    /// not get as far as its finish reason.
    fn finish(&self) -> Result<Self::Response, String>;
}

/// Writes the events the client receives, from what the upstream's
/// stream said so far (ids, model, usage).
pub(crate) trait EventWriter: Send + 'static {
    /// The assembler whose metadata it writes with.
    type Assembler: EventAssembler;
    /// A writer for the stream `seen` has read so far (before the first
    /// text: its first event at least).
    fn new(seen: &Self::Assembler) -> Self;
    /// The events before the first text (e.g. a role chunk,
    /// `response.created`, `message_start`).
    fn opening(&mut self) -> Vec<Bytes>;
    /// One released text delta.
    fn text(&mut self, delta: &str) -> Bytes;
    /// The events that end the answer: the permitted tool calls, the
    /// finish, usage, the end marker; `seen` is the whole stream read.
    fn closing(&mut self, seen: &Self::Assembler, settled: &Settled) -> Vec<Bytes>;
    /// An error event in the API's shape, for a stream that fails after
    /// its status was sent.
    fn error(error: &Error) -> Bytes;
    /// The error event of a stream this writer has written into, where the
    /// API numbers its events (Responses `sequence_number`); the default is
    /// [`Self::error`].
    fn error_at(&mut self, error: &Error) -> Bytes
    where
        Self: Sized,
    {
        Self::error(error)
    }
    /// The whole stream of a buffered answer: opening, the settled text,
    /// closing.
    fn replay(seen: &Self::Assembler, settled: &Settled) -> Vec<Bytes>
    where
        Self: Sized,
    {
        let mut w = Self::new(seen);
        let mut out = w.opening();
        if !settled.text.is_empty() {
            out.push(w.text(&settled.text));
        }
        out.extend(w.closing(seen, settled));
        out
    }
}
