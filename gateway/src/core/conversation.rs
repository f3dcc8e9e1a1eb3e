//! The gateway's conversations: one hookwire [`Session`] per conversation,
//! keyed by the `x-hookwire-session` header or derived from the request
//! (module `session_key`), bound to the client credential that opened
//! it, and bounded in number. The session itself holds the lifecycle,
//! the turn and the open tool calls (the gateway asks it); a
//! conversation adds only what a session cannot know: what the chain
//! decided for each entry of the client's transcript (module `memo`),
//! and the labels its results carry. The table is the edges' one bounded
//! table (`hookwire_edge::sessions`, displacing when full): a
//! conversation idle for longer than the idle timeout is removed and its
//! session shut down (`agent_shutdown`, `completed`); so is the least
//! recently used conversation no request holds when a new one would pass
//! its client's quota or the table's bound (nothing is lost: the gateway
//! trusts no history from memory, so an evicted conversation's next
//! request is governed whole).
//!
//! For an API whose requests continue an earlier answer by its id
//! (Responses `previous_response_id`), the table also remembers which
//! conversation each returned answer id belongs to, at most
//! [`MAX_RESPONSE_IDS`] of them (the oldest forgotten first): that id,
//! the session key, nothing of the answer itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire_client::{Host, LabelLedger, Session, ShutdownReason};
use hookwire_edge::sessions::{self, Bounds, EdgeSession, Ending, InUse, WhenFull};
use hookwire_hooks::SharedSession;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::memo::Memo;
use crate::error::Error;

/// How many answer ids the gateway remembers for requests that continue
/// from one.
pub const MAX_RESPONSE_IDS: usize = 65_536;

/// What the gateway remembers of one conversation between its requests,
/// beyond what its session holds.
#[derive(Debug, Default)]
pub(crate) struct ConvState {
    /// What the chain decided for each entry it governed, by address
    /// (bounded; module `memo`).
    pub(crate) memo: Memo,
    /// The `result_labels` of the conversation's permitted results (§5.4),
    /// re-presented on every later model, tool and output point.
    pub(crate) labels: LabelLedger,
    /// The calls the chain removed from the answer being settled, with the
    /// notice the model sees for each (`(call_id, text)`): remembered with
    /// the answer's id for an API whose upstream stores the conversation.
    pub(crate) removed_calls: Vec<(String, String)>,
}

/// One conversation.
pub(crate) struct Conversation {
    /// Its hookwire session: its own, or the one the hooks of the same
    /// process lent (`shared`).
    pub(crate) session: Arc<Session>,
    /// The agent session whose hooks own `session`, when the
    /// conversation is an agent's model traffic (`crate::hooks`): the
    /// hooks govern its prompts, tool calls and answers and its
    /// lifecycle, the gateway its model calls.
    pub(crate) shared: Option<SharedSession>,
    /// Held by the request that governs it (one at a time).
    pub(crate) state: Arc<AsyncMutex<ConvState>>,
    /// SHA-256 of the client's credential (of nothing when none).
    pub(crate) owner: Owner,
    /// Its key in the table.
    key: String,
}

impl InUse for Conversation {
    /// A request holds its state.
    fn in_use(&self) -> bool {
        self.state.try_lock().is_err()
    }
}

impl EdgeSession for Conversation {
    /// Idle or displaced: `completed`; the gateway stopping: `cancelled`.
    async fn end(self: Arc<Self>, why: Ending) {
        let reason = match why {
            Ending::Shutdown => ShutdownReason::Cancelled,
            Ending::Idle | Ending::Displaced => ShutdownReason::Completed,
        };
        self.close(reason).await;
    }
}

impl Conversation {
    /// Shuts the session down once it waits for no request (no-op when it
    /// never started or is already closed; the table no longer holds it,
    /// so a request that still does finds it ended).
    pub(crate) async fn close(&self, reason: ShutdownReason) {
        let _state = self.state.lock().await;
        if self.shared.is_some() {
            // The hooks end the agent session, not the gateway.
            return;
        }
        if !self.session.is_started() || self.session.is_closed() {
            return;
        }
        if let Err(e) = self.session.shutdown(reason).await {
            tracing::warn!(session = self.session.id(), error = %e, "agent_shutdown failed");
        }
    }
}

/// The answer ids remembered, in the order they were returned: for each,
/// its conversation, the credential it was returned to, and the calls
/// the chain removed from it.
#[derive(Debug, Default)]
struct ResponseIds {
    by_id: HashMap<String, Answered>,
    order: VecDeque<String>,
}

