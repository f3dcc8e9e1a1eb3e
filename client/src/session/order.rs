//! The §3.1 pairing discipline of one session (rules 3–5) and §6.2's
//! block propagation: which `pre_*` emissions are open, so that a
//! `post_*` is accepted only after its own permitted `pre_*`.
//!
//! - A `post_tool_call` needs the `pre_tool_call` with the same
//!   `tool_call.id` to have completed and permitted the call; the post
//!   closes the pair. A second `pre_tool_call` for an id still open is
//!   refused (§12.2: one distinct id per call).
//! - A `post_model_call` needs an open, permitted `pre_model_call` with the
//!   same `request_id`; one without a `request_id` pairs with an unkeyed
//!   pre first, else with any open one. An incremental stream
//!   (§12.1) emits several posts for one pre: only the last closes it.
//! - `pre_model_call`, `pre_tool_call` and `output` need an open turn
//!   (rule 3: each `input` precedes the hooks that result from it). A
//!   turn is opened by an `input` that permitted it (a denied `input`
//!   begins none) and closed by its `output`, whatever the output's
//!   verdict: `output` is the last hook of a turn, so the next
//!   `pre_model_call` needs the next `input` (multi-turn: one
//!   `input → … → output` cycle per turn). A turn that ends without an
//!   `output` (blocked or failed at a model or tool point) is closed by
//!   [`Session::end_turn`](crate::Session::end_turn). Turns are counted,
//!   so concurrent turns of one session each hold their own.
//!
//! **Bounded.** A session holds at most [`MAX_OPEN_CALLS`] open
//! `pre_tool_call`s (in flight or permitted, waiting for their
//! `post_tool_call`) and as many open `pre_model_call` keys: a caller that
//! never emits its posts cannot grow the host without bound. Past the
//! bound the oldest open call is forgotten (counted in
//! `hookwire_host_open_calls_forgotten_total`, and logged at `WARN` the
//! 1st, 2nd, 4th, ... time a session forgets one). A forgotten call's
//! `post_*` is then refused out of order like a post without its pre —
//! the fail-closed side of §3.1 rules 4–5: its result is never
//! incorporated unevaluated (§6.1) — and a second `pre_tool_call` with
//! its id is no longer recognised as a repeat.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use hookwire::InterceptionPoint;
use serde_json::{Map, Value};

use crate::payload::ToolCall;

/// How many calls one session holds open at once, for each of the two
/// pairs (`pre_tool_call` ids, `pre_model_call` `request_id`s): a
/// session with more forgets its oldest open call (see the module docs).
/// As many as the gateway lets one conversation keep waiting for results.
pub const MAX_OPEN_CALLS: usize = 1024;

/// An open call a session forgot to stay within [`MAX_OPEN_CALLS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Forgotten {
    /// The `pre_*` point whose call was forgotten.
    pub(crate) point: InterceptionPoint,
    /// How many calls of that point the session has forgotten so far.
    pub(crate) total: u64,
}

/// Where a `pre_tool_call` stands.
#[derive(Debug, Clone, PartialEq)]
enum ToolPair {
    /// The pre is in flight: neither a post nor a second pre may come yet.
    Pending,
    /// The pre permitted the call: its post may come. With the call as
    /// governed (the verdict's target as its arguments) when the session
    /// remembers calls.
    Open(Option<ToolCall>),
}

/// How a `post_model_call` relates to its pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostModel {
    /// The one post of a buffered response, or the last of a stream:
    /// closes the pair.
    Closing,
    /// A non-final segment of an incremental stream: the pair stays open.
    Segment,
}

/// What a session's ledger is asked to do beyond the rules every session
/// keeps: set by [`SessionBuilder`](crate::SessionBuilder).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OrderOptions {
    /// Keep each permitted call whole, not only its id
    /// ([`SessionBuilder::remember_calls`](crate::SessionBuilder::remember_calls)).
    pub(crate) remember_calls: bool,
    /// The session has no turns: only tool calls are emitted, and their
    /// pairs are checked without a turn
    /// ([`SessionBuilder::tool_calls_only`](crate::SessionBuilder::tool_calls_only)).
    pub(crate) tool_calls_only: bool,
}

