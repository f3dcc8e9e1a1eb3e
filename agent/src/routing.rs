//! Tool-call routing: a `pre_tool_call` verdict may send a call to a named
//! executor (a sandbox toolbox, a remote runner) instead of the agent's
//! own tools. The request travels beside the verdict, in the `hookwire`
//! namespace of the interceptor's response extensions (§5.5; it costs no
//! conformance vector):
//!
//! ```json
//! {"hookwire": {"route": {"executor": "sandbox"}}}
//! ```
//!
//! A route is an effect of kind `route`, so it acts only as the host
//! releases it ([`Emission::response_extensions`]): in `enforce` mode,
//! from a binding whose own verdict permitted and that holds the `route`
//! grant, for a call that runs. A route the host withheld (in
//! `evaluate_only`, from a deny lifted by approval, ...) is not read: the
//! call runs on the agent's own tools and the record's
//! `extensions.hookwire.effects` says why; one outside the binding's grant
//! was already refused as its `host_error:verdict_invalid`. When several
//! released routes ask, the last in chain order wins. The agent registers
//! its executors with [`Agent::executor`](super::Agent::executor); a route
//! to a name it does not have, or a malformed route, fails closed (the
//! call does not run). Each route is reported in
//! [`Turn::routed`](super::Turn::routed).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::tools::Toolbox;
use hookwire_client::Emission;

/// The response-extension namespace a route travels in.
pub(super) const NAMESPACE: &str = "hookwire";
/// How long an executor name may be.
const MAX_EXECUTOR_NAME: usize = 128;

/// A tool call a verdict routed to a named executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedCall {
    /// The call's id.
    pub call_id: String,
    /// The executor named by the verdict.
    pub executor: String,
    /// Whether the executor ran the call (false: it was not registered,
    /// the call failed closed).
    pub ran: bool,
}

/// The executors an agent may route to, by name.
#[derive(Default, Clone)]
pub(super) struct Executors {
    by_name: HashMap<String, Arc<dyn Toolbox>>,
}

impl Executors {
    pub(super) fn register(&mut self, name: String, toolbox: impl Toolbox) {
        self.by_name.insert(name, Arc::new(toolbox));
    }

    pub(super) fn get(&self, name: &str) -> Option<&dyn Toolbox> {
        self.by_name.get(name).map(|t| t.as_ref() as &dyn Toolbox)
    }
}

/// The executor a `pre_tool_call` routes the call to, read from the
/// extensions the host released only: `None` for the default, `Some(Err)`
/// for a route the agent cannot read.
pub(super) fn route_of(pre: &Emission) -> Option<Result<String, String>> {
    let mut route = None;
    for (binding, ext) in pre.response_extensions() {
        let Some(asked) = ext.get(NAMESPACE).and_then(|h| h.get("route")) else {
            continue;
        };
        route = Some(match asked.get("executor").and_then(Value::as_str) {
            Some(name) if !name.is_empty() && name.len() <= MAX_EXECUTOR_NAME => {
                Ok(name.to_owned())
            }
            _ => Err(format!(
                "interceptor {binding:?} asked for a route without a valid executor name"
            )),
        });
    }
    route
}
