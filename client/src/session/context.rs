//! The context of one emission (§4): the core members (spec, point,
//! timestamp, sequence, agent, session), the members the session was
//! opened with, and the point's own members, assembled once per emission
//! from the [`ContextBase`] the session keeps.

use hookwire::{AgentContext, InterceptionPoint, SPEC_VERSION};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::macros::format_description;

/// What every context of one session starts from: its `session` object
/// (with `session.id`) and the members it was opened with.
#[derive(Debug)]
pub(super) struct ContextBase {
    session: Value,
    members: Map<String, Value>,
}

impl ContextBase {
    /// The base of session `id`, from the members it was opened with (a
    /// `session` member among them gives the `session` object its other
    /// members).
    pub(super) fn new(id: &str, mut members: Map<String, Value>) -> Self {
        let mut session = match members.remove("session") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        session.insert("id".into(), Value::String(id.to_owned()));
        Self {
            session: Value::Object(session),
            members,
        }
    }

    /// The `session` object every context carries.
    pub(super) fn session(&self) -> &Value {
        &self.session
    }

    /// The context of emission `sequence` at `point` of an agent
    /// described by `agent`: the core, the session's members, and the
    /// point's `conditional` members (an `extensions` member is merged
    /// namespace by namespace into the session's).
    pub(super) fn assemble(
        &self,
        agent: &Map<String, Value>,
        point: InterceptionPoint,
        sequence: u64,
        mut conditional: Map<String, Value>,
    ) -> AgentContext {
        let mut m = Map::with_capacity(8 + self.members.len() + conditional.len());
        m.insert("spec".into(), Value::from(SPEC_VERSION));
        m.insert("interception_point".into(), Value::from(point.as_str()));
        m.insert("timestamp".into(), Value::String(now_rfc3339()));
        m.insert("sequence".into(), Value::from(sequence));
        m.insert("agent".into(), Value::Object(agent.clone()));
        m.insert("session".into(), self.session.clone());
        for (k, v) in &self.members {
            m.insert(k.clone(), v.clone());
        }
        match (conditional.remove("extensions"), m.get_mut("extensions")) {
            (Some(Value::Object(add)), Some(Value::Object(base))) => merge_extensions(base, add),
            (Some(add), _) => {
                m.insert("extensions".into(), add);
            }
            (None, _) => {}
        }
        m.extend(conditional);
        AgentContext::from_members_unchecked(point, m)
    }
}

/// Merges `add`'s namespaces into `base`, member by member within a
/// namespace both carry.
fn merge_extensions(base: &mut Map<String, Value>, add: Map<String, Value>) {
    for (ns, v) in add {
        match (base.get_mut(&ns), v) {
            (Some(Value::Object(b)), Value::Object(a)) => b.extend(a),
            (_, v) => {
                base.insert(ns, v);
            }
        }
    }
}

/// RFC 3339 UTC with millisecond precision, e.g. `2026-06-19T14:03:11.123Z`.
fn now_rfc3339() -> String {
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}