/// The open pairs of one session.
#[derive(Debug)]
pub(crate) struct Order {
    /// Turns a permitting `input` opened that no `output` (or
    /// [`Order::end_turn`]) has closed yet.
    open_turns: usize,
    /// Permitted `pre_model_call`s without their closing post, by
    /// `request_id`.
    models: Ledger<Option<String>, usize>,
    /// `pre_tool_call`s by `tool_call.id`.
    tools: Ledger<String, ToolPair>,
    /// Open calls forgotten past the bound, per pair.
    forgotten_models: u64,
    forgotten_tools: u64,
    /// Whether a permitted call is kept whole for
    /// [`Order::open_tool_call`], not only its id.
    remember_calls: bool,
    /// Whether the session has no turns (tool calls only).
    tool_calls_only: bool,
}

impl Order {
    /// The ledger of a session, holding at most [`MAX_OPEN_CALLS`] open
    /// calls per pair, with its `options`.
    pub(crate) fn new(options: OrderOptions) -> Self {
        Self {
            remember_calls: options.remember_calls,
            tool_calls_only: options.tool_calls_only,
            ..Self::bounded(MAX_OPEN_CALLS)
        }
    }

    /// A ledger holding at most `limit` open calls per pair, remembering
    /// ids only.
    fn bounded(limit: usize) -> Self {
        Self {
            open_turns: 0,
            models: Ledger::new(limit),
            tools: Ledger::new(limit),
            forgotten_models: 0,
            forgotten_tools: 0,
            remember_calls: false,
            tool_calls_only: false,
        }
    }

