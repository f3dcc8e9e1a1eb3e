//! OpenAI Responses (`POST /v1/responses`), the API of the OpenAI Agents
//! SDK's default model and of Codex: a request's `instructions` and
//! `input` items become the neutral transcript, `function_call` and
//! `function_call_output` items (and their `custom_tool_call` freeform
//! counterparts) are the tool seams, `previous_response_id`
//! names the conversation a request continues, and an answer's `output`
//! items (whole, or assembled from the typed stream events) become the
//! neutral answer and are rebuilt from what the chain released.
//!
//! Hosted tools (web search, file search, code interpreter, image
//! generation, remote MCP) run at the provider: their items are kept as
//! the provider sent them and surface at `post_model_call` only. Tools the
//! client would run itself without a call the gateway can govern
//! (`computer`, `local_shell`, `shell`, `apply_patch`) are refused, so
//! nothing the model asks for runs ungoverned.
//!
//! | file | role |
//! | --- | --- |
//! | `check` | the shared bad-request error and string clipping |
//! | `request` | request checks, items → entries, rewrites, overrides, a stored conversation ahead of the items, the owner's tag |
//! | `tools` | the request's tools: function names, `namespace` tools opened |
//! | `response` | the whole answer: neutral view and the settled rebuild |
//! | `stream` | the upstream's typed events assembled into an answer |
//! | `writer` | the typed events the client receives |

mod check;
pub(crate) mod members;
mod request;
mod response;
mod stream;
mod tools;
mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_response;
#[cfg(test)]
mod tests_stream;

use axum::http::StatusCode;
use serde_json::Value;

pub(crate) use request::ResponsesRequest;
pub(crate) use response::ResponsesResponse;
pub(crate) use stream::ResponsesAssembler;
pub(crate) use writer::ResponsesWriter;

use crate::api::Api;
use crate::error::Error;

/// How many content parts one input item (or one tool output) may carry.
pub(crate) const MAX_PARTS: usize = 1024;
/// How many tools one request may declare.
pub(crate) const MAX_TOOLS: usize = 512;
/// How many output items one answer may carry.
pub(crate) const MAX_OUTPUT_ITEMS: usize = 1024;
/// How long an id the gateway keeps (`previous_response_id`, `call_id`)
/// and an item or part `type` it names in the context may be.
pub(crate) const MAX_ID: usize = 256;

/// The hosted tool types: they run at the provider, and their items
/// surface at `post_model_call` only (`web_search` also covers its dated
/// and preview variants).
const HOSTED_TOOLS: [&str; 5] = [
    "web_search",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
];

/// The output item types of tools the client runs itself outside a
/// function call: an answer carrying one is refused (their tools are
/// refused in the request, so only a misbehaving upstream sends them).
const CLIENT_RUN_CALLS: [&str; 4] = [
    "computer_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
];

/// Whether an output item is a call the chain governs: a function call,
/// or a custom (freeform) tool call, whose text `input` the chain sees as
/// the arguments `{"input": TEXT}`.
fn is_call(kind: &str) -> bool {
    matches!(kind, "function_call" | "custom_tool_call")
}

/// Whether a request's tool `type` is one the provider runs.
fn is_hosted_tool(kind: &str) -> bool {
    HOSTED_TOOLS.contains(&kind) || kind.starts_with("web_search")
}

/// The OpenAI Responses API.
pub(crate) struct Responses;

impl Api for Responses {
    const NAME: &'static str = "responses";
    const ROUTE: &'static str = "/v1/responses";
    const UPSTREAM_PATH: &'static str = "/responses";
    type Request = ResponsesRequest;
    type Response = ResponsesResponse;
    type Assembler = ResponsesAssembler;
    type Writer = ResponsesWriter;

    fn decode_request(body: &[u8]) -> Result<Self::Request, Error> {
        ResponsesRequest::decode(body)
    }

    fn decode_response(body: &[u8]) -> Result<Self::Response, Error> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|_| Error::UpstreamResponse("the response is not JSON".into()))?;
        ResponsesResponse::from_value(value).map_err(Error::UpstreamResponse)
    }

    /// The OpenAI shape, as Chat Completions has it: the Responses SDKs
    /// read the same `{"error": {"message", "type", "param", "code"}}`.
    /// `GET /responses/{id}` and `GET /responses/{id}/input_items`.
    fn stored_paths(id: &str) -> Option<(String, String)> {
        Some((
            format!("/responses/{id}"),
            format!("/responses/{id}/input_items"),
        ))
    }

    fn error_body(error: &Error) -> (StatusCode, Value) {
        (error.status(), error.to_openai_json())
    }
}
