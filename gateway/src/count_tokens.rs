//! `POST /v1/messages/count_tokens`, answered by the gateway itself.
//!
//! Claude Code (and the Anthropic SDKs' `messages.count_tokens`) ask how
//! many tokens a request would take. The body is the same content as a
//! Messages request (`system`, `messages`, `tools`), so relaying it would
//! send that content upstream past the interceptor chain, and governing
//! it would emit `input` and `pre_model_call` for a turn that never
//! happens. The gateway does neither: it decodes and checks the body
//! exactly as `POST /v1/messages` does (what that route refuses, this one
//! refuses, in the same error shape) and answers `{"input_tokens": N}`
//! with a local estimate — about four bytes of text per token over the
//! instructions, messages, tool results and tool definitions. Nothing is
//! forwarded, no session is opened, no point is emitted.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::api::messages::{Messages, MessagesRequest};
use crate::api::{ApiRequest, Entry};
use crate::core::{self, Inner};
use crate::error::Error;

/// The route.
pub(crate) const ROUTE: &str = "/v1/messages/count_tokens";

/// About how many bytes of text make one token.
const BYTES_PER_TOKEN: usize = 4;

/// The route handler: the estimate, or the Messages error.
pub(crate) async fn serve(State(inner): State<Arc<Inner>>, body: Body) -> Response {
    match count(&inner, body).await {
        Ok(n) => axum::Json(json!({"input_tokens": n})).into_response(),
        Err(e) => core::error_response::<Messages>(&e),
    }
}

async fn count(inner: &Inner, body: Body) -> Result<usize, Error> {
    let bytes = core::read_body(body, inner.config.max_body_bytes).await?;
    let body: Map<String, Value> = serde_json::from_slice(&bytes)
        .map_err(|_| Error::BadRequest("the body is not a JSON object".into()))?;
    let tools = body.get("tools").map_or(0, |t| t.to_string().len());
    let request = MessagesRequest::decode_object(body)?;
    Ok(estimate(&request.view().entries, tools))
}

/// The estimate over the entries' text and `tools_bytes` of tool
/// definitions: at least one token.
fn estimate(entries: &[Entry], tools_bytes: usize) -> usize {
    let text: usize = entries
        .iter()
        .map(|e| match e {
            Entry::Instructions(t) | Entry::User(t) => t.text.len(),
            Entry::Assistant { text, tool_calls } => {
                text.text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.args.to_string().len())
                        .sum::<usize>()
            }
            Entry::ToolResult { result, .. } => match result {
                Value::String(s) => s.len(),
                other => other.to_string().len(),
            },
            Entry::Other(kind) => kind.len(),
        })
        .sum();
    (text + tools_bytes).div_ceil(BYTES_PER_TOKEN).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Text;

    #[test]
    fn the_estimate_counts_every_entry_and_the_tools() {
        let user = Entry::User(Text {
            text: "x".repeat(40),
            other_parts: Vec::new(),
        });
        assert_eq!(estimate(std::slice::from_ref(&user), 0), 10);
        assert_eq!(estimate(&[user], 8), 12);
        assert_eq!(estimate(&[], 0), 1);
    }
}