    /// Checks that `point` may be emitted now with `members` and books it.
    /// With `enforce` false the booking happens but nothing is refused
    /// (the raw [`Session::emit`](crate::Session::emit) path), except a
    /// point a tool-calls-only session never takes. In a tool-calls-only
    /// session a `pre_tool_call` needs no turn. Booking a `pre_tool_call`
    /// past the bound forgets the oldest open one, which is returned.
    pub(crate) fn admit(
        &mut self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<Option<Forgotten>, String> {
        use InterceptionPoint as P;
        if self.tool_calls_only
            && matches!(
                point,
                P::Input | P::PreModelCall | P::PostModelCall | P::Output
            )
        {
            return Err(format!(
                "{point} is not emitted in a session opened tool_calls_only: it has no turns and no model calls, only tool calls"
            ));
        }
        let needs_turn =
            matches!(point, P::PreModelCall | P::PreToolCall | P::Output) && !self.tool_calls_only;
        if enforce && needs_turn && self.open_turns == 0 {
            return Err(format!(
                "{point} has no open turn: an input that permitted a turn must come first, and each output closes its turn (§3.1 rule 3)"
            ));
        }
        let mut forgotten = None;
        match point {
            // The output is the turn's last hook: booked on admission, so
            // two outputs racing for one turn cannot both pass.
            P::Output => self.end_turn(),
            P::PreToolCall => {
                let id = tool_call_id(members);
                if enforce && self.tools.contains_key(&id) {
                    return Err(format!(
                        "tool call {id:?} already has a pre_tool_call without its post_tool_call; each call needs a distinct id (§3.1 rule 5, §12.2)"
                    ));
                }
                if self.tools.insert(id, ToolPair::Pending) {
                    self.forgotten_tools += 1;
                    forgotten = Some(Forgotten {
                        point,
                        total: self.forgotten_tools,
                    });
                }
            }
            P::PostToolCall => {
                let id = tool_call_id(members);
                match self.tools.get(&id) {
                    Some(ToolPair::Open(_)) => {
                        self.tools.remove(&id);
                    }
                    Some(ToolPair::Pending) if enforce => {
                        return Err(format!(
                            "the pre_tool_call of tool call {id:?} has not completed (§12.2)"
                        ));
                    }
                    None if enforce => {
                        return Err(format!(
                            "tool call {id:?} has no permitted pre_tool_call: a post_tool_call follows its own pre_tool_call, never a blocked one (§3.1 rule 5, §6.2){}",
                            forgotten_note(self.forgotten_tools)
                        ));
                    }
                    _ => {}
                }
            }
            P::PostModelCall => {
                let key = self.model_pair_of(request_id(members));
                let open = self.models.get(&key).copied().unwrap_or(0);
                if open == 0 {
                    if enforce {
                        let note = forgotten_note(self.forgotten_models);
                        return Err(match &key {
                            Some(id) => format!(
                                "request {id:?} has no permitted pre_model_call: a post_model_call follows its own pre_model_call, never a blocked one (§3.1 rule 4, §6.2){note}"
                            ),
                            None => format!(
                                "no permitted pre_model_call is waiting for this post_model_call (§3.1 rule 4, §6.2){note}"
                            ),
                        });
                    }
                } else if post_model == PostModel::Closing {
                    self.close_model(key);
                }
            }
            _ => {}
        }
        Ok(forgotten)
    }

    /// Books the verdict of an admitted emission: a permitted pre opens its
    /// pair, a blocked one leaves nothing to post; an input opens or
    /// closes the turn. A permitted `pre_tool_call` keeps its call with
    /// the arguments as governed (`target`, the verdict's target, when
    /// there is one). Opening a `pre_model_call` pair past the bound
    /// forgets the oldest open one, which is returned. A `pre_tool_call`
    /// forgotten while it was in flight stays forgotten.
    pub(crate) fn settled(
        &mut self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        proceeds: bool,
        target: Option<&Value>,
    ) -> Option<Forgotten> {
        match point {
            InterceptionPoint::Input if proceeds => self.open_turns += 1,
            InterceptionPoint::PreModelCall if proceeds => {
                let key = request_id(members);
                if let Some(open) = self.models.get_mut(&key) {
                    *open += 1;
                } else if self.models.insert(key, 1) {
                    self.forgotten_models += 1;
                    return Some(Forgotten {
                        point,
                        total: self.forgotten_models,
                    });
                }
            }
            InterceptionPoint::PreToolCall => {
                let id = tool_call_id(members);
                if !proceeds {
                    self.tools.remove(&id);
                } else if let Some(pair) = self.tools.get_mut(&id) {
                    *pair = ToolPair::Open(
                        self.remember_calls.then(|| permitted_call(members, target)),
                    );
                }
            }
            _ => {}
        }
        None
    }

    /// Closes one open turn (its output came, or it ended without one).
    pub(crate) fn end_turn(&mut self) {
        self.open_turns = self.open_turns.saturating_sub(1);
    }

    /// Whether a turn is open (an `input` permitted it and neither its
    /// `output` nor [`Order::end_turn`] closed it).
    pub(crate) fn turn_open(&self) -> bool {
        self.open_turns > 0
    }

    /// The call a permitted `pre_tool_call` with `id` opened, arguments as
    /// governed, while its `post_tool_call` may still come (`None` for an
    /// id never permitted, still in flight, posted, or forgotten).
    pub(crate) fn open_tool_call(&self, id: &str) -> Option<ToolCall> {
        match self.tools.get(&id.to_owned()) {
            Some(ToolPair::Open(call)) => call.clone(),
            _ => None,
        }
    }

    /// The open pair a `post_model_call` with `key` closes: its own
    /// `request_id`'s; without one, an unkeyed pre's, else any open pre's
    /// (the typed post carries no `request_id`).
    fn model_pair_of(&self, key: Option<String>) -> Option<String> {
        if key.is_some() || self.models.contains_key(&None) {
            return key;
        }
        self.models.oldest().cloned().flatten()
    }

    /// Closes the pair of a `pre_model_call` whose stream a segment's deny
    /// terminated (the deny was its last `post_model_call`).
    pub(crate) fn close_stream(&mut self, members: &Map<String, Value>) {
        let key = self.model_pair_of(request_id(members));
        self.close_model(key);
    }

    fn close_model(&mut self, key: Option<String>) {
        if let Some(n) = self.models.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.models.remove(&key);
            }
        }
    }
}

