//! Chat Completions' mediation table (see [`crate::api::mediation`]).

use serde_json::Value;

use crate::api::mediation::{ApiTable, Table, Ungoverned, governed, inert, refused};

const TRANSCRIPT: &str = "input, post_tool_call, pre_model_call";
const SHOWN: &str = "input.content, tool_result.value, messages";
const ANSWER: &str = "post_model_call, output";
const TEXT: &str = "response.content, output.content";
const COPY: &str = "post_model_call, output (removed when the answer is withheld or rewritten)";

/// The table.
pub(crate) const TABLE: ApiTable = ApiTable {
    api: "chat_completions",
    request: Table {
        open: &[],
        members: &[
            governed("messages", TRANSCRIPT, SHOWN),
            governed("messages[].content[type=text]", TRANSCRIPT, SHOWN),
            governed(
                "messages[].content[type=image_url]",
                TRANSCRIPT,
                "extensions.hookwire.content_parts (its type)",
            ),
            governed(
                "messages[].content[type=input_audio]",
                TRANSCRIPT,
                "extensions.hookwire.content_parts (its type)",
            ),
            governed(
                "messages[].content[type=file]",
                TRANSCRIPT,
                "extensions.hookwire.content_parts (its type); a file of text is refused",
            ),
            governed(
                "messages[].content[type=refusal]",
                "pre_model_call",
                "messages (the replayed assistant turn the chain released)",
            ),
            governed("model", "pre_model_call", "model.id"),
            governed(
                "tools",
                "agent_startup, pre_model_call",
                "agent_init.tools_registered, tools",
            ),
            refused("functions", "legacy function calling: declare tools"),
            refused("function_call", "legacy function calling: use tool_choice"),
            refused(
                "prediction",
                "predicted output is text the model sees that no point is shown",
            ),
            refused(
                "web_search_options",
                "hosted search configured outside tools is not shown at pre_model_call",
            ),
            inert("audio"),
            inert("frequency_penalty"),
            inert("logit_bias"),
            inert("logprobs"),
            inert("max_completion_tokens"),
            inert("max_tokens"),
            inert("metadata"),
            inert("modalities"),
            inert("moderation"),
            inert("n"),
            inert("parallel_tool_calls"),
            inert("presence_penalty"),
            inert("prompt_cache_key"),
            inert("prompt_cache_options"),
            inert("prompt_cache_retention"),
            inert("reasoning_effort"),
            inert("response_format"),
            inert("safety_identifier"),
            inert("seed"),
            inert("service_tier"),
            inert("stop"),
            inert("store"),
            inert("stream"),
            inert("stream_options"),
            inert("temperature"),
            inert("tool_choice"),
            inert("top_logprobs"),
            inert("top_p"),
            inert("user"),
            inert("verbosity"),
        ],
    },
    text_source_path: "messages[].content[type=file].text",
    text_sources,
    answer: Table {
        open: &["choices[]", "choices[].message"],
        members: &[
            governed("choices", ANSWER, TEXT),
            inert("choices[].index"),
            governed(
                "choices[].finish_reason",
                "post_model_call",
                "response.finish_reason",
            ),
            governed("choices[].logprobs", COPY, TEXT),
            governed("choices[].message", ANSWER, TEXT),
            governed("choices[].message.content", ANSWER, TEXT),
            governed("choices[].message.refusal", ANSWER, TEXT),
            governed("choices[].message.audio", COPY, TEXT),
            governed("choices[].message.annotations", COPY, TEXT),
            governed(
                "choices[].message.tool_calls",
                "post_model_call, pre_tool_call",
                "response.tool_calls, tool_call",
            ),
            inert("choices[].message.role"),
            refused(
                "choices[].message.function_call",
                "legacy function calling is not governed",
            ),
            inert("created"),
            inert("id"),
            inert("metadata"),
            inert("model"),
            inert("moderation"),
            inert("object"),
            inert("service_tier"),
            inert("system_fingerprint"),
            inert("usage"),
        ],
    },
};

/// MIME types whose data is text.
fn is_text_mime(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json" | "application/xml" | "application/x-yaml" | "application/yaml"
        )
}

/// File names whose content is text.
fn is_text_name(name: &str) -> bool {
    let ext = name
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    name.contains('.')
        && matches!(
            ext.as_str(),
            "txt" | "md" | "csv" | "json" | "xml" | "yaml" | "yml" | "html" | "htm" | "log" | "tsv"
        )
}

/// A `file` part whose data is text (its data URL's MIME type, else its
/// file name): text the model reads that no point is shown.
fn text_sources(body: &Value) -> Option<Ungoverned> {
    let messages = body.get("messages")?.as_array()?;
    for (i, m) in messages.iter().enumerate() {
        let Some(parts) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (j, part) in parts.iter().enumerate() {
            if part.get("type").and_then(Value::as_str) != Some("file") {
                continue;
            }
            let file = &part["file"];
            let data = file
                .get("file_data")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mime = data
                .strip_prefix("data:")
                .and_then(|d| d.split([';', ',']).next());
            let name = file
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let text = match mime {
                Some(mime) => is_text_mime(mime),
                None => !data.is_empty() && is_text_name(name),
            };
            if text {
                return Some(Ungoverned {
                    at: format!("messages[{i}].content[{j}].file.file_data"),
                    why: "a file of text is text no point is shown: send it as a text part".into(),
                });
            }
        }
    }
    None
}
