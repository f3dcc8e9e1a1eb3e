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
//! | `check` | the shared bad-request error, the bound on ids, string clipping |
//! | `items` | an item's kind, the governed calls, the bounds on items and parts |
//! | `request` | request checks, items → entries, rewrites, overrides, a stored conversation ahead of the items, the owner's tag |
//! | `tools` | the request's tools: function names, `namespace` tools opened, hosted tools |
//! | `response` | the whole answer: neutral view and the settled rebuild |
//! | `stream` | the upstream's typed events assembled into an answer |
//! | `writer` | the typed events the client receives |

mod check;
mod items;
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

use crate::api::model::Api;
use crate::error::Error;

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