/// What a refused post adds when the session has forgotten open calls:
/// its pre may have been one of them.
fn forgotten_note(forgotten: u64) -> String {
    if forgotten == 0 {
        return String::new();
    }
    format!(
        "; or its pre was one of the {forgotten} open calls this session forgot past the bound of {MAX_OPEN_CALLS}"
    )
}

/// A table of open pairs holding at most `limit` keys: inserting a new
/// key into a full table forgets the oldest one. Each key's age is its
/// first insertion; `by_age` orders the keys by it.
#[derive(Debug)]
struct Ledger<K, V> {
    entries: HashMap<K, (V, u64)>,
    by_age: BTreeMap<u64, K>,
    next_age: u64,
    limit: usize,
}

impl<K: Hash + Eq + Clone, V> Ledger<K, V> {
    fn new(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            by_age: BTreeMap::new(),
            next_age: 0,
            limit: limit.max(1),
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.entries.get_mut(key).map(|(v, _)| v)
    }

    fn contains_key(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// The key inserted first among those held.
    fn oldest(&self) -> Option<&K> {
        self.by_age.values().next()
    }

    /// Sets `key` to `value` (a held key keeps its age). Returns whether
    /// the oldest key was forgotten to make room.
    fn insert(&mut self, key: K, value: V) -> bool {
        if let Some((held, _)) = self.entries.get_mut(&key) {
            *held = value;
            return false;
        }
        let forgot = self.entries.len() >= self.limit;
        if forgot && let Some((_, oldest)) = self.by_age.pop_first() {
            self.entries.remove(&oldest);
        }
        let age = self.next_age;
        self.next_age += 1;
        self.by_age.insert(age, key.clone());
        self.entries.insert(key, (value, age));
        forgot
    }

    fn remove(&mut self, key: &K) -> Option<V> {
        let (value, age) = self.entries.remove(key)?;
        self.by_age.remove(&age);
        Some(value)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The call a permitted `pre_tool_call` lets run: its members' call, the
/// arguments replaced by the verdict's target when there is one.
fn permitted_call(members: &Map<String, Value>, target: Option<&Value>) -> ToolCall {
    let call = members.get("tool_call");
    let text = |k: &str| {
        call.and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let args = target
        .or_else(|| call.and_then(|c| c.get("args")))
        .cloned()
        .unwrap_or(Value::Null);
    ToolCall::new(text("id"), text("name"), args)
}

fn tool_call_id(members: &Map<String, Value>) -> String {
    members
        .get("tool_call")
        .and_then(|c| c.get("id"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn request_id(members: &Map<String, Value>) -> Option<String> {
    members
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(id: &str) -> Map<String, Value> {
        let m = json!({"tool_call": {"id": id, "name": "bash", "args": {}}});
        m.as_object().unwrap().clone()
    }

    fn model(id: &str) -> Map<String, Value> {
        json!({"request_id": id}).as_object().unwrap().clone()
    }

    /// A turn open, then `pre_tool_call` `id` admitted and permitted.
    fn open_tool(order: &mut Order, id: &str) -> Option<Forgotten> {
        let forgotten = order
            .admit(
                InterceptionPoint::PreToolCall,
                &tool(id),
                PostModel::Closing,
                true,
            )
            .unwrap();
        assert_eq!(
            order.settled(InterceptionPoint::PreToolCall, &tool(id), true, None),
            None
        );
        forgotten
    }

    fn post_tool(order: &mut Order, id: &str) -> Result<Option<Forgotten>, String> {
        order.admit(
            InterceptionPoint::PostToolCall,
            &tool(id),
            PostModel::Closing,
            true,
        )
    }

    #[test]
    fn past_the_bound_the_oldest_open_tool_call_is_forgotten_and_its_post_refused() {
        let mut order = Order::bounded(4);
        order.open_turns = 1;
        for i in 0..4 {
            assert_eq!(open_tool(&mut order, &format!("c{i}")), None);
        }
        for (i, total) in (4..10).zip(1..) {
            let forgotten = open_tool(&mut order, &format!("c{i}"));
            assert_eq!(
                forgotten,
                Some(Forgotten {
                    point: InterceptionPoint::PreToolCall,
                    total
                })
            );
            assert_eq!(order.tools.len(), 4, "the table stays at the bound");
            assert_eq!(order.tools.by_age.len(), 4);
        }
        // c0..c5 were forgotten, oldest first; c6..c9 are held.
        let refused = post_tool(&mut order, "c5").unwrap_err();
        assert!(refused.contains("no permitted pre_tool_call"), "{refused}");
        assert!(
            refused.contains("one of the 6 open calls this session forgot past the bound of"),
            "{refused}"
        );
        assert_eq!(post_tool(&mut order, "c6"), Ok(None), "a held call pairs");
        assert_eq!(order.tools.len(), 3);
        // Room again: the next call forgets nothing.
        assert_eq!(open_tool(&mut order, "c10"), None);
        // A forgotten id is no longer known as a repeat.
        assert_eq!(
            open_tool(&mut order, "c0"),
            Some(Forgotten {
                point: InterceptionPoint::PreToolCall,
                total: 7,
            })
        );
        assert!(post_tool(&mut order, "c7").is_err(), "c7 was the oldest");
        for id in ["c8", "c9", "c10", "c0"] {
            assert_eq!(post_tool(&mut order, id), Ok(None), "{id}");
        }
        assert_eq!(order.tools.len(), 0);
        assert!(order.tools.by_age.is_empty(), "no age left behind");
    }

    #[test]
    fn a_call_forgotten_in_flight_stays_forgotten() {
        let mut order = Order::bounded(2);
        order.open_turns = 1;
        let pre = |order: &mut Order, id: &str| {
            order
                .admit(
                    InterceptionPoint::PreToolCall,
                    &tool(id),
                    PostModel::Closing,
                    true,
                )
                .unwrap()
        };
        assert_eq!(pre(&mut order, "a"), None);
        assert_eq!(pre(&mut order, "b"), None);
        assert!(pre(&mut order, "c").is_some(), "a, in flight, forgotten");
        order.settled(InterceptionPoint::PreToolCall, &tool("a"), true, None);
        assert_eq!(order.tools.len(), 2, "its verdict books nothing");
        assert!(post_tool(&mut order, "a").is_err());
    }

    #[test]
    fn open_model_calls_are_bounded_the_same_way() {
        let mut order = Order::bounded(3);
        order.open_turns = 1;
        let settle = |order: &mut Order, id: &str| {
            order.settled(InterceptionPoint::PreModelCall, &model(id), true, None)
        };
        for id in ["r0", "r1", "r2"] {
            assert_eq!(settle(&mut order, id), None);
        }
        assert_eq!(settle(&mut order, "r1"), None, "a held key counts up");
        let forgotten = settle(&mut order, "r3");
        assert_eq!(
            forgotten,
            Some(Forgotten {
                point: InterceptionPoint::PreModelCall,
                total: 1
            })
        );
        assert_eq!(order.models.len(), 3);
        let post = |order: &mut Order, id: &str| {
            order.admit(
                InterceptionPoint::PostModelCall,
                &model(id),
                PostModel::Closing,
                true,
            )
        };
        let refused = post(&mut order, "r0").unwrap_err();
        assert!(refused.contains("forgot past the bound"), "{refused}");
        // r1 was opened twice: two posts close it.
        assert_eq!(post(&mut order, "r1"), Ok(None));
        assert_eq!(post(&mut order, "r1"), Ok(None));
        assert!(post(&mut order, "r1").is_err());
    }
}
