//! The `tools` of a Responses request: the names the chain governs, with
//! `namespace` tools opened into the function tools they group, hosted
//! tools passed (they run at the provider), and at most [`MAX_TOOLS`].

use serde_json::Value;

use super::check::{MAX_ID, bad, clip};
use crate::error::Error;

/// How many tools one request may declare.
pub(crate) const MAX_TOOLS: usize = 512;

/// The hosted tool types: they run at the provider, and their items
/// surface at `post_model_call` only (`web_search` also covers its dated
/// and preview variants).
const HOSTED_TOOLS: [&str; 5] = [
    "web_search",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
];

/// Whether a request's tool `type` is one the provider runs.
fn is_hosted_tool(kind: &str) -> bool {
    HOSTED_TOOLS.contains(&kind) || kind.starts_with("web_search")
}

/// The names of the function tools, sorted and deduplicated; hosted tools
/// pass, tools the client runs outside a function call are refused.
///
/// A `namespace` tool (the Codex CLI groups its multi-agent tools in one)
/// groups function and custom tools whose calls come back as ordinary
/// `function_call`/`custom_tool_call` items naming the member (with a
/// `namespace` member the answer keeps): its members are governed as the
/// function tools they are, under their own names. A member whose name is
/// also another tool's is refused — `pre_tool_call` could not tell the two
/// apart — and so is anything but a function or custom tool inside it.
/// Members count toward [`MAX_TOOLS`].
pub(super) fn tool_names(tools: Option<&Value>) -> Result<Vec<String>, Error> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(t)) if t.len() <= MAX_TOOLS => t,
        Some(Value::Array(_)) => {
            return Err(bad(format!(
                "tools: at most {MAX_TOOLS} tools are governed"
            )));
        }
        Some(_) => return Err(bad("tools must be an array")),
    };
    let mut names = Vec::new();
    let mut members = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let kind = tool_kind(tool, &|| format!("tool {i}"))?;
        if kind == "function" || kind == "custom" {
            names.push(tool_name(tool, kind, &|| format!("tool {i}"))?);
        } else if kind == "namespace" {
            namespace_members(i, tool, &mut members)?;
        } else if !is_hosted_tool(kind) {
            return Err(bad(format!(
                "tool {i} of type {:?} is not governed: the gateway governs function and custom \
                 tools (also grouped in a namespace tool) and the hosted tools web_search, \
                 file_search, code_interpreter, image_generation and mcp; declare it as a \
                 function tool",
                clip(kind)
            )));
        }
        if names.len() + members.len() > MAX_TOOLS {
            return Err(bad(format!(
                "tools: at most {MAX_TOOLS} tools are governed"
            )));
        }
    }
    members.sort();
    for pair in members.windows(2) {
        if pair[0] == pair[1] {
            return Err(ambiguous(&pair[0]));
        }
    }
    if let Some(m) = members.iter().find(|m| names.contains(m)) {
        return Err(ambiguous(m));
    }
    names.extend(members);
    names.sort();
    names.dedup();
    Ok(names)
}

/// A tool's `type`.
fn tool_kind<'a>(tool: &'a Value, at: &dyn Fn() -> String) -> Result<&'a str, Error> {
    tool.get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{} has no type", at())))
}

/// A function or custom tool's name.
fn tool_name(tool: &Value, kind: &str, at: &dyn Fn() -> String) -> Result<String, Error> {
    tool.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty() && n.len() <= MAX_ID)
        .map(str::to_owned)
        .ok_or_else(|| {
            bad(format!(
                "{kind} {} has no name (a Responses tool has its name at the top level, not \
                 under \"function\")",
                at()
            ))
        })
}

/// The names of namespace tool `i`'s members, added to `out`.
fn namespace_members(i: usize, tool: &Value, out: &mut Vec<String>) -> Result<(), Error> {
    let Some(Value::Array(members)) = tool.get("tools") else {
        return Err(bad(format!(
            "namespace tool {i} needs a tools array of function or custom tools"
        )));
    };
    for (j, member) in members.iter().enumerate() {
        let at = || format!("tool {i} (a namespace) member {j}");
        match tool_kind(member, &at)? {
            kind @ ("function" | "custom") => out.push(tool_name(member, kind, &at)?),
            other => {
                return Err(bad(format!(
                    "{} of type {:?} is not governed: a namespace is governed as the function \
                     and custom tools it groups",
                    at(),
                    clip(other)
                )));
            }
        }
        if out.len() > MAX_TOOLS {
            return Err(bad(format!(
                "tools: at most {MAX_TOOLS} tools are governed"
            )));
        }
    }
    Ok(())
}

/// The refusal of a tool name two tools share across namespaces.
fn ambiguous(name: &str) -> Error {
    bad(format!(
        "tool {:?} is declared twice (in a namespace and beside it, or in two namespaces): its \
         calls could not be told apart at pre_tool_call; give the tools distinct names",
        clip(name)
    ))
}
