//! A whole Responses answer: its `output` items read as the neutral
//! answer (the text of its `message` items, its `function_call` items),
//! and rebuilt from what the chain released. The rebuild is one function
//! of the items and the [`Settled`] answer, shared with the stream writer
//! so that a streamed answer ends in exactly the response a whole one is.

use std::collections::HashSet;

use hookwire_client::{ModelResponse, ToolCall};
use serde_json::{Map, Value, json};

use super::items::{CLIENT_RUN_CALLS, check_output, is_call, kind};
use crate::api::model::{ApiResponse, Finish, Settled};
use crate::error::Error;

/// A decoded Responses answer (`object: "response"`), kept whole.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResponsesResponse {
    pub(super) body: Map<String, Value>,
}

impl ResponsesResponse {
    /// Checks and keeps an answer.
    pub(crate) fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(body) = value else {
            return Err("the response is not a JSON object".into());
        };
        match body.get("output") {
            Some(Value::Array(output)) => check_output(output)?,
            _ => return Err("the response has no output array".into()),
        }
        Ok(Self { body })
    }

    /// The answer as it is.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn to_value(&self) -> Value {
        Value::Object(self.body.clone())
    }

    /// The `output` items (checked when the answer was decoded).
    pub(super) fn output(&self) -> &[Value] {
        self.body
            .get("output")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn status(&self) -> &str {
        self.body
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed")
    }
}

/// A call item as hookwire's [`ToolCall`]: a `function_call`'s arguments
/// decoded (text that is not JSON stays a string), a `custom_tool_call`'s
/// text input as `{"input": TEXT}`.
fn call_of(item: &Value) -> Result<ToolCall, Error> {
    let field = |name: &str| {
        item.get(name).and_then(Value::as_str).ok_or_else(|| {
            Error::UpstreamResponse(format!("a {} item has no {name} string", kind(item)))
        })
    };
    let args = if kind(item) == "custom_tool_call" {
        json!({"input": field("input")?})
    } else {
        let args = field("arguments")?;
        serde_json::from_str(args).unwrap_or_else(|_| Value::from(args))
    };
    Ok(ToolCall::new(field("call_id")?, field("name")?, args))
}

impl ApiResponse for ResponsesResponse {
    /// The text is every `output_text` (and `refusal`) part of the message
    /// items, joined; the finish is `tool_calls` when there are function
    /// calls, `length` for `incomplete` at `max_output_tokens`, the reason
    /// or status word for another unfinished answer, `stop` otherwise.
    fn answer(&self) -> Result<ModelResponse, Error> {
        let mut text: Option<String> = None;
        let mut tool_calls = Vec::new();
        for item in self.output() {
            match kind(item) {
                "message" => {
                    for part in item
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let t = match kind(part) {
                            "output_text" => part.get("text"),
                            "refusal" => part.get("refusal"),
                            _ => None,
                        };
                        if let Some(t) = t.and_then(Value::as_str) {
                            text.get_or_insert_default().push_str(t);
                        }
                    }
                }
                k if is_call(k) => tool_calls.push(call_of(item)?),
                k if CLIENT_RUN_CALLS.contains(&k) => {
                    return Err(Error::UpstreamResponse(format!(
                        "the answer carries a {k} item, a tool the gateway does not govern"
                    )));
                }
                _ => {}
            }
        }
        let reason = self
            .body
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str);
        let finish_reason = match (self.status(), reason) {
            _ if !tool_calls.is_empty() => "tool_calls".to_owned(),
            ("incomplete", Some("max_output_tokens")) => "length".to_owned(),
            ("incomplete", Some(r)) => r.to_owned(),
            ("completed", _) => "stop".to_owned(),
            (other, _) => other.to_owned(),
        };
        Ok(ModelResponse {
            content: text.map_or(Value::Null, Value::String),
            tool_calls,
            finish_reason,
        })
    }

    fn other_outputs(&self) -> Vec<String> {
        self.output()
            .iter()
            .map(kind)
            .filter(|k| *k != "message" && !is_call(k))
            .map(str::to_owned)
            .collect()
    }

    fn id(&self) -> Option<String> {
        self.body
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
    }

    fn removed(&self, settled: &Settled) -> Vec<String> {
        if !settled.drops_copies() {
            return Vec::new();
        }
        self.output()
            .iter()
            .enumerate()
            .filter(|(_, i)| is_copy(i))
            .map(|(n, i)| format!("output[{n}]({})", kind(i)))
            .collect()
    }

    fn settle(self, settled: &Settled) -> Value {
        let message_id = message_id(&self.body, self.output());
        let status = message_status(settled_status(&self.body, &settled.finish));
        let output = settled_output(self.output(), settled, &message_id, status);
        Value::Object(settled_body(self.body, output, settled))
    }
}

/// The id of the one message item of a settled answer: the upstream's
/// first message item's, else one derived from the response id.
pub(super) fn message_id(body: &Map<String, Value>, output: &[Value]) -> String {
    if let Some(id) = output
        .iter()
        .filter(|i| kind(i) == "message")
        .find_map(|i| i.get("id").and_then(Value::as_str))
    {
        return id.to_owned();
    }
    let id = body.get("id").and_then(Value::as_str).unwrap_or("hookwire");
    format!("msg_{}", id.strip_prefix("resp_").unwrap_or(id))
}

