//! Member visibility: the copy of a context one interceptor may see when it
//! is granted only some of its members.
//!
//! A restricted copy is still a valid §4 context: the required core
//! (§4.1) and the point's conditional members (§4.2), the target's member
//! among them, are always kept; only the other top-level members — the
//! optional well-known ones of §4.5 (`messages` outside `pre_model_call`,
//! `actor`, `tenant`, `trace`, `budgets`, ...) and `extensions` (§4.6) —
//! can be withheld. A withheld member is absent, never emptied.
//! Visibility is per top-level member: the optional sub-members of a
//! member that is always sent (`agent.name`, `tool_call.content_hash`)
//! travel with it.

use serde_json::Map;

use super::{AgentContext, conditional_members};
use crate::point::InterceptionPoint;

/// The required core of every point (§4.1), `target` aside (a context
/// derives it from the point's target field).
const REQUIRED_CORE: [&str; 6] = [
    "spec",
    "interception_point",
    "timestamp",
    "sequence",
    "agent",
    "session",
];

impl AgentContext {
    /// Whether `member` is a top-level member every context at `point`
    /// carries (§4.1 required core, §4.2 conditional members, so the
    /// target's member too), and so can never be withheld.
    pub fn is_required_member(point: InterceptionPoint, member: &str) -> bool {
        REQUIRED_CORE.contains(&member)
            || conditional_members(point).iter().any(|(m, _)| *m == member)
            || point.target_location().first() == Some(&member)
    }

    /// The copy of this context an interceptor granted only the members
    /// for which `granted` holds may see, and the names of the members it
    /// withholds, sorted by name.
    /// Required members are kept whatever `granted` says.
    pub fn restricted(&self, granted: impl Fn(&str) -> bool) -> (AgentContext, Vec<String>) {
        let mut kept = Map::new();
        let mut withheld = Vec::new();
        for (name, value) in &self.members {
            if Self::is_required_member(self.point, name) || granted(name) {
                kept.insert(name.clone(), value.clone());
            } else {
                withheld.push(name.clone());
            }
        }
        // The names in one order whatever order the map keeps (serde_json's
        // `preserve_order` is on wherever a dependency asks for it).
        withheld.sort_unstable();
        (Self::from_members_unchecked(self.point, kept), withheld)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> AgentContext {
        AgentContext::from_json(json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "input",
            "timestamp": "2026-06-19T14:03:11.123Z",
            "sequence": 1,
            "agent": {"id": "a", "framework": "hookwire", "name": "optional"},
            "session": {"id": "s"},
            "input": {"content": "hi", "role": "user"},
            "messages": [{"role": "user", "content": "earlier"}],
            "actor": {"id": "u1", "kind": "human"},
            "tenant": {"id": "t1"},
            "extensions": {"acme": {"k": 1}}
        }))
        .unwrap()
    }

    #[test]
    fn withheld_members_are_absent_and_the_copy_stays_valid() {
        let ctx = input();
        let (view, withheld) = ctx.restricted(|m| m == "actor");
        assert_eq!(withheld, ["extensions", "messages", "tenant"]);
        view.validate().unwrap();
        assert_eq!(view.target(), ctx.target());
        assert!(view.get("messages").is_none() && view.get("tenant").is_none());
        assert_eq!(view.get("actor"), ctx.get("actor"));
        assert_eq!(view.get("agent"), ctx.get("agent"), "sub-members travel");
    }

    #[test]
    fn required_and_target_members_cannot_be_withheld() {
        for point in InterceptionPoint::ALL {
            for core in REQUIRED_CORE {
                assert!(AgentContext::is_required_member(point, core));
            }
            let target = point.target_location()[0];
            assert!(AgentContext::is_required_member(point, target), "{point}");
            assert!(!AgentContext::is_required_member(point, "actor"));
            assert!(!AgentContext::is_required_member(point, "extensions"));
        }
        assert!(!AgentContext::is_required_member(
            InterceptionPoint::Input,
            "messages"
        ));
        assert!(AgentContext::is_required_member(
            InterceptionPoint::PostModelCall,
            "model"
        ));
        let ctx = input();
        let (view, _) = ctx.restricted(|_| false);
        view.validate().unwrap();
        assert_eq!(view.get("input"), ctx.get("input"));
    }
}
