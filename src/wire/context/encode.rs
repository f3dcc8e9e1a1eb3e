//! [`AgentContext`] → the request message of its point.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::members::*;
use super::request::PointRequest;
use crate::context::{AgentContext, InvalidContext};
use crate::json;
use crate::pb;
use crate::point::InterceptionPoint;

/// Encodes a context as its point's request. Fails only when a member has a
/// shape the typed message cannot carry (e.g. `sequence` not an integer).
pub fn context_to_request(ctx: &AgentContext) -> Result<PointRequest, InvalidContext> {
    let point = ctx.point();
    let m = ctx.members();
    if m.contains_key("target") {
        return Err(member(
            "target",
            "absent from the members (rebuilt from the point's target field)",
        ));
    }
    if m.get("interception_point").and_then(Value::as_str) != Some(point.as_str()) {
        return Err(InvalidContext::Point);
    }
    let core = Some(encode_core(m)?);
    let optional = encode_optional(point, m)?;
    Ok(match point {
        InterceptionPoint::AgentStartup => PointRequest::AgentStartup(pb::AgentStartupRequest {
            core,
            agent_init: json_member(m, "agent_init"),
            optional,
        }),
        InterceptionPoint::Input => PointRequest::Input(pb::InputRequest {
            core,
            input: json_member(m, "input"),
            optional,
        }),
        InterceptionPoint::PreModelCall => PointRequest::PreModelCall(pb::PreModelCallRequest {
            core,
            model: m.get("model").map(encode_model).transpose()?,
            messages: json_member(m, "messages"),
            model_call: encode_model_call(m)?,
            optional,
        }),
        InterceptionPoint::PostModelCall => PointRequest::PostModelCall(pb::PostModelCallRequest {
            core,
            model: m.get("model").map(encode_model).transpose()?,
            response: json_member(m, "response"),
            model_call: encode_model_call(m)?,
            optional,
        }),
        InterceptionPoint::PreToolCall => PointRequest::PreToolCall(pb::PreToolCallRequest {
            core,
            tool_call: m.get("tool_call").map(encode_tool_call).transpose()?,
            optional,
        }),
        InterceptionPoint::PostToolCall => PointRequest::PostToolCall(pb::PostToolCallRequest {
            core,
            tool_call: m.get("tool_call").map(encode_tool_call).transpose()?,
            tool_result: m.get("tool_result").map(encode_tool_result).transpose()?,
            optional,
        }),
        InterceptionPoint::Output => PointRequest::Output(pb::OutputRequest {
            core,
            output: json_member(m, "output"),
            optional,
        }),
        InterceptionPoint::AgentShutdown => PointRequest::AgentShutdown(pb::AgentShutdownRequest {
            core,
            summary: json_member(m, "summary"),
            optional,
        }),
    })
}

fn json_value(v: &Value) -> pb::JsonValue {
    pb::JsonValue {
        json: json::encode(v),
    }
}

fn json_member(m: &Map<String, Value>, key: &str) -> Option<pb::JsonValue> {
    m.get(key).map(json_value)
}

fn as_object<'a>(v: &'a Value, name: &str) -> Result<&'a Map<String, Value>, InvalidContext> {
    v.as_object().ok_or_else(|| member(name, AN_OBJECT))
}

fn required_str(m: &Map<String, Value>, parent: &str, key: &str) -> Result<String, InvalidContext> {
    m.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| member(path(parent, key), A_STRING))
}

fn optional_str(
    m: &Map<String, Value>,
    parent: &str,
    key: &str,
) -> Result<Option<String>, InvalidContext> {
    match m.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(member(path(parent, key), "a string when present")),
    }
}

/// The members of `m` not named in `fields`, as JSON text.
fn additional(m: &Map<String, Value>, fields: &[&str]) -> HashMap<String, pb::JsonValue> {
    m.iter()
        .filter(|(k, _)| !fields.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), json_value(v)))
        .collect()
}

fn encode_core(m: &Map<String, Value>) -> Result<pb::ContextCore, InvalidContext> {
    Ok(pb::ContextCore {
        spec: required_str(m, "", "spec")?,
        timestamp: required_str(m, "", "timestamp")?,
        sequence: m
            .get("sequence")
            .and_then(Value::as_u64)
            .ok_or_else(|| member("sequence", "an integer >= 0"))?,
        agent: m.get("agent").map(encode_agent).transpose()?,
        session: m.get("session").map(encode_session).transpose()?,
    })
}

fn encode_agent(v: &Value) -> Result<pb::Agent, InvalidContext> {
    let o = as_object(v, "agent")?;
    Ok(pb::Agent {
        id: required_str(o, "agent", "id")?,
        framework: required_str(o, "agent", "framework")?,
        name: optional_str(o, "agent", "name")?,
        version: optional_str(o, "agent", "version")?,
        additional: additional(o, AGENT_FIELDS),
    })
}

