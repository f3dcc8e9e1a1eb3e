//! The items of a Responses answer (and the parts of an input item):
//! an item's kind, whether it is a call the chain governs, the calls of
//! tools the client would run ungoverned, and the bounds every `output`
//! array and its parts are held to, whole or streamed.

use serde_json::Value;

use crate::bounds::MAX_TOOL_CALLS;

/// How many content parts one input item (or one tool output) may carry.
pub(crate) const MAX_PARTS: usize = 1024;
/// How many output items one answer may carry.
pub(crate) const MAX_OUTPUT_ITEMS: usize = 1024;

/// The output item types of tools the client runs itself outside a
/// function call: an answer carrying one is refused (their tools are
/// refused in the request, so only a misbehaving upstream sends them).
pub(super) const CLIENT_RUN_CALLS: [&str; 4] = [
    "computer_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
];

/// Whether an output item is a call the chain governs: a function call,
/// or a custom (freeform) tool call, whose text `input` the chain sees as
/// the arguments `{"input": TEXT}`.
pub(super) fn is_call(kind: &str) -> bool {
    matches!(kind, "function_call" | "custom_tool_call")
}

/// An item's `type` (empty when it has none).
pub(super) fn kind(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// Checks an `output` array: bounded, every item an object with a type.
pub(super) fn check_output(output: &[Value]) -> Result<(), String> {
    if output.len() > MAX_OUTPUT_ITEMS {
        return Err(format!("more than {MAX_OUTPUT_ITEMS} output items"));
    }
    if output.iter().any(|i| !i.is_object() || kind(i).is_empty()) {
        return Err("an output item is not an object with a type".into());
    }
    let calls = output.iter().filter(|i| is_call(kind(i))).count();
    if calls > MAX_TOOL_CALLS {
        return Err(format!("more than {MAX_TOOL_CALLS} function calls"));
    }
    Ok(())
}
