//! [`AgentContext`] ⇄ the per-point request messages.
//!
//! Every member of the context travels exactly once:
//!
//! - the required core (§4.1) in [`pb::ContextCore`], without
//!   `interception_point` (implied by the request kind) and without `target`
//!   (rebuilt by the receiver from the point's target field);
//! - the point's conditional members (§4.2) in the request's own fields:
//!   typed where the proto names their members (`model`, `tool_call`,
//!   `tool_result`), whole as JSON text where the member is the target
//!   object (`agent_init`, `input`, `response`, `output`, `summary`);
//! - the model-call members (`request_id`, `tools`, `usage`) at the two model
//!   points in [`pb::ModelCallOptional`];
//! - every other member in [`pb::ContextOptional`]: the well-known optionals
//!   (§4.5), `extensions` (§4.6), and any top-level member this contract
//!   version does not name at this point in its `additional` map.
//!
//! Members of open objects that the proto does not name travel in that
//! object's `additional` map. A member that the proto types (a string, an
//! integer, a boolean, an object) but that has another JSON type in the
//! context is refused with [`InvalidContext::Member`] rather than coerced or
//! dropped, and a receiver refuses an `additional` entry that shadows a
//! typed field. `tool_call` is closed on the wire: it has no `additional`
//! map, so a member other than `id`, `name`, `args` and `content_hash` is
//! refused too.
//!
//! The one member with no presence of its own on the wire is an empty
//! `extensions` object (an empty map is indistinguishable from no map): it
//! travels as `ContextOptional.additional["extensions"] = {}`, the only
//! shape in which a receiver accepts that key there.
//!
//! Decoding rebuilds the spec JSON object and runs the §4 envelope check
//! ([`AgentContext::validate`]), so for every context that encodes,
//! `context_from_request(context_to_request(c)?)? == c`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::context::{AgentContext, InvalidContext};
use crate::pb;
use crate::point::InterceptionPoint;
use crate::wire::json;

/// One interceptor request of any point: what a host sends and what a
/// service receives.
#[derive(Debug, Clone, PartialEq)]
pub enum PointRequest {
    /// `AgentStartup`.
    AgentStartup(pb::AgentStartupRequest),
    /// `Input`.
    Input(pb::InputRequest),
    /// `PreModelCall`.
    PreModelCall(pb::PreModelCallRequest),
    /// `PostModelCall`.
    PostModelCall(pb::PostModelCallRequest),
    /// `PreToolCall`.
    PreToolCall(pb::PreToolCallRequest),
    /// `PostToolCall`.
    PostToolCall(pb::PostToolCallRequest),
    /// `Output`.
    Output(pb::OutputRequest),
    /// `AgentShutdown`.
    AgentShutdown(pb::AgentShutdownRequest),
}

impl PointRequest {
    /// The point this request is for.
    pub fn point(&self) -> InterceptionPoint {
        match self {
            Self::AgentStartup(_) => InterceptionPoint::AgentStartup,
            Self::Input(_) => InterceptionPoint::Input,
            Self::PreModelCall(_) => InterceptionPoint::PreModelCall,
            Self::PostModelCall(_) => InterceptionPoint::PostModelCall,
            Self::PreToolCall(_) => InterceptionPoint::PreToolCall,
            Self::PostToolCall(_) => InterceptionPoint::PostToolCall,
            Self::Output(_) => InterceptionPoint::Output,
            Self::AgentShutdown(_) => InterceptionPoint::AgentShutdown,
        }
    }
}

// ---------------------------------------------------------------------------
// Which member travels where
// ---------------------------------------------------------------------------

/// Top-level members carried by typed fields at every point (`target` is
/// listed because it never travels as a member).
const COMMON_MEMBERS: &[&str] = &[
    "spec",
    "interception_point",
    "target",
    "timestamp",
    "sequence",
    "agent",
    "session",
    "messages",
    "trace",
    "tenant",
    "actor",
    "budgets",
    "extensions",
];

