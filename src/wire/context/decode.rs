//! A request message → the validated [`AgentContext`] it carries.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::members::*;
use super::request::PointRequest;
use crate::context::{AgentContext, InvalidContext};
use crate::json;
use crate::pb;
use crate::point::InterceptionPoint;

/// Decodes a request into a validated context (the §4 envelope check runs).
pub fn context_from_request(req: PointRequest) -> Result<AgentContext, InvalidContext> {
    let point = req.point();
    let mut m = Map::new();
    m.insert("interception_point".to_owned(), Value::from(point.as_str()));
    match req {
        PointRequest::AgentStartup(r) => {
            decode_core(&mut m, r.core)?;
            insert_json(&mut m, "agent_init", r.agent_init)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::Input(r) => {
            decode_core(&mut m, r.core)?;
            insert_json(&mut m, "input", r.input)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::PreModelCall(r) => {
            decode_core(&mut m, r.core)?;
            decode_model(&mut m, r.model)?;
            insert_json(&mut m, "messages", r.messages)?;
            decode_model_call(&mut m, r.model_call)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::PostModelCall(r) => {
            decode_core(&mut m, r.core)?;
            decode_model(&mut m, r.model)?;
            insert_json(&mut m, "response", r.response)?;
            decode_model_call(&mut m, r.model_call)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::PreToolCall(r) => {
            decode_core(&mut m, r.core)?;
            decode_tool_call(&mut m, r.tool_call)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::PostToolCall(r) => {
            decode_core(&mut m, r.core)?;
            decode_tool_call(&mut m, r.tool_call)?;
            decode_tool_result(&mut m, r.tool_result)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::Output(r) => {
            decode_core(&mut m, r.core)?;
            insert_json(&mut m, "output", r.output)?;
            decode_optional(&mut m, point, r.optional)?;
        }
        PointRequest::AgentShutdown(r) => {
            decode_core(&mut m, r.core)?;
            insert_json(&mut m, "summary", r.summary)?;
            decode_optional(&mut m, point, r.optional)?;
        }
    }
    let ctx = AgentContext::from_members_unchecked(point, m);
    ctx.validate()?;
    Ok(ctx)
}

fn decode_json(name: impl FnOnce() -> String, j: &pb::JsonValue) -> Result<Value, InvalidContext> {
    json::decode(&j.json).map_err(|e| InvalidContext::Json {
        member: name(),
        problem: e.to_string(),
    })
}

/// Inserts `key` decoded from `j` when the field is set.
fn insert_json(
    m: &mut Map<String, Value>,
    key: &'static str,
    j: Option<pb::JsonValue>,
) -> Result<(), InvalidContext> {
    if let Some(j) = j {
        let v = decode_json(|| key.to_owned(), &j)?;
        m.insert(key.to_owned(), v);
    }
    Ok(())
}

/// An object holding the entries of an `additional` map, refusing entries
/// that shadow one of the message's typed `fields`.
fn decode_additional(
    parent: &str,
    wire: HashMap<String, pb::JsonValue>,
    fields: &[&str],
) -> Result<Map<String, Value>, InvalidContext> {
    let mut o = Map::new();
    for (k, j) in wire {
        if fields.contains(&k.as_str()) {
            return Err(member(path(parent, &k), "carried in its typed field"));
        }
        let v = decode_json(|| path(parent, &k), &j)?;
        o.insert(k, v);
    }
    Ok(o)
}

fn insert_str(o: &mut Map<String, Value>, key: &str, s: String) {
    o.insert(key.to_owned(), Value::String(s));
}

fn insert_opt_str(o: &mut Map<String, Value>, key: &str, s: Option<String>) {
    if let Some(s) = s {
        insert_str(o, key, s);
    }
}

fn decode_core(
    m: &mut Map<String, Value>,
    core: Option<pb::ContextCore>,
) -> Result<(), InvalidContext> {
    let core = core.ok_or_else(|| member("core", PRESENT))?;
    insert_str(m, "spec", core.spec);
    insert_str(m, "timestamp", core.timestamp);
    m.insert("sequence".to_owned(), Value::from(core.sequence));

    let agent = core.agent.ok_or_else(|| member("agent", PRESENT))?;
    let mut a = decode_additional("agent", agent.additional, AGENT_FIELDS)?;
    insert_str(&mut a, "id", agent.id);
    insert_str(&mut a, "framework", agent.framework);
    insert_opt_str(&mut a, "name", agent.name);
    insert_opt_str(&mut a, "version", agent.version);
    m.insert("agent".to_owned(), Value::Object(a));

    let session = core.session.ok_or_else(|| member("session", PRESENT))?;
    let mut s = decode_additional("session", session.additional, SESSION_FIELDS)?;
    insert_str(&mut s, "id", session.id);
    insert_opt_str(&mut s, "started_at", session.started_at);
    if let Some(turn) = session.turn {
        s.insert("turn".to_owned(), Value::from(turn));
    }
    m.insert("session".to_owned(), Value::Object(s));
    Ok(())
}

fn decode_model(
    m: &mut Map<String, Value>,
    model: Option<pb::Model>,
) -> Result<(), InvalidContext> {
    let model = model.ok_or_else(|| member("model", PRESENT))?;
    let mut o = decode_additional("model", model.additional, MODEL_FIELDS)?;
    insert_str(&mut o, "id", model.id);
    insert_opt_str(&mut o, "vendor", model.vendor);
    insert_json(&mut o, "params", model.params).map_err(|e| prefixed("model", e))?;
    m.insert("model".to_owned(), Value::Object(o));
    Ok(())
}

fn decode_model_call(
    m: &mut Map<String, Value>,
    mc: Option<pb::ModelCallOptional>,
) -> Result<(), InvalidContext> {
    if let Some(mc) = mc {
        insert_opt_str(m, "request_id", mc.request_id);
        insert_json(m, "tools", mc.tools)?;
        insert_json(m, "usage", mc.usage)?;
    }
    Ok(())
}

fn decode_tool_call(
    m: &mut Map<String, Value>,
    call: Option<pb::ToolCall>,
) -> Result<(), InvalidContext> {
    let call = call.ok_or_else(|| member("tool_call", PRESENT))?;
    let mut o = Map::new();
    insert_str(&mut o, "id", call.id);
    insert_str(&mut o, "name", call.name);
    insert_json(&mut o, "args", call.args).map_err(|e| prefixed("tool_call", e))?;
    insert_opt_str(&mut o, "content_hash", call.content_hash);
    m.insert("tool_call".to_owned(), Value::Object(o));
    Ok(())
}

fn decode_tool_result(
    m: &mut Map<String, Value>,
    result: Option<pb::ToolResult>,
) -> Result<(), InvalidContext> {
    let result = result.ok_or_else(|| member("tool_result", PRESENT))?;
    let mut o = decode_additional("tool_result", result.additional, TOOL_RESULT_FIELDS)?;
    insert_json(&mut o, "value", result.value).map_err(|e| prefixed("tool_result", e))?;
    o.insert("is_error".to_owned(), Value::Bool(result.is_error));
    insert_json(&mut o, "duration_ms", result.duration_ms)
        .map_err(|e| prefixed("tool_result", e))?;
    m.insert("tool_result".to_owned(), Value::Object(o));
    Ok(())
}

/// Prefixes the member path of a JSON error raised inside `parent`.
fn prefixed(parent: &str, e: InvalidContext) -> InvalidContext {
    match e {
        InvalidContext::Json { member, problem } => InvalidContext::Json {
            member: format!("{parent}.{member}"),
            problem,
        },
        other => other,
    }
}

fn decode_optional(
    m: &mut Map<String, Value>,
    point: InterceptionPoint,
    optional: Option<pb::ContextOptional>,
) -> Result<(), InvalidContext> {
    let Some(o) = optional else {
        return Ok(());
    };
    if let Some(messages) = o.messages {
        if point == InterceptionPoint::PreModelCall {
            return Err(member(
                "messages",
                "carried in PreModelCallRequest.messages at pre_model_call",
            ));
        }
        insert_json(m, "messages", Some(messages))?;
    }
    if let Some(t) = o.trace {
        let mut obj = decode_additional("trace", t.additional, TRACE_FIELDS)?;
        insert_opt_str(&mut obj, "trace_id", t.trace_id);
        insert_opt_str(&mut obj, "span_id", t.span_id);
        m.insert("trace".to_owned(), Value::Object(obj));
    }
    if let Some(t) = o.tenant {
        let mut obj = decode_additional("tenant", t.additional, TENANT_FIELDS)?;
        insert_opt_str(&mut obj, "id", t.id);
        insert_opt_str(&mut obj, "name", t.name);
        m.insert("tenant".to_owned(), Value::Object(obj));
    }
    if let Some(a) = o.actor {
        let mut obj = decode_additional("actor", a.additional, ACTOR_FIELDS)?;
        insert_opt_str(&mut obj, "id", a.id);
        insert_opt_str(&mut obj, "kind", a.kind);
        m.insert("actor".to_owned(), Value::Object(obj));
    }
    insert_json(m, "budgets", o.budgets)?;
    if !o.extensions.is_empty() {
        let ext = decode_additional("extensions", o.extensions, &[])?;
        m.insert("extensions".to_owned(), Value::Object(ext));
    }
    for (k, j) in o.additional {
        let empty_extensions = k == "extensions" && !m.contains_key("extensions");
        if is_typed_member(point, &k) && !empty_extensions {
            return Err(member(path("", &k), "carried in its typed field"));
        }
        let v = decode_json(|| path("", &k), &j)?;
        if empty_extensions && v.as_object().is_none_or(|e| !e.is_empty()) {
            return Err(member(
                "extensions",
                "carried in ContextOptional.extensions (only an empty object travels in additional)",
            ));
        }
        m.insert(k, v);
    }
    Ok(())
}
