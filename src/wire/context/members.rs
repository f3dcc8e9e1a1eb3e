//! Which member of a context travels in which field of a request, and the
//! error helpers encoding and decoding share.

use crate::context::InvalidContext;
use crate::point::InterceptionPoint;

/// Top-level members carried by typed fields at every point (`target` is
/// listed because it never travels as a member).
pub(super) const COMMON_MEMBERS: &[&str] = &[
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
pub(super) fn point_members(point: InterceptionPoint) -> &'static [&'static str] {
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
pub(super) fn is_typed_member(point: InterceptionPoint, key: &str) -> bool {
    COMMON_MEMBERS.contains(&key) || point_members(point).contains(&key)
}

pub(super) const AGENT_FIELDS: &[&str] = &["id", "framework", "name", "version"];
pub(super) const SESSION_FIELDS: &[&str] = &["id", "started_at", "turn"];
pub(super) const TRACE_FIELDS: &[&str] = &["trace_id", "span_id"];
pub(super) const TENANT_FIELDS: &[&str] = &["id", "name"];
pub(super) const ACTOR_FIELDS: &[&str] = &["id", "kind"];
pub(super) const MODEL_FIELDS: &[&str] = &["id", "vendor", "params"];
pub(super) const TOOL_CALL_FIELDS: &[&str] = &["id", "name", "args", "content_hash"];
pub(super) const TOOL_RESULT_FIELDS: &[&str] = &["value", "is_error", "duration_ms"];

pub(super) const A_STRING: &str = "a string";
pub(super) const AN_OBJECT: &str = "an object";
pub(super) const PRESENT: &str = "present";

pub(super) fn member(member: impl Into<String>, expected: &'static str) -> InvalidContext {
    InvalidContext::Member {
        member: member.into(),
        expected,
    }
}

/// `parent.key` for error messages. Keys of open objects come from outside:
/// only short identifier-like keys are echoed.
pub(super) fn path(parent: &str, key: &str) -> String {
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