/// Top-level members carried by the request's own fields at `point`.
fn point_members(point: InterceptionPoint) -> &'static [&'static str] {
    use InterceptionPoint::*;
    match point {
        AgentStartup => &["agent_init"],
        Input => &["input"],
        PreModelCall => &["model", "request_id", "tools", "usage"],
        PostModelCall => &["model", "response", "request_id", "tools", "usage"],
        PreToolCall => &["tool_call"],
        PostToolCall => &["tool_call", "tool_result"],
        Output => &["output"],
        AgentShutdown => &["summary"],
    }
}

/// Whether the top-level member `key` has a typed place at `point` (and so
/// must not travel in `ContextOptional.additional`).
fn is_typed_member(point: InterceptionPoint, key: &str) -> bool {
    COMMON_MEMBERS.contains(&key) || point_members(point).contains(&key)
}

const AGENT_FIELDS: &[&str] = &["id", "framework", "name", "version"];
const SESSION_FIELDS: &[&str] = &["id", "started_at", "turn"];
const TRACE_FIELDS: &[&str] = &["trace_id", "span_id"];
const TENANT_FIELDS: &[&str] = &["id", "name"];
const ACTOR_FIELDS: &[&str] = &["id", "kind"];
const MODEL_FIELDS: &[&str] = &["id", "vendor", "params"];
const TOOL_CALL_FIELDS: &[&str] = &["id", "name", "args", "content_hash"];
const TOOL_RESULT_FIELDS: &[&str] = &["value", "is_error", "duration_ms"];

const A_STRING: &str = "a string";
const AN_OBJECT: &str = "an object";
const PRESENT: &str = "present";

fn member(member: impl Into<String>, expected: &'static str) -> InvalidContext {
    InvalidContext::Member {
        member: member.into(),
        expected,
    }
}

