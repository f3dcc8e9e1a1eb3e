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
//! - With strict turns, `pre_model_call`, `pre_tool_call` and `output`
//!   also need an `input` that permitted its turn (rule 3).

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
    /// Whether rule 3 is enforced (the session was opened with strict
    /// turns).
    strict_turns: bool,
    /// Whether the last `input` permitted its turn.
    turn_open: bool,
    /// Permitted `pre_model_call`s without their closing post, by
    /// `request_id`.
    models: HashMap<Option<String>, usize>,
    /// `pre_tool_call`s by `tool_call.id`.
    tools: HashMap<String, ToolPair>,
}

impl Order {
    /// An empty ledger; `strict_turns` turns rule 3 on.
    pub(crate) fn new(strict_turns: bool) -> Self {
        Self {
            strict_turns,
            ..Self::default()
        }
    }

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
        if enforce && needs_turn && self.strict_turns && !self.turn_open {
            return Err(format!(
                "{point} needs an input that permitted its turn first (§3.1 rule 3)"
            ));
        }
        match point {
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
            InterceptionPoint::Input => self.turn_open = proceeds,
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
