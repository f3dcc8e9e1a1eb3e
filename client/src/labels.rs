//! Label flow (§5.4): `result_labels` persisted with the data they label,
//! and resurfaced as `source_labels` on the later hooks that derive from it.
//!
//! Host-side bookkeeping, not part of any one loop: the reference agent
//! loop (`hookwire-agent`) and the gateway each keep a [`LabelLedger`].
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
use crate::session::OutputDecision;

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

/// How many labelled results one ledger keeps with their data; past it
/// the oldest entry's data is let go (its labels stay in the union, so
/// nothing labelled is ever re-presented unlabelled).
pub const MAX_LABELLED_RESULTS: usize = 1024;
/// How many distinct labels one ledger carries forward.
pub const MAX_LABELS: usize = 256;

/// One session's label ledger: the agent loop keeps one per session, and
/// so does anything else that maps a conversation onto the points (the
/// gateway keeps one per conversation), so labels flow the same way
/// everywhere. Bounded by [`MAX_LABELLED_RESULTS`] and [`MAX_LABELS`].
#[derive(Debug, Default)]
pub struct LabelLedger {
    entries: Vec<ResultLabels>,
    union: BTreeSet<String>,
}

impl LabelLedger {
    /// Persists the labels of a permitted emission with the data it let
    /// in (`subject` names it: a tool call id, a model id, `output`).
    /// Nothing is kept for an action that did not proceed.
    pub fn persist(&mut self, e: &Emission, subject: &str, data: &Value) {
        if !e.proceeds() {
            return;
        }
        self.keep(
            e.record().interception_point,
            subject,
            data,
            &e.verdict().result_labels,
        );
    }

    fn keep(&mut self, point: InterceptionPoint, subject: &str, data: &Value, labels: &[String]) {
        if labels.is_empty() {
            return;
        }
        for label in labels {
            if self.union.contains(label) {
                continue;
            }
            if self.union.len() >= MAX_LABELS {
                tracing::warn!(
                    bound = MAX_LABELS,
                    "label ledger full: further labels dropped"
                );
                break;
            }
            self.union.insert(label.clone());
        }
        if self.entries.len() >= MAX_LABELLED_RESULTS {
            self.entries.remove(0);
        }
        self.entries.push(ResultLabels {
            point,
            subject: subject.to_owned(),
            data: data.clone(),
            labels: labels.to_vec(),
        });
    }

    /// Persists the labels of a released answer (an `output` whose
    /// verdict permitted; `data` is what was released), under `output`.
    pub fn persist_output(&mut self, decision: &OutputDecision, data: &Value) {
        if !decision.proceeds() {
            return;
        }
        self.keep(
            decision.record().interception_point,
            "output",
            data,
            &decision.verdict().result_labels,
        );
    }

    /// The labelled results kept, oldest first.
    pub fn entries(&self) -> &[ResultLabels] {
        &self.entries
    }

    /// The union of every label persisted so far, sorted.
    pub fn labels(&self) -> Vec<String> {
        self.union.iter().cloned().collect()
    }

    /// `members` with `extensions.hookwire.source_labels` added, when any
    /// label was persisted so far; other members of `extensions` and of
    /// its `hookwire` object are kept.
    pub fn resurface(&self, mut members: Map<String, Value>) -> Map<String, Value> {
        if self.union.is_empty() {
            return members;
        }
        let labels = json!(self.union.iter().collect::<Vec<_>>());
        let ext = members
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if !ext.is_object() {
            *ext = Value::Object(Map::new());
        }
        if let Some(ext) = ext.as_object_mut() {
            let ns = ext
                .entry("hookwire")
                .or_insert_with(|| Value::Object(Map::new()));
            if !ns.is_object() {
                *ns = Value::Object(Map::new());
            }
            if let Some(ns) = ns.as_object_mut() {
                ns.insert("source_labels".into(), labels);
            }
        }
        members
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn resurfacing_keeps_the_other_extensions_and_the_ledger_is_bounded() {
        let labeler = interceptor_fn(|ctx: AgentContext| {
            let label = ctx
                .get("input")
                .and_then(|i| i["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            async move { Ok::<_, BoxError>(Verdict::allow().with_label(label)) }
        });
        let host = Host::builder("agent", "hookwire")
            .interceptor("labeler", labeler)
            .build()
            .unwrap();
        let session = host.session("b").unwrap();
        session.start(Vec::<String>::new()).await.unwrap();
        let mut ledger = LabelLedger::default();
        let mut members = Map::new();
        members.insert(
            "extensions".into(),
            json!({"hookwire": {"callback": 1}, "acme": 2}),
        );
        assert_eq!(ledger.resurface(members.clone()), members, "nothing yet");
        for i in 0..MAX_LABELS + 3 {
            let e = session
                .input(json!(format!("l{i}")), InputRole::User)
                .await
                .unwrap();
            ledger.persist(&e, "input", &json!(i));
            session.end_turn();
        }
        assert_eq!(ledger.labels().len(), MAX_LABELS);
        assert_eq!(ledger.entries().len(), MAX_LABELS + 3);
        let out = ledger.resurface(members);
        assert_eq!(out["extensions"]["acme"], 2);
        assert_eq!(out["extensions"]["hookwire"]["callback"], 1);
        assert_eq!(
            out["extensions"]["hookwire"]["source_labels"]
                .as_array()
                .unwrap()
                .len(),
            MAX_LABELS
        );
    }

    use hookwire::{AgentContext, Verdict};

    use crate::{BoxError, Host, InputRole, interceptor_fn};

    use super::*;
}