/// One remembered answer id.
#[derive(Debug)]
struct Answered {
    session: String,
    owner: Owner,
    removed: Vec<(String, String)>,
}

/// Who owns a conversation or an answer (`crate::principal`).
pub(crate) use crate::principal::Owner;

/// A conversation entered by a request: its state is held until the
/// request ends.
pub(crate) struct Entered {
    /// The conversation.
    pub(crate) conv: Arc<Conversation>,
    /// Opened by this request.
    pub(crate) opened: bool,
    /// Its state, held by this request.
    pub(crate) state: OwnedMutexGuard<ConvState>,
}

/// The conversation table: at most `max` conversations, at most
/// `per_owner` of them opened with one client credential, so that one
/// caller cannot lock the others out.
pub(crate) struct Sessions {
    table: Arc<sessions::Sessions<Conversation, Owner>>,
    responses: Mutex<ResponseIds>,
}

impl Sessions {
    /// A table of at most `max` conversations, `per_owner` of them per
    /// client credential, each reaped after `idle`.
    pub(crate) fn new(max: usize, per_owner: usize, idle: Duration) -> Self {
        Self {
            table: Arc::new(sessions::Sessions::new(
                Bounds::new(max, per_owner, WhenFull::Displace),
                idle,
            )),
            responses: Mutex::default(),
        }
    }

    /// The table, for its reaper (`Gateway::serve`).
    pub(crate) fn table(&self) -> &Arc<sessions::Sessions<Conversation, Owner>> {
        &self.table
    }

    fn responses(&self) -> std::sync::MutexGuard<'_, ResponseIds> {
        self.responses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many conversations are open.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The conversation `id`, opened when new, entered: its state held by
    /// the caller (waiting for a request that holds it). A conversation
    /// opened with another client credential is refused: a session id is
    /// not a capability. A new one past the credential's quota (or the
    /// table's bound) takes the place of that credential's (the table's)
    /// least recently used conversation no request holds, which is shut
    /// down first (`agent_shutdown`, `completed`, as an idle one); it is
    /// refused when every one is in a request. A new conversation's state
    /// is taken under the table's lock: from then on no other request can
    /// displace it before this one governs it. With `shared`, the
    /// conversation is the agent session's the hooks lent (`id` is its
    /// key): one of the gateway's own under that id is refused, and one
    /// lent by an agent session since ended is replaced.
    pub(crate) async fn get_or_open(
        &self,
        host: &Host,
        id: &str,
        owner: Owner,
        shared: Option<SharedSession>,
    ) -> Result<Entered, Error> {
        {
            let mut t = self.table.lock();
            let stale = t.peek(id).is_some_and(|c| {
                shared
                    .as_ref()
                    .is_some_and(|s| c.shared.is_some() && !Arc::ptr_eq(&c.session, s.session()))
            });
            if stale {
                t.remove(id);
            }
        }
        let is_shared = shared.is_some();
        let open = || -> Result<Conversation, Error> {
            let session = match &shared {
                Some(s) => s.session().clone(),
                None => Arc::new(host.session_builder(id).remember_calls().open()?),
            };
            Ok(Conversation {
                session,
                shared,
                state: Arc::default(),
                owner,
                key: id.to_owned(),
            })
        };
        let entered = self
            .table
            .enter(id, owner, open, |c| c.state.clone().try_lock_owned().ok())
            .await?;
        if entered.session.shared.is_some() != is_shared {
            return Err(Error::BadRequest(format!(
                "the session {id} is an agent session's and another of the gateway's at once"
            )));
        }
        let state = match entered.held {
            Some(held) => held,
            None => entered.session.state.clone().lock_owned().await,
        };
        Ok(Entered {
            conv: entered.session,
            opened: entered.opened,
            state,
        })
    }

