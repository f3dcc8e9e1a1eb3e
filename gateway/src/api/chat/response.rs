//! A whole Chat Completions answer: read into the neutral answer, and
//! rebuilt with what the chain released (the settled text, the permitted
//! tool calls, the finish reason in the API's terms).

use hookwire_client::ModelResponse;
use serde_json::Value;

use super::calls::{chat_tool_call, tool_calls_of};
use super::content::text_of;
use crate::api::model::{ApiResponse, Finish, Settled};
use crate::error::Error;

/// A decoded `chat.completion`, kept whole (ids, usage pass through;
/// logprobs, a refusal, an audio answer and annotations pass through
/// while the answer's text is released as the upstream wrote it).
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

/// The members of a Chat message that repeat its text elsewhere: governed
/// with it (a refusal or an audio answer's transcript is the text when
/// there is no content), and removed when the chain withheld or rewrote
/// the answer. `logprobs` is the choice's own.
const COPIES: [&str; 3] = ["refusal", "audio", "annotations"];

/// The copies that can say something else than the content beside it,
/// with where their text is: the chain governs the content, so a refusal
/// or an audio transcript beside it that is not the same text is text no
/// interceptor saw, and is removed (an upstream does not send them; one
/// that does is not relayed what it added).
const BESIDE_CONTENT: [(&str, &[&str]); 2] = [("refusal", &[]), ("audio", &["transcript"])];

/// Whether a member holds something (not absent, null or empty).
fn present(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

impl ChatResponse {
    /// The text the chain governs: the content, else the refusal, else
    /// the audio answer's transcript (`None` when there is none of them).
    fn governed_text(&self) -> Result<Option<String>, Error> {
        let message = &self.choice()["message"];
        if present(message.get("content")) {
            let text = text_of(message.get("content"))
                .map_err(|e| Error::UpstreamResponse(format!("the answer's content: {e}")))?;
            return Ok(Some(text.text));
        }
        for path in [&["refusal"][..], &["audio", "transcript"][..]] {
            let mut v = message;
            for p in path {
                v = &v[*p];
            }
            if let Some(t) = v.as_str().filter(|t| !t.is_empty()) {
                return Ok(Some(t.to_owned()));
            }
        }
        Ok(match message.get("content") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        })
    }
}

impl ChatResponse {
    /// The members beside the content whose text is not the content's
    /// (see [`BESIDE_CONTENT`]); none when there is no content.
    fn unlike_content(&self) -> Vec<&'static str> {
        let message = &self.choice()["message"];
        if !present(message.get("content")) {
            return Vec::new();
        }
        let content = self.governed_text().ok().flatten().unwrap_or_default();
        BESIDE_CONTENT
            .iter()
            .filter(|(member, path)| {
                let mut v = &message[*member];
                if !present(Some(v)) {
                    return false;
                }
                for p in *path {
                    v = &v[*p];
                }
                v.as_str() != Some(content.as_str())
            })
            .map(|(member, _)| *member)
            .collect()
    }
}

impl ApiResponse for ChatResponse {
    fn answer(&self) -> Result<ModelResponse, Error> {
        let message = &self.choice()["message"];
        Ok(ModelResponse {
            content: self.governed_text()?.map_or(Value::Null, Value::from),
            tool_calls: tool_calls_of(message).map_err(Error::UpstreamResponse)?,
            finish_reason: self
                .choice()
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop")
                .to_owned(),
        })
    }

    fn removed(&self, settled: &Settled) -> Vec<String> {
        let mut out = Vec::new();
        let choices = self.body["choices"].as_array().map_or(0, Vec::len);
        for i in 1..choices {
            out.push(format!("choices[{i}]"));
        }
        let message = &self.choice()["message"];
        if present(message.get("function_call")) {
            out.push("choices[0].message.function_call".into());
        }
        if settled.drops_copies() {
            if present(self.choice().get("logprobs")) {
                out.push("choices[0].logprobs".into());
            }
            for m in COPIES {
                if present(message.get(m)) {
                    out.push(format!("choices[0].message.{m}"));
                }
            }
        } else {
            for m in self.unlike_content() {
                out.push(format!("choices[0].message.{m}"));
            }
        }
        out
    }

    fn settle(mut self, settled: &Settled) -> Value {
        if let Some(choices) = self.body["choices"].as_array_mut() {
            // One choice is governed (`n` is 1); no other leaves.
            choices.truncate(1);
        }
        let copies = settled.drops_copies();
        let unlike = self.unlike_content();
        let upstream = self.governed_text().ok().flatten().unwrap_or_default();
        let choice = &mut self.body["choices"][0];
        let mut message = choice.get("message").cloned().unwrap_or_default();
        if !message.is_object() {
            message = Value::Object(Default::default());
        }
        let kept_as_sent = !copies && !present(message.get("content")) && settled.text == upstream;
        if !kept_as_sent {
            // Unchanged text stays where the upstream put it (a refusal,
            // an audio transcript); anything else is the settled text.
            message["content"] = if settled.text.is_empty() && !settled.tool_calls.is_empty() {
                Value::Null
            } else {
                Value::from(settled.text.clone())
            };
        }
        if let Some(m) = message.as_object_mut() {
            // Legacy function calls are refused in the request; one the
            // upstream sends anyway is no governed call.
            m.remove("function_call");
            if copies {
                for member in COPIES {
                    m.remove(member);
                }
            } else {
                for member in &unlike {
                    m.remove(*member);
                }
            }
            if settled.tool_calls.is_empty() {
                m.remove("tool_calls");
            } else {
                m.insert(
                    "tool_calls".into(),
                    settled.tool_calls.iter().map(chat_tool_call).collect(),
                );
            }
        }
        if copies && let Some(c) = choice.as_object_mut() {
            c.remove("logprobs");
        }
        choice["message"] = message;
        choice["finish_reason"] = Value::from(finish_reason(&settled.finish));
        self.body
    }
}