/// The `status` a settled answer has.
pub(super) fn settled_status<'a>(body: &'a Map<String, Value>, finish: &Finish) -> &'a str {
    match finish {
        Finish::Stop | Finish::ToolCalls => "completed",
        Finish::Length | Finish::Withheld => "incomplete",
        Finish::Upstream(_) => body
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed"),
    }
}

/// The `status` of the settled message item (a message is
/// `in_progress`, `completed` or `incomplete`).
pub(super) fn message_status(response_status: &str) -> &'static str {
    if response_status == "incomplete" {
        "incomplete"
    } else {
        "completed"
    }
}

/// Whether an item is neither a message nor a call: reasoning, a hosted
/// tool's call or result. Such items repeat what the answer says
/// (a reasoning summary, a search query), so a withheld or rewritten
/// answer keeps none of them.
pub(super) fn is_copy(item: &Value) -> bool {
    kind(item) != "message" && !is_call(kind(item))
}

/// The settled `output`: the leading hosted and reasoning items as they
/// were, then one message item with the settled text (none when it is
/// empty), then the remaining items in their order with messages dropped
/// and only the permitted calls (arguments as governed). A withheld or
/// rewritten answer ([`Settled::drops_copies`]) keeps no reasoning or
/// hosted-tool item.
pub(super) fn settled_output(
    output: &[Value],
    settled: &Settled,
    message_id: &str,
    status: &str,
) -> Vec<Value> {
    let filtered: Vec<Value>;
    let output = if settled.drops_copies() {
        filtered = output.iter().filter(|i| !is_copy(i)).cloned().collect();
        filtered.as_slice()
    } else {
        output
    };
    let is_kept = is_copy;
    let lead = output.iter().take_while(|i| is_kept(i)).count();
    let mut out = output[..lead].to_vec();
    if !settled.text.is_empty() {
        out.push(message_item(output, &settled.text, message_id, status));
    }
    let mut placed = HashSet::new();
    for item in &output[lead..] {
        match kind(item) {
            "message" => {}
            k if is_call(k) => {
                let call_id = item.get("call_id").and_then(Value::as_str);
                if let Some(call) = settled
                    .tool_calls
                    .iter()
                    .find(|c| Some(c.id.as_str()) == call_id)
                    && placed.insert(call.id.as_str())
                {
                    out.push(function_call_item(Some(item), call));
                }
            }
            _ => out.push(item.clone()),
        }
    }
    for call in &settled.tool_calls {
        if placed.insert(call.id.as_str()) {
            out.push(function_call_item(None, call));
        }
    }
    out
}

/// The one message item of a settled answer. The annotations of the
/// upstream's one text part are kept when its text is unchanged (they
/// point into it); otherwise there are none.
pub(super) fn message_item(output: &[Value], text: &str, id: &str, status: &str) -> Value {
    let parts: Vec<&Value> = output
        .iter()
        .filter(|i| kind(i) == "message")
        .flat_map(|i| {
            i.get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter(|p| kind(p) == "output_text")
        .collect();
    let annotations = match parts.as_slice() {
        [only] if only.get("text").and_then(Value::as_str) == Some(text) => only
            .get("annotations")
            .filter(|a| a.is_array())
            .cloned()
            .unwrap_or_else(|| json!([])),
        _ => json!([]),
    };
    json!({
        "id": id, "type": "message", "status": status, "role": "assistant",
        "content": [{"type": "output_text", "annotations": annotations, "text": text}],
    })
}

/// The JSON text of governed arguments.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A permitted call's item: the upstream's item with the governed name and
/// arguments (a custom tool call's `input` from `{"input": TEXT}`, or the
/// arguments' JSON text when a transform left another shape), or a new
/// `function_call` item.
fn function_call_item(original: Option<&Value>, call: &ToolCall) -> Value {
    let mut item = original
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(|| {
            let mut m = Map::new();
            m.insert("type".into(), "function_call".into());
            m.insert("id".into(), format!("fc_{}", call.id).into());
            m.insert("status".into(), "completed".into());
            m
        });
    item.insert("call_id".into(), call.id.clone().into());
    item.insert("name".into(), call.name.clone().into());
    if item.get("type").and_then(Value::as_str) == Some("custom_tool_call") {
        let input = match call.args.get("input") {
            Some(Value::String(s)) => s.clone(),
            _ => arguments_text(&call.args),
        };
        item.insert("input".into(), input.into());
    } else {
        item.insert("arguments".into(), arguments_text(&call.args).into());
    }
    Value::Object(item)
}

/// The settled answer's body: `output`, `status` and
/// `incomplete_details` as settled, `output_text` (where the upstream
/// gave that convenience) the settled text; everything else kept.
pub(super) fn settled_body(
    mut body: Map<String, Value>,
    output: Vec<Value>,
    settled: &Settled,
) -> Map<String, Value> {
    let status = settled_status(&body, &settled.finish).to_owned();
    let details = match &settled.finish {
        Finish::Stop | Finish::ToolCalls => Some(Value::Null),
        Finish::Length => Some(json!({"reason": "max_output_tokens"})),
        Finish::Withheld => Some(json!({"reason": "content_filter"})),
        Finish::Upstream(_) => None,
    };
    body.insert("output".into(), Value::Array(output));
    body.insert("status".into(), status.into());
    if let Some(details) = details {
        body.insert("incomplete_details".into(), details);
    }
    if body.contains_key("output_text") {
        body.insert("output_text".into(), settled.text.clone().into());
    }
    body
}