    /// Whether the table holds a conversation under `id` (it was not
    /// ended, reaped, or opened on another instance).
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.table.lock().contains(id)
    }

    /// Whether the table still holds `conv` under `id` (it was not ended
    /// or reaped while a request waited for it).
    pub(crate) fn is_current(&self, id: &str, conv: &Arc<Conversation>) -> bool {
        self.table
            .lock()
            .peek(id)
            .is_some_and(|c| Arc::ptr_eq(c, conv))
    }

    /// Marks the conversation active (after a request finished).
    pub(crate) fn touch(&self, conv: &Conversation) {
        self.table.lock().touch(&conv.key, Instant::now());
    }

    /// Removes conversation `id` when `owner` opened it.
    pub(crate) fn remove(&self, id: &str, owner: Owner) -> Option<Arc<Conversation>> {
        self.table.lock().remove_owned(id, &owner).ok().flatten()
    }

    /// Removes `conv` from the table when it still holds it under `id`
    /// (closed while a request held it, or opened by a request that
    /// failed: a failing request holds no slot); the caller closes it.
    pub(crate) fn forget(&self, id: &str, conv: &Arc<Conversation>) -> bool {
        self.table.lock().remove_if_same(id, conv)
    }

    /// Remembers that answer `response_id` was returned in conversation
    /// `session` to `owner`, with `removed` calls taken out of it
    /// (bounded: the oldest id is forgotten first).
    pub(crate) fn remember_response(
        &self,
        response_id: String,
        session: &str,
        owner: Owner,
        removed: Vec<(String, String)>,
    ) {
        let mut r = self.responses();
        if r.by_id.contains_key(&response_id) {
            return;
        }
        if r.order.len() >= MAX_RESPONSE_IDS
            && let Some(oldest) = r.order.pop_front()
        {
            r.by_id.remove(&oldest);
        }
        r.order.push_back(response_id.clone());
        r.by_id.insert(
            response_id,
            Answered {
                session: session.to_owned(),
                owner,
                removed,
            },
        );
    }

    /// The conversation answer `response_id` was returned in, if the
    /// gateway still remembers it; refused when it was returned to
    /// another client credential: an answer id is not a capability.
    pub(crate) fn continued(
        &self,
        response_id: &str,
        owner: &Owner,
    ) -> Result<Option<String>, Error> {
        match self.responses().by_id.get(response_id) {
            Some(a) if &a.owner != owner => Err(Error::Denied {
                point: hookwire::InterceptionPoint::AgentStartup,
                reason: "hookwire:response_owned_by_another_client".into(),
                message: None,
            }),
            Some(a) => Ok(Some(a.session.clone())),
            None => Ok(None),
        }
    }

    /// The calls the chain removed from answer `response_id` (empty when
    /// none, or when the gateway no longer remembers it).
    pub(crate) fn removed_calls(&self, response_id: &str) -> Vec<(String, String)> {
        self.responses()
            .by_id
            .get(response_id)
            .map(|a| a.removed.clone())
            .unwrap_or_default()
    }

    /// Shuts down every conversation idle past the timeout and not in
    /// use (`agent_shutdown`, `completed`); returns how many.
    pub(crate) async fn reap_idle(&self) -> usize {
        self.table.reap_idle().await
    }

    /// Shuts down every conversation (`agent_shutdown`, `cancelled`).
    pub(crate) async fn close_all(&self) {
        self.table.shutdown_all().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: Owner = [7; 32];

    #[test]
    fn answer_ids_are_remembered_bounded_oldest_first() {
        let s = Sessions::new(1, 1, Duration::from_secs(1));
        for i in 0..MAX_RESPONSE_IDS + 2 {
            s.remember_response(format!("resp_{i}"), &format!("s{}", i % 3), O, Vec::new());
        }
        assert_eq!(
            s.continued("resp_0", &O).unwrap(),
            None,
            "the oldest forgotten"
        );
        assert_eq!(s.continued("resp_1", &O).unwrap(), None);
        assert_eq!(s.continued("resp_2", &O).unwrap().as_deref(), Some("s2"));
        assert_eq!(s.responses().by_id.len(), MAX_RESPONSE_IDS);
        assert_eq!(s.responses().order.len(), MAX_RESPONSE_IDS);
    }

    #[test]
    fn the_calls_removed_from_an_answer_are_remembered_with_its_id() {
        let s = Sessions::new(1, 1, Duration::from_secs(1));
        let removed = vec![("call_rm".to_owned(), "{\"error\":\"blocked\"}".to_owned())];
        s.remember_response("resp_a".into(), "s", O, removed.clone());
        s.remember_response("resp_b".into(), "s", O, Vec::new());
        assert_eq!(s.removed_calls("resp_a"), removed);
        assert!(s.removed_calls("resp_b").is_empty());
        assert!(s.removed_calls("resp_unknown").is_empty());
        // A second answer under a remembered id does not replace the first.
        s.remember_response("resp_a".into(), "t", O, Vec::new());
        assert_eq!(s.removed_calls("resp_a"), removed);
        assert_eq!(s.continued("resp_a", &O).unwrap().as_deref(), Some("s"));
        // Another credential may not continue it.
        assert!(matches!(
            s.continued("resp_a", &[9; 32]),
            Err(Error::Denied { reason, .. }) if reason == "hookwire:response_owned_by_another_client"
        ));
    }

    fn enter(s: &Sessions, host: &Host, id: &str, owner: Owner) -> Result<Entered, Error> {
        // Every conversation here opens at once: no request waits.
        futures_lite(s.get_or_open(host, id, owner, None))
    }

    /// Polls a future that never waits (no request holds what it enters).
    fn futures_lite<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn ended(c: &Conversation) -> bool {
        c.session.is_closed() || !c.session.is_started()
    }

    #[test]
    fn a_conversation_is_held_from_the_moment_a_request_enters_it() {
        let host = Host::builder("gateway-test", "hookwire").build().unwrap();
        let s = Sessions::new(4, 1, Duration::from_secs(60));
        // The request that opens a1 holds it before the table's lock is
        // let go, so another new conversation past the quota cannot take
        // its place while that request is on its way to governing it.
        let a1 = enter(&s, &host, "a1", O).unwrap();
        assert!(a1.opened);
        assert!(matches!(enter(&s, &host, "a2", O), Err(Error::Quota(1))));
        // When the request ends, a1 can be displaced.
        let a1_conv = a1.conv.clone();
        drop(a1);
        let a2 = enter(&s, &host, "a2", O).unwrap();
        assert!(a2.opened && !s.holds("a1") && ended(&a1_conv));
        // Another credential may not enter a2.
        drop(a2);
        assert!(matches!(
            enter(&s, &host, "a2", [9; 32]),
            Err(Error::Denied { reason, .. }) if reason == "hookwire:session_owned_by_another_client"
        ));
    }

    #[test]
    fn past_its_quota_a_credential_displaces_its_least_recent_idle_conversation() {
        let host = Host::builder("gateway-test", "hookwire").build().unwrap();
        let s = Sessions::new(4, 2, Duration::from_secs(60));
        // Each request here ends at once: its hold on the state is let go.
        let open = |id: &str, owner: Owner| enter(&s, &host, id, owner).map(|e| e.conv);
        let a1 = open("a1", O).unwrap();
        let again = enter(&s, &host, "a1", O).unwrap();
        assert!(!again.opened && Arc::ptr_eq(&a1, &again.conv));
        drop(again);
        std::thread::sleep(Duration::from_millis(5));
        open("a2", O).unwrap();
        // a1 is the least recently used: a3 takes its place.
        open("a3", O).unwrap();
        assert!(!s.holds("a1") && s.holds("a2") && s.holds("a3"));
        // Only the credential's own: another's conversations stay.
        open("b1", [8; 32]).unwrap();
        assert_eq!(s.len(), 3);
        // A conversation a request holds is never displaced; with every
        // one held, the quota refuses.
        let g2 = enter(&s, &host, "a2", O).unwrap();
        let g3 = enter(&s, &host, "a3", O).unwrap();
        assert!(matches!(open("a4", O), Err(Error::Quota(2))));
        assert!(s.holds("a2") && s.holds("a3"));
        drop((g2, g3));
    }

    #[test]
    fn a_full_table_displaces_its_least_recent_idle_conversation_and_a_forgotten_one_frees_a_slot()
    {
        let host = Host::builder("gateway-test", "hookwire").build().unwrap();
        let s = Sessions::new(3, 2, Duration::from_secs(60));
        let open = |id: &str, owner: Owner| enter(&s, &host, id, owner).map(|e| e.conv);
        let a1 = open("a1", O).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        open("b1", [8; 32]).unwrap();
        let c1 = open("c1", [9; 32]).unwrap();
        assert!(s.forget("c1", &c1));
        open("c2", [9; 32]).unwrap();
        assert!(s.holds("a1"), "a slot was free");
        open("d1", [10; 32]).unwrap();
        assert!(!s.holds("a1") && ended(&a1));
        assert_eq!(s.len(), 3);
        let held: Vec<Entered> = [("b1", [8; 32]), ("c2", [9; 32]), ("d1", [10; 32])]
            .into_iter()
            .map(|(id, o)| enter(&s, &host, id, o).unwrap())
            .collect();
        assert!(matches!(open("e1", [11; 32]), Err(Error::Overloaded(3))));
        drop(held);
        futures_lite(s.close_all());
        assert_eq!(s.len(), 0);
    }
}
