//! The pure mapping core, without I/O: what an MCP message becomes at a
//! point, and what a combined verdict becomes in MCP. The session module
//! drives it; everything here is tested over every case in `tests`.
//!
//! The shapes the proxy governs are checked against the official SDK's
//! model types (`rmcp::model::{CallToolRequestParams, CallToolResult,
//! ListToolsResult}`): a `tools/call` whose parameters, or an upstream
//! result that, does not deserialize as one is refused. What is relayed
//! and rewritten is the message's own JSON, so that members the SDK does
//! not model (a newer revision's, a server's own `_meta`) pass unchanged.

use std::collections::BTreeSet;

use rmcp::model::{CallToolRequestParams, CallToolResult, ListToolsResult};
use serde_json::{Map, Value, json};

use crate::mediation::{self, Class, Direction, HANDSHAKE_VERSIONS, Kind, Mediation};

mod names;
pub mod stateless;

pub use names::bounded_name;

/// The most `tools/list` pages read from the upstream at startup.
pub const MAX_TOOL_PAGES: usize = 64;
/// The most tools read from the upstream at startup.
pub const MAX_TOOLS: usize = 10_000;

/// A `tools/call` request's parameters, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CallParams {
    /// `params.name`.
    pub name: String,
    /// `params.arguments` (`{}` when absent): the `pre_tool_call` target.
    pub arguments: Value,
    /// `params._meta.progressToken`, when the client asked for progress.
    pub progress_token: Option<Value>,
}

/// Reads a `tools/call`'s parameters; `Err` names what is wrong.
pub fn call_params(params: &Value) -> Result<CallParams, String> {
    let typed: CallToolRequestParams = serde_json::from_value(params.clone())
        .map_err(|e| format!("tools/call parameters are not CallToolRequestParams: {e}"))?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => return Err("tools/call `arguments` is not an object".into()),
    };
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned();
    Ok(CallParams {
        name: typed.name.into_owned(),
        arguments,
        progress_token,
    })
}

/// The parameters sent upstream: the client's members the mediation
/// table relays (`name`, `_meta`), with the governed arguments. A member
/// it refuses (`task`: the call runs as a plain one) or does not list
/// stays behind: only what `pre_tool_call` saw, or what is inert, reaches
/// the server.
pub fn forwarded_call(params: &Value, arguments: &Value) -> Value {
    let relayed = relayed_members(Kind::Request, "tools/call", "params");
    let mut p: Map<String, Value> = params
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| relayed.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    p.insert("arguments".into(), arguments.clone());
    stateless::forwarded_meta(Value::Object(p))
}

/// The members of a client request's `part` the table does not refuse.
fn relayed_members(kind: Kind, method: &str, part: &str) -> Vec<&'static str> {
    mediation::members(Direction::ToServer, kind, method, part)
        .into_iter()
        .filter(|m| {
            let member = format!("{part}.{m}");
            mediation::row(Direction::ToServer, kind, method, &member)
                .is_some_and(|r| r.class.name() != "refused")
        })
        .collect()
}

/// An upstream `tools/call` result, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The whole result as the upstream sent it.
    pub raw: Value,
    /// Its `content`: the `post_tool_call` target.
    pub content: Value,
    /// Its `isError`.
    pub is_error: bool,
    /// Its `structuredContent`, when present.
    pub structured: Option<Value>,
}

/// Reads an upstream `tools/call` result; `Err` names what is wrong.
pub fn call_result(result: &Value) -> Result<CallResult, String> {
    let typed: CallToolResult = serde_json::from_value(result.clone())
        .map_err(|e| format!("the upstream's tools/call result is not a CallToolResult: {e}"))?;
    // Only the members the table classifies reach the client: a member
    // it does not list (a later revision's) could carry what no point saw.
    let known = relayed_members(Kind::Request, "tools/call", "result");
    let raw: Map<String, Value> = result
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| known.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(CallResult {
        raw: Value::Object(raw),
        content: result.get("content").cloned().unwrap_or(json!([])),
        is_error: typed.is_error.unwrap_or(false),
        structured: result.get("structuredContent").cloned(),
    })
}

/// The note that leads a rewritten result whose structured copy was
/// withheld.
pub const STRUCTURED_WITHHELD: &str = "hookwire: this result was rewritten at post_tool_call; its structuredContent, which the rewrite cannot reach, is withheld";

/// The result the client receives when the post verdict permitted with
/// `content` (the target as governed): the upstream's result, its
/// `content` replaced when rewritten. A rewritten result that carried
/// `structuredContent` cannot keep it (it would still hold what was
/// rewritten) nor drop it from a success (a client checking the tool's
/// `outputSchema` refuses a success without it): it becomes an error
/// result, which the schema does not bind, led by a note saying why.
pub fn released_result(result: &CallResult, content: &Value) -> Value {
    if *content == result.content {
        return result.raw.clone();
    }
    let mut r = result.raw.as_object().cloned().unwrap_or_default();
    if r.remove("structuredContent").is_some() {
        let mut blocks = vec![json!({"type": "text", "text": STRUCTURED_WITHHELD})];
        blocks.extend(content.as_array().cloned().unwrap_or_default());
        r.insert("content".into(), Value::Array(blocks));
        r.insert("isError".into(), Value::Bool(true));
    } else {
        r.insert("content".into(), content.clone());
    }
    Value::Object(r)
}

