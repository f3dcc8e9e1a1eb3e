//! Label flow (§5.4): `result_labels` persisted with the data they label,
//! and resurfaced as `source_labels` on the later hooks that derive from it.
//!
//! The agent keeps, per session, one [`ResultLabels`] entry per permitted
//! result that carried labels (a tool result, a model response, a released
//! answer) beside the data itself, and never for an action that did not
//! proceed. Everything later in the session (the next model request, the
//! tool arguments a response asks for, the answer) derives from the
//! transcript those results joined, so each later `pre_model_call`,
//! `pre_tool_call` and `output` carries the union of the labels so far as
//! `extensions.hookwire.source_labels`. The combined verdict unions the
//! labels of the chain (§7.3), so the namespace is the host's, `hookwire`,
//! not one interceptor's.

use std::collections::BTreeSet;

use hookwire::InterceptionPoint;
use serde_json::{Map, Value, json};

use crate::emission::Emission;

/// The labels one permitted result carries (§5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLabels {
    /// The point whose verdict returned them.
    pub point: InterceptionPoint,
    /// What they label: the tool call id, the model id, or `output`.
    pub subject: String,
    /// The data they label, as incorporated.
    pub data: Value,
    /// The labels, as the combined verdict returned them.
    pub labels: Vec<String>,
}

/// The session's label ledger.
#[derive(Debug, Default)]
pub(super) struct LabelLedger {
    entries: Vec<ResultLabels>,
    union: BTreeSet<String>,
}

impl LabelLedger {
    /// Persists the labels of a permitted emission with the data it let in.
    pub(super) fn persist(&mut self, e: &Emission, subject: &str, data: &Value) {
        let labels = &e.verdict().result_labels;
        if !e.proceeds() || labels.is_empty() {
            return;
        }
        self.union.extend(labels.iter().cloned());
        self.entries.push(ResultLabels {
            point: e.record().interception_point,
            subject: subject.to_owned(),
            data: data.clone(),
            labels: labels.clone(),
        });
    }

    pub(super) fn entries(&self) -> &[ResultLabels] {
        &self.entries
    }

    /// `members` with `extensions.hookwire.source_labels` added, when any
    /// label was persisted so far.
    pub(super) fn resurface(&self, mut members: Map<String, Value>) -> Map<String, Value> {
        if !self.union.is_empty() {
            members.insert(
                "extensions".into(),
                json!({"hookwire": {"source_labels": self.union.iter().collect::<Vec<_>>()}}),
            );
        }
        members
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use hookwire::{AgentContext, Verdict};

    use crate::{
        Agent, BoxError, Host, InputRole, ModelResponse, ToolCall, Tools, interceptor_fn, model_fn,
        tool_fn,
    };

    use super::*;

    /// The labels each emission carried, by point.
    type SeenLabels = Arc<Mutex<Vec<(InterceptionPoint, Option<Value>)>>>;

    #[tokio::test]
    async fn result_labels_are_persisted_with_their_data_and_resurface_later() {
        let seen: SeenLabels = Arc::default();
        let log = Arc::clone(&seen);
        let policy = interceptor_fn(move |ctx: AgentContext| {
            let labels = ctx
                .get("extensions")
                .and_then(|e| e.get("hookwire"))
                .and_then(|h| h.get("source_labels"))
                .cloned();
            log.lock().unwrap().push((ctx.point(), labels));
            let point = ctx.point();
            async move {
                Ok::<_, BoxError>(match point {
                    InterceptionPoint::PostToolCall => Verdict::allow().with_label("pii"),
                    _ => Verdict::allow(),
                })
            }
        });
        let host = Host::builder("agent", "hookwire")
            .interceptor("labeler", policy)
            .build()
            .unwrap();
        let calls = Arc::new(Mutex::new(0));
        let model = model_fn("m", move |_| {
            let first = {
                let mut n = calls.lock().unwrap();
                *n += 1;
                *n == 1
            };
            async move {
                Ok::<_, BoxError>(if first {
                    ModelResponse {
                        content: Value::Null,
                        tool_calls: vec![ToolCall::new("c1", "lookup", json!({}))],
                        finish_reason: "tool_calls".into(),
                    }
                } else {
                    ModelResponse {
                        content: json!("done"),
                        tool_calls: Vec::new(),
                        finish_reason: "stop".into(),
                    }
                })
            }
        });
        let tools = Tools::new().with(tool_fn("lookup", |_| async { Ok(json!("alice@x")) }));
        let mut agent = Agent::new(host.session("l").unwrap(), model, tools);
        let (turn, _) = agent.run_once(json!("hi"), InputRole::User).await.unwrap();
        assert!(turn.is_completed());

        let persisted = agent.result_labels();
        assert_eq!(persisted.len(), 1);
        assert_eq!(persisted[0].subject, "c1");
        assert_eq!(persisted[0].data, json!("alice@x"));
        assert_eq!(persisted[0].labels, ["pii"]);

        let seen = seen.lock().unwrap();
        let labels_at = |point| {
            seen.iter()
                .filter(|(p, _)| *p == point)
                .map(|(_, l)| l.clone())
                .collect::<Vec<_>>()
        };
        // The first model call came before the labelled result; the second
        // and the answer derive from it.
        assert_eq!(
            labels_at(InterceptionPoint::PreModelCall),
            [None, Some(json!(["pii"]))]
        );
        assert_eq!(labels_at(InterceptionPoint::Output), [Some(json!(["pii"]))]);
    }
}
