//! Cancellation of an emission (see the `session` module docs): an
//! emission takes its `sequence` before it awaits its interceptors, and if
//! its caller drops it before the record is delivered, the [`Unsettled`]
//! guard delivers a record for that sequence at once, so a record reader
//! never sees a gap (§12.2 item 3).

use hookwire::{AgentContext, InterceptionPoint, SPEC_VERSION};
use serde_json::{Map, Value};

use super::context::ContextBase;
use crate::host_state::HostState;
use crate::pipeline;

/// An emission whose sequence is taken and whose record is not yet
/// delivered; dropped armed (its future cancelled), it delivers the
/// cancellation record ([`pipeline::cancelled`]).
pub(super) struct Unsettled<'a> {
    host: &'a HostState,
    base: &'a ContextBase,
    settings: pipeline::Settings,
    /// Where the context's core members come from; `None` once the
    /// emission settled.
    core: Option<CoreSource>,
}

impl<'a> Unsettled<'a> {
    /// Armed for `ctx`, an emission of the session with `base` on `host`,
    /// running under `settings`.
    pub(super) fn arm(
        host: &'a HostState,
        base: &'a ContextBase,
        settings: pipeline::Settings,
        ctx: &AgentContext,
    ) -> Self {
        Self {
            host,
            base,
            settings,
            core: Some(CoreSource::of(base, &host.agent, ctx)),
        }
    }

    /// The record was delivered: nothing to do on drop.
    pub(super) fn settled(mut self) {
        self.core = None;
    }
}

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            let core = core.build(self.base, &self.host.agent);
            pipeline::cancelled(self.host, self.settings, core);
        }
    }
}

/// The core members a record needs (spec, point, timestamp, sequence,
/// agent, session, trace), kept as cheaply as an emission that settles
/// (nearly all of them) allows: a member equal to what the session itself
/// supplies is rebuilt from the session if the record is ever written; only
/// the others (the timestamp, the sequence, a `trace`, anything a caller's
/// members replaced) are copied. Copying the agent and session objects on
/// every emission cost more than the rest of the guard.
struct CoreSource {
    point: InterceptionPoint,
    members: [(&'static str, CoreMember); 7],
}

/// One core member of the context.
enum CoreMember {
    /// Equal to what the session supplies for it.
    Session,
    /// This value (`None`: the context had no such member).
    Copied(Option<Value>),
}

impl CoreSource {
    const KEYS: [&'static str; 7] = [
        "spec",
        "interception_point",
        "timestamp",
        "sequence",
        "agent",
        "session",
        "trace",
    ];

    /// The core of `ctx`, an emission of the session with `base` by the
    /// agent `agent`.
    fn of(base: &ContextBase, agent: &Map<String, Value>, ctx: &AgentContext) -> Self {
        let point = ctx.point();
        let members = Self::KEYS.map(|key| {
            let value = ctx.get(key);
            let from_session = match (key, value) {
                ("spec", Some(Value::String(v))) => v == SPEC_VERSION,
                ("interception_point", Some(Value::String(v))) => v == point.as_str(),
                ("agent", Some(Value::Object(v))) => v == agent,
                ("session", Some(v)) => v == base.session(),
                _ => false,
            };
            let member = if from_session {
                CoreMember::Session
            } else {
                CoreMember::Copied(value.cloned())
            };
            (key, member)
        });
        Self { point, members }
    }

    /// The core as a context, the session's members rebuilt from `base`
    /// and `agent`.
    fn build(self, base: &ContextBase, agent: &Map<String, Value>) -> AgentContext {
        let mut m = Map::new();
        for (key, member) in self.members {
            let value = match member {
                CoreMember::Copied(value) => value,
                CoreMember::Session => Some(match key {
                    "spec" => Value::from(SPEC_VERSION),
                    "interception_point" => Value::from(self.point.as_str()),
                    "agent" => Value::Object(agent.clone()),
                    _ => base.session().clone(),
                }),
            };
            if let Some(v) = value {
                m.insert(key.into(), v);
            }
        }
        AgentContext::from_members_unchecked(self.point, m)
    }
}

#[cfg(test)]
mod tests {
    use hookwire::{InterceptionPoint, Verdict};
    use serde_json::{Map, json};

    use super::*;
    use crate::session::members::pre_tool_members;
    use crate::{BoxError, Host, Session, ToolCall, interceptor_fn};

    fn host() -> Host {
        let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
        Host::builder("agent", "hookwire")
            .interceptor("allow", allow)
            .build()
            .unwrap()
    }

    fn agent(session: &Session) -> &Map<String, Value> {
        &session.state.host.agent
    }

    fn source(session: &Session, ctx: &AgentContext) -> CoreSource {
        CoreSource::of(&session.state.base, agent(session), ctx)
    }

    /// The core a cancellation record carries, as the context had it.
    fn core_members(ctx: &hookwire::AgentContext) -> Map<String, serde_json::Value> {
        CoreSource::KEYS
            .iter()
            .filter_map(|k| ctx.get(k).map(|v| ((*k).to_owned(), v.clone())))
            .collect()
    }

    #[test]
    fn a_cancellation_core_is_the_contexts_whoever_supplied_its_members() {
        let host = host();
        let plain = host.session("s-plain").unwrap();
        // Members that replace core members, and a trace: copied, not
        // rebuilt from the session.
        let replaced = host
            .session_builder("s-replaced")
            .members(
                json!({
                    "agent": {"id": "impostor", "framework": "x"},
                    "trace": {"trace_id": "0af7651916cd43dd8448eb211c80319c"},
                    "session": {"turn": 3},
                })
                .as_object()
                .unwrap()
                .clone(),
            )
            .open()
            .unwrap();
        for session in [&plain, &replaced] {
            for point in [InterceptionPoint::PreToolCall, InterceptionPoint::Output] {
                let ctx = session.state.context(
                    point,
                    pre_tool_members(&ToolCall::new("c1", "ls", json!({}))),
                );
                let core = source(session, &ctx).build(&session.state.base, agent(session));
                assert_eq!(core.point(), point);
                assert_eq!(
                    core_members(&core),
                    core_members(&ctx),
                    "{point:?} of {}",
                    session.id()
                );
            }
        }
        let ctx = replaced.state.context(InterceptionPoint::Input, Map::new());
        assert_eq!(ctx.get("agent").unwrap()["id"], "impostor");
        assert!(matches!(
            source(&replaced, &ctx).members[4].1,
            CoreMember::Copied(Some(_))
        ));
        let ctx = plain.state.context(InterceptionPoint::Input, Map::new());
        assert!(matches!(
            source(&plain, &ctx).members[4].1,
            CoreMember::Session
        ));
    }
}
