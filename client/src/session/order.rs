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

use std::collections::HashMap;

use hookwire::InterceptionPoint;
use serde_json::{Map, Value};

/// Where a `pre_tool_call` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolPair {
    /// The pre is in flight: neither a post nor a second pre may come yet.
    Pending,
    /// The pre permitted the call: its post may come.
    Open,
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

/// The open pairs of one session.
#[derive(Debug, Default)]
pub(crate) struct Order {
    /// Turns a permitting `input` opened that no `output` (or
    /// [`Order::end_turn`]) has closed yet.
    open_turns: usize,
    /// Permitted `pre_model_call`s without their closing post, by
    /// `request_id`.
    models: HashMap<Option<String>, usize>,
    /// `pre_tool_call`s by `tool_call.id`.
    tools: HashMap<String, ToolPair>,
}

impl Order {
    /// Checks that `point` may be emitted now with `members` and books it.
    /// With `enforce` false the booking happens but nothing is refused
    /// (the raw [`Session::emit`](crate::Session::emit) path).
    pub(crate) fn admit(
        &mut self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<(), String> {
        use InterceptionPoint as P;
        let needs_turn = matches!(point, P::PreModelCall | P::PreToolCall | P::Output);
        if enforce && needs_turn && self.open_turns == 0 {
            return Err(format!(
                "{point} has no open turn: an input that permitted a turn must come first, and each output closes its turn (§3.1 rule 3)"
            ));
        }
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
                self.tools.insert(id, ToolPair::Pending);
            }
            P::PostToolCall => {
                let id = tool_call_id(members);
                match self.tools.get(&id) {
                    Some(ToolPair::Open) => {
                        self.tools.remove(&id);
                    }
                    Some(ToolPair::Pending) if enforce => {
                        return Err(format!(
                            "the pre_tool_call of tool call {id:?} has not completed (§12.2)"
                        ));
                    }
                    None if enforce => {
                        return Err(format!(
                            "tool call {id:?} has no permitted pre_tool_call: a post_tool_call follows its own pre_tool_call, never a blocked one (§3.1 rule 5, §6.2)"
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
                        return Err(match &key {
                            Some(id) => format!(
                                "request {id:?} has no permitted pre_model_call: a post_model_call follows its own pre_model_call, never a blocked one (§3.1 rule 4, §6.2)"
                            ),
                            None => "no permitted pre_model_call is waiting for this post_model_call (§3.1 rule 4, §6.2)".to_owned(),
                        });
                    }
                } else if post_model == PostModel::Closing {
                    self.close_model(key);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Books the verdict of an admitted emission: a permitted pre opens its
    /// pair, a blocked one leaves nothing to post; an input opens or
    /// closes the turn.
    pub(crate) fn settled(
        &mut self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        proceeds: bool,
    ) {
        match point {
            InterceptionPoint::Input if proceeds => self.open_turns += 1,
            InterceptionPoint::PreModelCall if proceeds => {
                *self.models.entry(request_id(members)).or_default() += 1;
            }
            InterceptionPoint::PreToolCall => {
                let id = tool_call_id(members);
                if proceeds {
                    self.tools.insert(id, ToolPair::Open);
                } else {
                    self.tools.remove(&id);
                }
            }
            _ => {}
        }
    }

    /// Closes one open turn (its output came, or it ended without one).
    pub(crate) fn end_turn(&mut self) {
        self.open_turns = self.open_turns.saturating_sub(1);
    }

    /// The open pair a `post_model_call` with `key` closes: its own
    /// `request_id`'s; without one, an unkeyed pre's, else any open pre's
    /// (the typed post carries no `request_id`).
    fn model_pair_of(&self, key: Option<String>) -> Option<String> {
        if key.is_some() || self.models.contains_key(&None) {
            return key;
        }
        self.models.keys().next().cloned().flatten()
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
