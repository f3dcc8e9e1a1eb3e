//! What the demo's mock model answers once the tools have answered: one
//! sentence per tool call, read from the conversation it is given (a call
//! the chain blocked is said to be blocked, with the reason the model was
//! told), so the final answer tells what happened under whatever chain or
//! declaration governs the run — never a canned story.

use std::collections::HashMap;

use serde_json::Value;

/// One sentence per tool result in `messages`, in order.
pub(crate) fn tool_report(messages: &[Value]) -> Vec<String> {
    let commands: HashMap<&str, String> = messages
        .iter()
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .filter_map(|c| Some((c.get("id")?.as_str()?, command_of(c))))
        .collect();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let cmd = m["tool_call_id"]
                .as_str()
                .and_then(|id| commands.get(id))
                .map_or("a command", String::as_str);
            sentence(cmd, &content_of(&m["content"]))
        })
        .collect()
}

/// The shell command a tool call asked for.
fn command_of(call: &Value) -> String {
    let args = match call.get("args") {
        Some(a) => a.clone(),
        None => call["function"]["arguments"]
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default(),
    };
    args["cmd"].as_str().unwrap_or("?").to_owned()
}

/// A tool message's content as JSON (a string holding JSON is read).
fn content_of(content: &Value) -> Value {
    match content {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| content.clone()),
        other => other.clone(),
    }
}

fn sentence(cmd: &str, content: &Value) -> String {
    if let Some(error) = content.get("error").and_then(Value::as_str) {
        let why = content
            .get("reason")
            .and_then(Value::as_str)
            .or_else(|| error.strip_prefix("blocked: "))
            .unwrap_or(error);
        return format!("I was not allowed to run `{cmd}` ({why}). ");
    }
    match content.get("stdout").and_then(Value::as_str) {
        Some(out) => format!("`{cmd}` printed {}. ", out.replace('\t', " ").trim()),
        None => format!("`{cmd}` returned {content}. "),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::tool_report;

    #[test]
    fn each_result_is_told_as_it_happened() {
        let messages = [
            json!({"role": "user", "content": "clean up"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "name": "bash", "args": {"cmd": "rm -rf /tmp/build"}},
                {"id": "c2", "name": "bash", "args": {"cmd": "du -sh /tmp/build"}},
                {"id": "c3", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "c1",
                   "content": {"error": "blocked", "reason": "policy:destructive_command"}}),
            json!({"role": "tool", "tool_call_id": "c2",
                   "content": {"stdout": "1.2G\t/tmp/build", "exit_code": 0}}),
            json!({"role": "tool", "tool_call_id": "c3",
                   "content": "{\"error\": \"blocked: policy:no_ls\"}"}),
        ];
        assert_eq!(
            tool_report(&messages),
            [
                "I was not allowed to run `rm -rf /tmp/build` (policy:destructive_command). ",
                "`du -sh /tmp/build` printed 1.2G /tmp/build. ",
                "I was not allowed to run `ls` (policy:no_ls). ",
            ]
        );
    }

    #[test]
    fn a_run_the_chain_allowed_says_so() {
        let messages = [
            json!({"role": "assistant", "tool_calls": [
                {"id": "c1", "name": "bash", "args": {"cmd": "rm -rf /tmp/build"}}]}),
            json!({"role": "tool", "tool_call_id": "c1",
                   "content": {"stdout": "1.2G\t/tmp/build", "exit_code": 0}}),
        ];
        let said = tool_report(&messages).concat();
        assert!(!said.contains("not allowed"), "{said}");
        assert!(said.contains("`rm -rf /tmp/build` printed"), "{said}");
    }
}
