//! The conversation the Responses mock holds with the real Codex CLI
//! (`tests/agents/`, pinned, installed by `scripts/setup.sh`), for the
//! tests that run it through the gateway: the CLI's main request (it
//! offers `exec_command`) gets one `exec_command` call, the turn carrying
//! its output a closing text, any side request a short text.

use serde_json::{Value, json};

use super::responses;
use super::serve::Reply;

/// The script answering Codex with the `exec_command` call `call_id` of
/// `command`, then `closing` once its output comes back (see the module's
/// docs).
pub fn script(
    call_id: &'static str,
    command: String,
    closing: &'static str,
) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body: &Value| {
        let items = responses::items(body);
        if items.iter().any(|i| i["type"] == "function_call_output") {
            return Reply::Answer(closing.into());
        }
        let offers_exec = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "exec_command"));
        if offers_exec {
            return Reply::Calls(vec![(
                call_id,
                "exec_command",
                json!({"cmd": command.clone()}),
            )]);
        }
        Reply::Answer("ok".into())
    }
}