fn encode_session(v: &Value) -> Result<pb::Session, InvalidContext> {
    let o = as_object(v, "session")?;
    let turn = match o.get("turn") {
        None => None,
        Some(t) => Some(
            t.as_u64()
                .ok_or_else(|| member("session.turn", "an integer >= 0 when present"))?,
        ),
    };
    Ok(pb::Session {
        id: required_str(o, "session", "id")?,
        started_at: optional_str(o, "session", "started_at")?,
        turn,
        additional: additional(o, SESSION_FIELDS),
    })
}

fn encode_optional(
    point: InterceptionPoint,
    m: &Map<String, Value>,
) -> Result<Option<pb::ContextOptional>, InvalidContext> {
    let mut o = pb::ContextOptional {
        messages: if point == InterceptionPoint::PreModelCall {
            None
        } else {
            json_member(m, "messages")
        },
        trace: m
            .get("trace")
            .map(|v| {
                let t = as_object(v, "trace")?;
                Ok::<_, InvalidContext>(pb::Trace {
                    trace_id: optional_str(t, "trace", "trace_id")?,
                    span_id: optional_str(t, "trace", "span_id")?,
                    additional: additional(t, TRACE_FIELDS),
                })
            })
            .transpose()?,
        tenant: m
            .get("tenant")
            .map(|v| {
                let t = as_object(v, "tenant")?;
                Ok::<_, InvalidContext>(pb::Tenant {
                    id: optional_str(t, "tenant", "id")?,
                    name: optional_str(t, "tenant", "name")?,
                    additional: additional(t, TENANT_FIELDS),
                })
            })
            .transpose()?,
        actor: m
            .get("actor")
            .map(|v| {
                let a = as_object(v, "actor")?;
                Ok::<_, InvalidContext>(pb::Actor {
                    id: optional_str(a, "actor", "id")?,
                    kind: optional_str(a, "actor", "kind")?,
                    additional: additional(a, ACTOR_FIELDS),
                })
            })
            .transpose()?,
        budgets: json_member(m, "budgets"),
        extensions: HashMap::new(),
        additional: m
            .iter()
            .filter(|(k, _)| !is_typed_member(point, k))
            .map(|(k, v)| (k.clone(), json_value(v)))
            .collect(),
    };
    if let Some(ext) = m.get("extensions") {
        let ext = as_object(ext, "extensions")?;
        if ext.is_empty() {
            o.additional.insert(
                "extensions".to_owned(),
                json_value(&Value::Object(Map::new())),
            );
        } else {
            o.extensions = additional(ext, &[]);
        }
    }
    Ok((o != pb::ContextOptional::default()).then_some(o))
}

fn encode_model(v: &Value) -> Result<pb::Model, InvalidContext> {
    let o = as_object(v, "model")?;
    Ok(pb::Model {
        id: required_str(o, "model", "id")?,
        vendor: optional_str(o, "model", "vendor")?,
        params: json_member(o, "params"),
        additional: additional(o, MODEL_FIELDS),
    })
}

fn encode_model_call(
    m: &Map<String, Value>,
) -> Result<Option<pb::ModelCallOptional>, InvalidContext> {
    let mc = pb::ModelCallOptional {
        request_id: optional_str(m, "", "request_id")?,
        tools: json_member(m, "tools"),
        usage: json_member(m, "usage"),
    };
    Ok((mc != pb::ModelCallOptional::default()).then_some(mc))
}

fn encode_tool_call(v: &Value) -> Result<pb::ToolCall, InvalidContext> {
    let o = as_object(v, "tool_call")?;
    if o.keys().any(|k| !TOOL_CALL_FIELDS.contains(&k.as_str())) {
        return Err(member(
            "tool_call",
            "an object with no members besides id, name, args and content_hash",
        ));
    }
    Ok(pb::ToolCall {
        id: required_str(o, "tool_call", "id")?,
        name: required_str(o, "tool_call", "name")?,
        args: json_member(o, "args"),
        content_hash: optional_str(o, "tool_call", "content_hash")?,
    })
}

fn encode_tool_result(v: &Value) -> Result<pb::ToolResult, InvalidContext> {
    let o = as_object(v, "tool_result")?;
    Ok(pb::ToolResult {
        value: json_member(o, "value"),
        is_error: o
            .get("is_error")
            .and_then(Value::as_bool)
            .ok_or_else(|| member("tool_result.is_error", "a boolean"))?,
        duration_ms: json_member(o, "duration_ms"),
        additional: additional(o, TOOL_RESULT_FIELDS),
    })
}
