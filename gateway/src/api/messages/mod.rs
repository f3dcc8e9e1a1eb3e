//! The Anthropic Messages API (`POST /v1/messages`): requests, whole
//! answers and streamed events translated to and from the neutral turn.
//!
//! The tool seams are content blocks: an assistant's `tool_use` blocks are
//! the calls it proposes, a user message's `tool_result` blocks answer
//! them. `system` is the instructions; `thinking`, `redacted_thinking`
//! and the server tools' blocks (`server_tool_use`,
//! `web_search_tool_result`, …) pass through untouched. Errors take the
//! API's own shape, `{"type": "error", "error": {"type", "message"}}`.
//! `docs/gateway-messages.md` maps every block and event to the points.
//!
//! | file | role |
//! | --- | --- |
//! | `blocks` | content blocks: their type, their text read and written, `tool_use` blocks, a settled answer's blocks |
//! | `stop` | the `stop_reason`, to and from the neutral finish |
//! | `error` | the API's error shape |
//! | `request` | request checks, messages → entries, rewrites, overrides |
//! | `response` | the whole answer: neutral view and the settled rebuild |
//! | `stream` | the upstream's events assembled into an answer |
//! | `writer` | the events the client receives |

mod blocks;
mod error;
pub(crate) mod members;
mod request;
mod response;
mod stop;
mod stream;
#[cfg(test)]
mod tests;
mod writer;

use axum::http::StatusCode;
use serde_json::Value;

use crate::api::model::Api;
use crate::error::Error;

use error::error_body;
pub(crate) use request::MessagesRequest;
pub(crate) use response::MessagesResponse;
pub(crate) use stream::MessagesAssembler;
pub(crate) use writer::MessagesWriter;

/// The header the Anthropic SDKs send their key in.
pub(crate) const API_KEY_HEADER: &str = "x-api-key";

/// The Anthropic Messages API.
pub(crate) struct Messages;

impl Api for Messages {
    const NAME: &'static str = "messages";
    const ROUTE: &'static str = "/v1/messages";
    const UPSTREAM_PATH: &'static str = "/messages";
    type Request = MessagesRequest;
    type Response = MessagesResponse;
    type Assembler = MessagesAssembler;
    type Writer = MessagesWriter;

    fn decode_request(body: &[u8]) -> Result<Self::Request, Error> {
        MessagesRequest::decode(body)
    }

    fn decode_response(body: &[u8]) -> Result<Self::Response, Error> {
        MessagesResponse::decode(body)
    }

    fn error_body(error: &Error) -> (StatusCode, Value) {
        error_body(error)
    }

    fn pooled_credential_header() -> &'static str {
        API_KEY_HEADER
    }
}