/// `parent.key` for error messages. Keys of open objects come from outside:
/// only short identifier-like keys are echoed.
fn path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if parent.is_empty() {
        if plain {
            key.to_owned()
        } else {
            "*".to_owned()
        }
    } else if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}.*")
    }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core() -> Value {
        json!({
            "spec": "agent-hooks/0.1",
            "timestamp": "2026-06-19T14:03:11.123Z",
            "sequence": 7,
            "agent": {"id": "a", "framework": "hookwire", "name": "n", "x-extra": [1, 1.0]},
            "session": {"id": "s", "turn": 2, "extra": {"k": null}},
        })
    }

    fn ctx(point: &str, members: Value) -> Value {
        let mut c = core();
        c["interception_point"] = json!(point);
        if let (Some(c), Some(m)) = (c.as_object_mut(), members.as_object()) {
            c.extend(m.clone());
        }
        c
    }

    fn samples() -> Vec<Value> {
        vec![
            ctx(
                "agent_startup",
                json!({"agent_init": {"tools_registered": ["bash"], "config": {"x": 1}}}),
            ),
            ctx(
                "input",
                json!({"input": {"content": "hi 😀", "role": "user"}, "messages": [], "extensions": {}}),
            ),
            ctx(
                "pre_model_call",
                json!({
                    "model": {"id": "m", "vendor": "v", "params": {"t": 0.5}, "other": true},
                    "messages": [{"role": "user", "content": "x"}],
                    "request_id": "r1", "tools": [{"name": "bash"}],
                }),
            ),
            ctx(
                "post_model_call",
                json!({
                    "model": {"id": ""},
                    "response": {"content": null, "tool_calls": [], "finish_reason": "stop"},
                    "usage": {"prompt_tokens": 3}, "messages": [1],
                }),
            ),
            ctx(
                "pre_tool_call",
                json!({
                    "tool_call": {"id": "c", "name": "bash", "args": {"n": 18446744073709551615u64}, "content_hash": "sha256:00"},
                    "trace": {"trace_id": "ab", "flags": 1}, "tenant": {}, "actor": {"kind": "human"},
                    "budgets": {"tool_call_count": 3, "cost_usd": 3.0},
                    "extensions": {"acme": {"k": [-9223372036854775808i64]}},
                    "x_future": "kept", "input": {"not": "this point's"},
                }),
            ),
            ctx(
                "post_tool_call",
                json!({
                    "tool_call": {"id": "c", "name": "bash", "args": {}},
                    "tool_result": {"value": null, "is_error": false, "duration_ms": 1.0, "stderr": ""},
                }),
            ),
            ctx("output", json!({"output": {"content": "bye"}})),
            ctx(
                "agent_shutdown",
                json!({"summary": {"reason": "completed"}}),
            ),
        ]
    }

    #[test]
    fn every_point_round_trips() {
        for sample in samples() {
            let c = AgentContext::from_json(sample.clone()).unwrap();
            let req = context_to_request(&c).unwrap();
            assert_eq!(req.point(), c.point());
            let back = context_from_request(req).unwrap();
            assert_eq!(back, c, "{sample}");
            assert_eq!(back.to_json(), c.to_json());
        }
    }

    #[test]
    fn layout_puts_members_in_their_typed_fields() {
        let c = AgentContext::from_json(samples().swap_remove(4)).unwrap();
        let PointRequest::PreToolCall(r) = context_to_request(&c).unwrap() else {
            panic!("wrong kind");
        };
        let core = r.core.unwrap();
        assert_eq!(core.sequence, 7);
        assert_eq!(core.agent.as_ref().unwrap().name.as_deref(), Some("n"));
        assert_eq!(
            core.agent.unwrap().additional["x-extra"].json,
            "[1,1.0]",
            "unknown agent members travel verbatim"
        );
        assert_eq!(core.session.unwrap().turn, Some(2));
        let call = r.tool_call.unwrap();
        assert_eq!(call.args.unwrap().json, r#"{"n":18446744073709551615}"#);
        let o = r.optional.unwrap();
        assert_eq!(o.trace.unwrap().trace_id.as_deref(), Some("ab"));
        assert_eq!(o.tenant, Some(pb::Tenant::default()));
        assert_eq!(o.extensions["acme"].json, r#"{"k":[-9223372036854775808]}"#);
        let mut extra: Vec<_> = o.additional.keys().cloned().collect();
        extra.sort();
        assert_eq!(extra, ["input", "x_future"]);
    }

    #[test]
    fn wrong_types_are_refused_not_coerced() {
        let base = samples().swap_remove(5);
        let cases: [(&str, &[&str], Value); 9] = [
            ("agent.name", &["agent", "name"], json!(1)),
            ("agent.version", &["agent", "version"], Value::Null),
            ("session.turn", &["session", "turn"], json!(-1)),
            ("session.turn", &["session", "turn"], json!(1.0)),
            ("session.started_at", &["session", "started_at"], json!([])),
            (
                "tool_call.content_hash",
                &["tool_call", "content_hash"],
                json!(1),
            ),
            ("tool_call", &["tool_call", "extra"], json!(1)),
            (
                "tool_result.is_error",
                &["tool_result", "is_error"],
                json!("no"),
            ),
            ("trace", &["trace"], json!("ab")),
        ];
        for (name, at, v) in cases {
            let mut c = base.clone();
            let mut slot = &mut c;
            for k in at {
                slot = &mut slot[*k];
            }
            *slot = v;
            let members = c.as_object().cloned().unwrap_or_default();
            let ctx =
                AgentContext::from_members_unchecked(InterceptionPoint::PostToolCall, members);
            match context_to_request(&ctx) {
                Err(InvalidContext::Member { member, .. }) => assert_eq!(member, name),
                other => panic!("{name}: {other:?}"),
            }
        }
        let mut no_seq = base.as_object().cloned().unwrap_or_default();
        no_seq.insert("sequence".into(), json!(1.5));
        let ctx = AgentContext::from_members_unchecked(InterceptionPoint::PostToolCall, no_seq);
        assert!(matches!(
            context_to_request(&ctx),
            Err(InvalidContext::Member { .. })
        ));
        let members = base.as_object().cloned().unwrap_or_default();
        let wrong_point = AgentContext::from_members_unchecked(InterceptionPoint::Output, members);
        assert_eq!(context_to_request(&wrong_point), Err(InvalidContext::Point));
    }

    fn pre_tool_request() -> pb::PreToolCallRequest {
        let c = AgentContext::from_json(samples().swap_remove(4)).unwrap();
        match context_to_request(&c) {
            Ok(PointRequest::PreToolCall(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    fn decode_with(
        f: impl FnOnce(&mut pb::PreToolCallRequest),
    ) -> Result<AgentContext, InvalidContext> {
        let mut r = pre_tool_request();
        f(&mut r);
        context_from_request(PointRequest::PreToolCall(r))
    }

    fn jv(text: &str) -> pb::JsonValue {
        pb::JsonValue { json: text.into() }
    }

    #[test]
    fn decode_refusals() {
        let member_err = |r: Result<AgentContext, InvalidContext>| match r {
            Err(InvalidContext::Member { member, .. }) => member,
            other => panic!("{other:?}"),
        };
        assert_eq!(member_err(decode_with(|r| r.core = None)), "core");
        assert_eq!(
            member_err(decode_with(|r| r.core.as_mut().unwrap().agent = None)),
            "agent"
        );
        assert_eq!(member_err(decode_with(|r| r.tool_call = None)), "tool_call");
        assert_eq!(
            member_err(decode_with(|r| {
                let a = r.core.as_mut().unwrap().agent.as_mut().unwrap();
                a.additional.insert("name".into(), jv("1"));
            })),
            "agent.name"
        );
        for shadow in [
            "target",
            "interception_point",
            "tool_call",
            "extensions",
            "trace",
        ] {
            assert!(
                matches!(
                    decode_with(|r| {
                        let o = r.optional.as_mut().unwrap();
                        o.additional.insert(shadow.into(), jv("{}"));
                    }),
                    Err(InvalidContext::Member { .. })
                ),
                "{shadow}"
            );
        }
        // An empty `extensions` travels in additional, and only as `{}`.
        let ok = decode_with(|r| {
            let o = r.optional.as_mut().unwrap();
            o.extensions.clear();
            o.additional.insert("extensions".into(), jv("{}"));
        })
        .unwrap();
        assert_eq!(ok.get("extensions"), Some(&json!({})));
        assert!(
            decode_with(|r| {
                let o = r.optional.as_mut().unwrap();
                o.extensions.clear();
                o.additional
                    .insert("extensions".into(), jv(r#"{"acme":1}"#));
            })
            .is_err()
        );
        assert_eq!(
            decode_with(|r| {
                let o = r.optional.as_mut().unwrap();
                o.extensions.insert("Bad".into(), jv("1"));
            }),
            Err(InvalidContext::Namespace)
        );
        match decode_with(|r| r.tool_call.as_mut().unwrap().args = Some(jv("{\"n\":1e400}"))) {
            Err(InvalidContext::Json { member, .. }) => assert_eq!(member, "tool_call.args"),
            other => panic!("{other:?}"),
        }
        match decode_with(|r| {
            let a = r.core.as_mut().unwrap().agent.as_mut().unwrap();
            a.additional.insert("secret value?".into(), jv(""));
        }) {
            Err(InvalidContext::Json { member, problem }) => {
                assert_eq!(member, "agent.*");
                assert!(!problem.contains("secret"));
            }
            other => panic!("{other:?}"),
        }
        // The envelope check runs on decode.
        assert!(matches!(
            decode_with(|r| r.tool_call.as_mut().unwrap().args = Some(jv("[]"))),
            Err(InvalidContext::Member { .. })
        ));
        assert!(matches!(
            decode_with(|r| r.core.as_mut().unwrap().spec = "x".into()),
            Err(InvalidContext::Member { .. })
        ));
    }

    #[test]
    fn pre_model_call_messages_travel_once() {
        let c = AgentContext::from_json(samples().swap_remove(2)).unwrap();
        let Ok(PointRequest::PreModelCall(mut r)) = context_to_request(&c) else {
            panic!("wrong kind");
        };
        assert!(r.messages.is_some());
        assert!(r.optional.as_ref().is_none_or(|o| o.messages.is_none()));
        r.optional.get_or_insert_default().messages = Some(jv("[]"));
        assert!(matches!(
            context_from_request(PointRequest::PreModelCall(r)),
            Err(InvalidContext::Member { .. })
        ));
    }

    #[test]
    fn members_holding_target_are_refused() {
        let c = AgentContext::from_json(samples().swap_remove(6)).unwrap();
        let mut members = c.members().clone();
        members.insert("target".into(), json!({"content": "bye"}));
        let c = AgentContext::from_members_unchecked(InterceptionPoint::Output, members);
        assert!(matches!(
            context_to_request(&c),
            Err(InvalidContext::Member { .. })
        ));
    }
}
