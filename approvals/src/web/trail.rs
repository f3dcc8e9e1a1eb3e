//! What the page remembers of what hosts submitted: per session, the
//! recent requests the service has seen (point, tool, reason, when, how
//! each ended), so that a reviewer sees what led to the one in front of
//! them; when each pending request arrived; and the arguments of recent
//! requests, for the history's edit diff. Only what hosts sent, and only
//! on the instance that saw it; shown to an approver only where its rules
//! cover the entry. Bounded: [`MAX_TRAIL_SESSIONS`] sessions of
//! [`MAX_TRAIL_ENTRIES`] entries, [`MAX_ORIGINALS`] arguments.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use hookwire::approval::ApprovalOutcome;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::auth::{ApproverRules, RuleFacts};
use crate::events::{PendingApproval, QueueEvent};
use crate::queue::ApprovalQueue;

/// Most sessions remembered; the one least recently added to goes first.
pub const MAX_TRAIL_SESSIONS: usize = 1024;
/// Most entries remembered per session.
pub const MAX_TRAIL_ENTRIES: usize = 20;
/// Most requests whose arguments are kept for the history's edit diff.
pub const MAX_ORIGINALS: usize = 1024;

/// One request of a session's trail, as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrailEntry {
    /// The queue's id.
    pub request_id: String,
    /// When the service saw it, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// `interception_point`.
    pub point: String,
    /// `tool_call.name`, at the tool points.
    pub tool_name: Option<String>,
    /// The liftable deny's reason.
    pub reason: Option<String>,
    /// `pending`, `approved`, `rejected`, `unresolved`, or why it closed.
    pub outcome: String,
    #[serde(skip)]
    facts: RuleFacts,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<String, VecDeque<TrailEntry>>,
    session_order: VecDeque<String>,
    /// Pending request id -> its session, while pending.
    open: HashMap<String, String>,
    /// Request id -> (arguments as shown, rules facts), newest last.
    originals: HashMap<String, (Value, RuleFacts)>,
    original_order: VecDeque<String>,
}

