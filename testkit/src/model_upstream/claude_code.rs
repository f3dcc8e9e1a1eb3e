//! The conversation the Messages mock holds with the real Claude Code CLI
//! (`tests/agents/`, pinned, installed by `scripts/setup.sh`), for the
//! tests that run it governed by the hooks daemon or through the gateway:
//! the CLI's main request (it offers `Bash`) gets one destructive tool
//! use, the turn carrying its result a closing text, any side request
//! (titles, summaries) a short text.

use serde_json::{Value, json};

use super::messages;
use super::serve::Reply;

/// The tool use the mock proposes.
pub const TOOL_USE_ID: &str = "toolu_01HookwireE2E";

/// The script answering Claude Code with a `Bash` tool use of `command`
/// (see the module's docs).
pub fn script(command: String) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body: &Value| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if !messages::tool_results(&last).is_empty() {
            return Reply::Answer("I left the directory in place.".into());
        }
        let offers_bash = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
        if offers_bash {
            return Reply::Calls(vec![(
                TOOL_USE_ID,
                "Bash",
                json!({"command": command.clone(), "description": "Delete the directory"}),
            )]);
        }
        Reply::Answer("ok".into())
    }
}
