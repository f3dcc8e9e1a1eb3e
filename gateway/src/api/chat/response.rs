//! A whole Chat Completions answer: read into the neutral answer, and
//! rebuilt with what the chain released (the settled text, the permitted
//! tool calls, the finish reason in the API's terms).

use hookwire_client::ModelResponse;
use serde_json::Value;

use super::{chat_tool_call, tool_calls_of};
use crate::api::{ApiResponse, Finish, Settled};
use crate::error::Error;

/// A decoded `chat.completion`, kept whole (ids, usage, logprobs pass
/// through).
#[derive(Debug, Clone)]
pub(crate) struct ChatResponse {
    body: Value,
}

impl ChatResponse {
    /// Reads a whole answer; it must carry `choices[0]`.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let body: Value = serde_json::from_slice(bytes)
            .map_err(|_| Error::UpstreamResponse("the response is not JSON".into()))?;
        Self::from_value(body)
    }

    /// An answer already parsed (or assembled from a stream).
    pub(crate) fn from_value(body: Value) -> Result<Self, Error> {
        if !body
            .get("choices")
            .and_then(|c| c.get(0))
            .is_some_and(Value::is_object)
        {
            return Err(Error::UpstreamResponse("the response has no choice".into()));
        }
        Ok(Self { body })
    }

    /// The answer as it is.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn to_value(&self) -> &Value {
        &self.body
    }

    fn choice(&self) -> &Value {
        &self.body["choices"][0]
    }
}

/// The finish reason a client of Chat Completions reads.
pub(crate) fn finish_reason(finish: &Finish) -> &str {
    match finish {
        Finish::Stop => "stop",
        Finish::ToolCalls => "tool_calls",
        Finish::Length => "length",
        Finish::Withheld => "content_filter",
        Finish::Upstream(other) => other,
    }
}

impl ApiResponse for ChatResponse {
    fn answer(&self) -> Result<ModelResponse, Error> {
        let message = &self.choice()["message"];
        let content = match message.get("content") {
            None | Some(Value::Null) => Value::Null,
            Some(c) => Value::from(
                super::text_of(Some(c))
                    .map_err(|e| Error::UpstreamResponse(format!("the answer's content: {e}")))?
                    .text,
            ),
        };
        Ok(ModelResponse {
            content,
            tool_calls: tool_calls_of(message).map_err(Error::UpstreamResponse)?,
            finish_reason: self
                .choice()
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop")
                .to_owned(),
        })
    }

    fn settle(mut self, settled: &Settled) -> Value {
        let choice = &mut self.body["choices"][0];
        let mut message = choice.get("message").cloned().unwrap_or_default();
        if !message.is_object() {
            message = Value::Object(Default::default());
        }
        message["content"] = if settled.text.is_empty() && !settled.tool_calls.is_empty() {
            Value::Null
        } else {
            Value::from(settled.text.clone())
        };
        if let Some(m) = message.as_object_mut() {
            if settled.tool_calls.is_empty() {
                m.remove("tool_calls");
            } else {
                m.insert(
                    "tool_calls".into(),
                    settled.tool_calls.iter().map(chat_tool_call).collect(),
                );
            }
        }
        choice["message"] = message;
        choice["finish_reason"] = Value::from(finish_reason(&settled.finish));
        self.body
    }
}