/// A tool result with `isError: true` carrying `text`: how a deny or a
/// failure reaches the model.
pub fn error_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// The text of a deny at `point`: the combined verdict's reason code and,
/// when it has one, its message (bounded by every edge's rule,
/// `hookwire::notice_message`, so that a
/// policy's explanation reaches the model, which can then correct its
/// call, without an interceptor being able to flood it).
pub fn denied_text(point: &str, v: &Verdicted) -> String {
    let reason = v.reason.as_deref().unwrap_or("no reason given");
    let head = if v.liftable {
        format!("hookwire: denied at {point} pending approval: {reason}")
    } else {
        format!("hookwire: denied at {point}: {reason}")
    };
    match hookwire::notice_message(v.message.as_deref()) {
        Some(m) => format!("{head} ({m})"),
        None => head,
    }
}

/// The text of a hidden tool called anyway.
pub fn hidden_text(name: &str) -> String {
    format!("hookwire: denied: tool {name:?} is not available through this proxy")
}

/// What a point's combined verdict amounts to, as the core needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicted {
    /// Whether the action may run.
    pub proceeds: bool,
    /// The target as governed (transforms applied), when it proceeds.
    pub target: Option<Value>,
    /// The combined verdict's reason.
    pub reason: Option<String>,
    /// The combined verdict's message: shown to the client in a deny's
    /// tool error, bounded.
    pub message: Option<String>,
    /// Whether the deny was liftable (an approval was asked for).
    pub liftable: bool,
}

/// What the proxy does after `pre_tool_call`.
#[derive(Debug, Clone, PartialEq)]
pub enum Pre {
    /// Call the upstream with these arguments.
    Call(Value),
    /// Answer the client with this tool result; do not call.
    Answer(Value),
}

/// Settles `pre_tool_call` for a call whose arguments were `original`.
pub fn settle_pre(v: &Verdicted, original: &Value, hidden: Option<&str>) -> Pre {
    if let Some(name) = hidden {
        return Pre::Answer(error_result(&hidden_text(name)));
    }
    if !v.proceeds {
        let text = denied_text("pre_tool_call", v);
        return Pre::Answer(error_result(&text));
    }
    match &v.target {
        Some(args @ Value::Object(_)) => Pre::Call(args.clone()),
        // A permit without a target keeps the arguments.
        None => Pre::Call(original.clone()),
        // A transform that made the arguments something MCP cannot send.
        Some(_) => Pre::Answer(error_result(
            "hookwire: denied: the governed arguments are not a JSON object",
        )),
    }
}

/// Settles `post_tool_call` over the upstream's result: the client's
/// tool result.
pub fn settle_post(v: &Verdicted, result: &CallResult) -> Value {
    if !v.proceeds {
        let text = denied_text("post_tool_call", v);
        return error_result(&text);
    }
    match &v.target {
        Some(content @ Value::Array(_)) => released_result(result, content),
        None => result.raw.clone(),
        Some(_) => {
            error_result("hookwire: denied: the governed tool result is not a content array")
        }
    }
}

/// The lead of a tool error made of an upstream JSON-RPC error that
/// `post_tool_call` rewrote.
pub const ERROR_REWRITTEN: &str = "hookwire: the upstream answered tools/call with a JSON-RPC error, rewritten at post_tool_call:";

/// An upstream JSON-RPC error to `tools/call` as `post_tool_call` sees
/// it: content blocks, as any tool result, so that the rules that read a
/// result read the error too: its `message` as the first text block, its
/// `data` (when present) as the second, JSON-encoded.
pub fn error_content(error: &Value) -> Value {
    let message = match error.get("message") {
        Some(Value::String(m)) => m.clone(),
        Some(other) => hookwire::json::encode(other),
        None => String::new(),
    };
    let mut blocks = vec![json!({"type": "text", "text": message})];
    if let Some(data) = error.get("data") {
        blocks.push(json!({"type": "text", "text": hookwire::json::encode(data)}));
    }
    Value::Array(blocks)
}

/// Settles `post_tool_call` over an upstream JSON-RPC error whose
/// content, as governed, was [`error_content`]: `Err` relays the error as
/// it came (the verdict permitted it unchanged), `Ok` answers with a tool
/// result instead: a deny's notice, or the rewritten content as a tool
/// error, so that nothing the rewrite removed reaches the client.
pub fn settle_post_error(v: &Verdicted, error: &Value) -> Result<Value, Value> {
    if !v.proceeds {
        return Ok(error_result(&denied_text("post_tool_call", v)));
    }
    match &v.target {
        None => Err(error.clone()),
        Some(t) if *t == error_content(error) => Err(error.clone()),
        Some(Value::Array(blocks)) => {
            let mut content = vec![json!({"type": "text", "text": ERROR_REWRITTEN})];
            content.extend(blocks.iter().cloned());
            Ok(json!({"content": content, "isError": true}))
        }
        Some(_) => Ok(error_result(
            "hookwire: denied: the governed tool result is not a content array",
        )),
    }
}

