//! Messages' mediation table (see [`crate::api::mediation`]).

use serde_json::Value;

use crate::api::mediation::{ApiTable, Table, Ungoverned, governed, inert, refused};

const TRANSCRIPT: &str = "input, post_tool_call, pre_model_call";
const SHOWN: &str = "input.content, tool_result.value, messages";
const PARTS: &str = "extensions.hookwire.content_parts (its type)";
const REPLAY: &str = "pre_model_call";
const REPLAYED: &str = "messages (the replayed assistant turn the chain released)";
const ANSWER: &str = "post_model_call, output";
const TEXT: &str = "response.content, output.content";
const SERVER: &str = "post_model_call (removed when the answer is withheld or rewritten)";
const SERVER_AS: &str = "extensions.hookwire.hosted_outputs (its type)";

/// The table.
pub(crate) const TABLE: ApiTable = ApiTable {
    api: "messages",
    request: Table {
        open: &[],
        members: &[
            governed("messages", TRANSCRIPT, SHOWN),
            governed("messages[].content[type=text]", TRANSCRIPT, SHOWN),
            governed("messages[].content[type=image]", TRANSCRIPT, PARTS),
            governed(
                "messages[].content[type=document]",
                TRANSCRIPT,
                "extensions.hookwire.content_parts (its type); a document of text is refused",
            ),
            governed("messages[].content[type=tool_use]", REPLAY, REPLAYED),
            governed(
                "messages[].content[type=tool_result]",
                "post_tool_call",
                "tool_result.value",
            ),
            governed("messages[].content[type=thinking]", REPLAY, REPLAYED),
            governed(
                "messages[].content[type=redacted_thinking]",
                REPLAY,
                REPLAYED,
            ),
            governed("messages[].content[type=server_tool_use]", REPLAY, REPLAYED),
            governed(
                "messages[].content[type=web_search_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=web_fetch_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=code_execution_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=bash_code_execution_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=text_editor_code_execution_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=tool_search_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed("messages[].content[type=mcp_tool_use]", REPLAY, REPLAYED),
            governed("messages[].content[type=mcp_tool_result]", REPLAY, REPLAYED),
            governed(
                "messages[].content[type=mcp_tool_listing]",
                REPLAY,
                REPLAYED,
            ),
            governed(
                "messages[].content[type=advisor_tool_result]",
                REPLAY,
                REPLAYED,
            ),
            governed("messages[].content[type=compaction]", REPLAY, REPLAYED),
            governed("messages[].content[type=fallback]", REPLAY, REPLAYED),
            refused(
                "messages[].content[type=search_result]",
                "a search result's text is not shown to any point: send it as a text block",
            ),
            refused(
                "messages[].content[type=container_upload]",
                "an uploaded file's content is not shown to any point",
            ),
            inert("messages[].content[type=tool_addition]"),
            inert("messages[].content[type=tool_removal]"),
            governed("system", "pre_model_call", "messages (role system)"),
            governed("model", "pre_model_call", "model.id"),
            governed(
                "tools",
                "agent_startup, pre_model_call",
                "agent_init.tools_registered, tools",
            ),
            refused(
                "mcp_servers",
                "remote MCP servers' tools run at the provider, declared outside tools",
            ),
            refused("thread", "not described: no point is shown what it carries"),
            inert("betas"),
            inert("billing_policy"),
            inert("cache_control"),
            inert("compaction"),
            inert("container"),
            inert("context_management"),
            inert("diagnostics"),
            inert("fallback_credit_token"),
            inert("fallbacks"),
            inert("inference_geo"),
            inert("max_tokens"),
            inert("metadata"),
            inert("output_config"),
            inert("service_tier"),
            inert("speed"),
            inert("stop_sequences"),
            inert("stream"),
            inert("temperature"),
            inert("thinking"),
            inert("tool_choice"),
            inert("top_k"),
            inert("top_p"),
            inert("user_profile_id"),
            inert("workspace_id"),
        ],
    },
    text_source_path: "messages[].content[type=document].text",
    text_sources,
    answer: Table {
        open: &[],
        members: &[
            governed("content", ANSWER, TEXT),
            governed("content[type=text]", ANSWER, TEXT),
            governed(
                "content[type=tool_use]",
                "post_model_call, pre_tool_call",
                "response.tool_calls, tool_call",
            ),
            governed("content[type=thinking]", SERVER, SERVER_AS),
            governed("content[type=redacted_thinking]", SERVER, SERVER_AS),
            governed("content[type=server_tool_use]", SERVER, SERVER_AS),
            governed("content[type=web_search_tool_result]", SERVER, SERVER_AS),
            governed("content[type=web_fetch_tool_result]", SERVER, SERVER_AS),
            governed(
                "content[type=code_execution_tool_result]",
                SERVER,
                SERVER_AS,
            ),
            governed(
                "content[type=bash_code_execution_tool_result]",
                SERVER,
                SERVER_AS,
            ),
            governed(
                "content[type=text_editor_code_execution_tool_result]",
                SERVER,
                SERVER_AS,
            ),
            governed("content[type=tool_search_tool_result]", SERVER, SERVER_AS),
            governed("content[type=mcp_tool_use]", SERVER, SERVER_AS),
            governed("content[type=mcp_tool_result]", SERVER, SERVER_AS),
            governed("content[type=mcp_tool_listing]", SERVER, SERVER_AS),
            governed("content[type=advisor_tool_result]", SERVER, SERVER_AS),
            governed("content[type=compaction]", SERVER, SERVER_AS),
            governed("content[type=fallback]", SERVER, SERVER_AS),
            governed("content[type=container_upload]", SERVER, SERVER_AS),
            governed("stop_reason", "post_model_call", "response.finish_reason"),
            inert("stop_sequence"),
            inert("stop_details"),
            inert("container"),
            inert("context_management"),
            inert("diagnostics"),
            inert("id"),
            inert("input_transformations"),
            inert("model"),
            inert("role"),
            inert("type"),
            inert("usage"),
        ],
    },
};

/// A `document` block whose source is text (`source.type` `text` or
/// `content`): text the model reads that no point is shown.
fn text_sources(body: &Value) -> Option<Ungoverned> {
    let messages = body.get("messages")?.as_array()?;
    for (i, m) in messages.iter().enumerate() {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (j, block) in blocks.iter().enumerate() {
            let source = block
                .get("source")
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str);
            if block.get("type").and_then(Value::as_str) == Some("document")
                && matches!(source, Some("text" | "content"))
            {
                return Some(Ungoverned {
                    at: format!("messages[{i}].content[{j}].source"),
                    why: "a document of text is text no point is shown: send it as a text block"
                        .into(),
                });
            }
        }
    }
    None
}