/// The trails, shared by the page's handlers and the task feeding them.
#[derive(Debug, Clone, Default)]
pub struct Trails {
    state: Arc<Mutex<State>>,
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Trails {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Feeds the trails from `queue` until `closing` turns.
    pub(super) fn follow(&self, queue: &ApprovalQueue, mut closing: watch::Receiver<bool>) {
        let (sub, internal) = queue.subscribe_internal();
        for p in &sub.pending {
            self.added(p);
        }
        let trails = self.clone();
        let mut events = sub.events;
        tokio::spawn(async move {
            let _internal = internal;
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    _ = closing.wait_for(|c| *c) => return,
                };
                match event {
                    Ok(QueueEvent::Added(p)) => trails.added(&p),
                    Ok(QueueEvent::Resolved { id, outcome, .. }) => {
                        let name = match outcome {
                            Some(ApprovalOutcome::Approve) => "approved",
                            Some(ApprovalOutcome::Reject) => "rejected",
                            _ => "unresolved",
                        };
                        trails.ended(&id, name);
                    }
                    Ok(QueueEvent::Closed { id, reason }) => trails.ended(&id, reason.as_str()),
                    Ok(QueueEvent::Seen { .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Records a new request.
    pub(super) fn added(&self, p: &PendingApproval) {
        let mut s = self.state();
        let session = p.session_id().to_owned();
        if s.open.contains_key(&p.id) {
            return;
        }
        let facts = RuleFacts::of(p);
        let entry = TrailEntry {
            request_id: p.id.clone(),
            at_ms: now_ms(),
            point: p.request.interception_point.to_string(),
            tool_name: p.tool_name().map(str::to_owned),
            reason: p.request.verdict.reason.clone(),
            outcome: "pending".into(),
            facts: facts.clone(),
        };
        if !s.sessions.contains_key(&session) {
            if s.sessions.len() >= MAX_TRAIL_SESSIONS
                && let Some(oldest) = s.session_order.pop_front()
            {
                s.sessions.remove(&oldest);
            }
            s.session_order.push_back(session.clone());
        }
        let trail = s.sessions.entry(session.clone()).or_default();
        if trail.len() >= MAX_TRAIL_ENTRIES {
            trail.pop_front();
        }
        trail.push_back(entry);
        s.open.insert(p.id.clone(), session);
        if let Some(target) = p.target() {
            if s.originals.len() >= MAX_ORIGINALS
                && let Some(oldest) = s.original_order.pop_front()
            {
                s.originals.remove(&oldest);
            }
            s.original_order.push_back(p.id.clone());
            s.originals.insert(p.id.clone(), (target.clone(), facts));
        }
    }

    /// Records how request `id` ended.
    pub(super) fn ended(&self, id: &str, outcome: &str) {
        let mut s = self.state();
        let Some(session) = s.open.remove(id) else {
            return;
        };
        if let Some(e) = s
            .sessions
            .get_mut(&session)
            .and_then(|t| t.iter_mut().find(|e| e.request_id == id))
        {
            e.outcome = outcome.to_owned();
        }
    }

    /// When request `id` arrived, while the trail remembers it.
    pub(super) fn submitted_ms(&self, session: &str, id: &str) -> Option<u64> {
        let s = self.state();
        s.sessions
            .get(session)?
            .iter()
            .find(|e| e.request_id == id)
            .map(|e| e.at_ms)
    }

    /// The other requests of `session` that `rules` cover, newest first.
    pub(super) fn of_session(
        &self,
        session: &str,
        except: &str,
        rules: &ApproverRules,
    ) -> Vec<TrailEntry> {
        let s = self.state();
        s.sessions.get(session).map_or_else(Vec::new, |t| {
            t.iter()
                .rev()
                .filter(|e| e.request_id != except && rules.check_facts(&e.facts).is_ok())
                .cloned()
                .collect()
        })
    }

    /// The arguments request `id` was submitted with, when remembered and
    /// covered by `rules`.
    pub(super) fn original(&self, id: &str, rules: &ApproverRules) -> Option<Value> {
        let s = self.state();
        s.originals
            .get(id)
            .filter(|(_, facts)| rules.check_facts(facts).is_ok())
            .map(|(v, _)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::contract::request;

    #[tokio::test]
    async fn a_session_trail_is_bounded_filtered_by_rules_and_records_outcomes() {
        let queue = ApprovalQueue::new();
        let (host, _deliveries) = queue.connect_host("h");
        let trails = Trails::default();
        let mut ids = Vec::new();
        for n in 0..(MAX_TRAIL_ENTRIES + 3) {
            // `request(n)` puts every request in session `s-n`; one session here.
            let mut r = request(1);
            r.context = hookwire::AgentContext::from_json({
                let mut v = r.context.to_json();
                v["tool_call"]["name"] = serde_json::json!(if n % 2 == 0 {
                    "wire_transfer"
                } else {
                    "delete_repo"
                });
                v
            })
            .unwrap();
            let id = host
                .submit(format!("r{n}"), r, Duration::from_secs(60))
                .unwrap();
            trails.added(&queue.get(&id).unwrap());
            ids.push(id);
        }
        trails.ended(&ids[MAX_TRAIL_ENTRIES + 1], "expired");
        let session = queue.get(&ids[0]).unwrap().session_id().to_owned();
        let all = trails.of_session(
            &session,
            &ids[MAX_TRAIL_ENTRIES + 2],
            &ApproverRules::default(),
        );
        assert_eq!(
            all.len(),
            MAX_TRAIL_ENTRIES - 1,
            "bounded, without the request itself"
        );
        assert_eq!(all[0].request_id, ids[MAX_TRAIL_ENTRIES + 1]);
        assert_eq!(all[0].outcome, "expired");
        let transfers = ApproverRules {
            tools: vec!["wire_transfer".into()],
            ..ApproverRules::default()
        };
        let shown = trails.of_session(&session, "", &transfers);
        assert!(
            shown
                .iter()
                .all(|e| e.tool_name.as_deref() == Some("wire_transfer"))
        );
        assert!(
            trails.original(&ids[1], &transfers).is_none(),
            "outside the rules"
        );
        assert!(trails.original(&ids[2], &transfers).is_some());
    }
}