/// One page of an upstream `tools/list`: the tool names, and the cursor
/// of the next page.
pub fn tool_page(result: &Value) -> Result<(Vec<String>, Option<String>), String> {
    let typed: ListToolsResult = serde_json::from_value(result.clone())
        .map_err(|e| format!("the upstream's tools/list result is not a ListToolsResult: {e}"))?;
    let names = typed.tools.iter().map(|t| t.name.to_string()).collect();
    Ok((names, typed.next_cursor.map(|c| c.to_string())))
}

/// A `tools/list` result without the `hidden` tools.
pub fn filtered_tools(result: &Value, hidden: &BTreeSet<String>) -> Value {
    let mut r = result.as_object().cloned().unwrap_or_default();
    if let Some(Value::Array(tools)) = r.get_mut("tools") {
        tools.retain(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_none_or(|n| !hidden.contains(n))
        });
    }
    Value::Object(r)
}

/// The client's `initialize` parameters as sent upstream: without the
/// `sampling`, `elicitation` and `tasks` capabilities, which the proxy
/// refuses.
pub fn forwarded_initialize(params: &Value) -> Value {
    let mut p = params.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(caps)) = p.get_mut("capabilities") {
        caps.remove("sampling");
        caps.remove("elicitation");
        caps.remove("tasks");
    }
    Value::Object(p)
}

/// The upstream's `initialize` result as the client receives it: without
/// the `tasks` capability. A task's result would reach the client through
/// `tasks/result`, outside `post_tool_call`; without the capability a
/// client sends plain calls, and a task-augmented one runs as a plain
/// call (MCP 2025-11-25: a receiver that does not declare tasks processes
/// the request normally, ignoring the task metadata).
pub fn offered_initialize(result: &Value) -> Value {
    let mut r = result.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(caps)) = r.get_mut("capabilities") {
        caps.remove("tasks");
    }
    Value::Object(r)
}

/// What the proxy does with a request from the upstream.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerRequest {
    /// Answer it with this result.
    Answer(Value),
    /// Refuse it with this message (`-32601`).
    Refuse(String),
    /// Relay it to the client.
    Relay,
}

/// Decides a request from the upstream by the mediation table;
/// `can_relay` when the downstream can carry a request to the client.
pub fn server_request(mediation: &Mediation, method: &str, can_relay: bool) -> ServerRequest {
    if method == "ping" {
        return ServerRequest::Answer(json!({}));
    }
    match mediation.method(Direction::ToClient, Kind::Request, method) {
        Class::Inert(_) if can_relay => ServerRequest::Relay,
        Class::Inert(_) | Class::Governed(_) => ServerRequest::Refuse(format!(
            "refused by hookwire mcp: {} cannot reach an HTTP client (no server-to-client stream)",
            bounded_name(method)
        )),
        Class::Refused(why) => ServerRequest::Refuse(format!(
            "refused by hookwire mcp: {}: {why}",
            bounded_name(method)
        )),
    }
}

/// Checks an `initialize`'s `protocolVersion`: `Err` is the error object
/// answering a version the proxy does not mediate (MCP's lifecycle error,
/// `-32602` "Unsupported protocol version", listing the supported ones),
/// so that nothing is forwarded under a revision the table does not cover.
pub fn negotiate(params: &Value) -> Result<&str, Value> {
    let requested = params.get("protocolVersion").unwrap_or(&Value::Null);
    match requested.as_str() {
        Some(v) if HANDSHAKE_VERSIONS.contains(&v) => Ok(v),
        _ => Err(json!({
            "code": crate::jsonrpc::INVALID_PARAMS,
            "message": "Unsupported protocol version",
            "data": stateless::unsupported_data(&HANDSHAKE_VERSIONS, requested),
        })),
    }
}

/// Checks the upstream's answer to `initialize`: `Err` names a version the
/// proxy does not mediate, which ends the session.
pub fn negotiated(result: &Value) -> Result<(), String> {
    match result.get("protocolVersion").and_then(Value::as_str) {
        Some(v) if HANDSHAKE_VERSIONS.contains(&v) => Ok(()),
        Some(v) => Err(format!(
            "the upstream answered initialize with protocol version {:?}, which hookwire mcp does not mediate (it speaks {})",
            bounded_name(v),
            HANDSHAKE_VERSIONS.join(", ")
        )),
        None => Err("the upstream's initialize result names no protocol version".into()),
    }
}

/// The request id a `notifications/cancelled` names.
pub fn cancelled_id(params: &Value) -> Option<crate::jsonrpc::Id> {
    params
        .get("requestId")
        .and_then(crate::jsonrpc::Id::from_value)
}

/// A `notifications/progress` for a call waiting at a point.
pub fn progress(token: &Value, count: u64, point: &str) -> Value {
    crate::jsonrpc::notification(
        "notifications/progress",
        json!({
            "progressToken": token,
            "progress": count,
            "message": format!("hookwire: waiting for the verdict at {point} (an approval, or a slow interceptor)"),
        }),
    )
}

#[cfg(test)]
mod tests;
