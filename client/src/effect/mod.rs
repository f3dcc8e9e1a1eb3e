//! Effect-bearing response extensions: the members of the `hookwire`
//! namespace of an interceptor's response (§5.5) that ask a consumer of the
//! emission to change what runs, the [`Effect`] kind a binding must be
//! granted to ask for each, and the pure table that decides whether one
//! binding's asks act. The host applies the table; consumers (the gateway,
//! the reference agent's routing) read only what it released, through
//! [`Emission::response_extensions`](crate::Emission::response_extensions).
//!
//! | member of `extensions.hookwire` | kind |
//! | --- | --- |
//! | `route` | `route` |
//! | `model` | `model_params` |
//! | `upstream.<stage>.set_headers`, `upstream.<stage>.clear_headers` | `headers` |
//! | `upstream.<stage>.credential` | `credential` |
//! | `upstream.<stage>.body` | `upstream_body` |
//!
//! Every other member, and every other namespace, is inert metadata: no
//! hookwire consumer acts on it.
//!
//! The rule, in the order the host applies it:
//! 1. **Grant** (when the answer arrives, in either mode): a binding that
//!    asks for a kind outside its grant is refused like a transform
//!    outside its paths — its slot becomes `host_error:verdict_invalid`,
//!    the record lists it under `mutation_refused` and its asks under
//!    `effects` with the fate `refused`.
//! 2. **Release** (once the combined verdict is known): the extensions of
//!    a binding act only if the emission ran in `enforce` mode, the
//!    binding's own verdict permitted (allow or transform: a deny, lifted
//!    by approval or by the profile, asks for nothing, as §5.4 keeps only
//!    a permit's labels), and the combined verdict lets the action run.
//!    Otherwise they are dropped and, when they asked for an effect,
//!    recorded with why (`evaluate_only`, `not_permitted`, `blocked`).
//!
//! A binding that declares no grant at all holds every kind (as it may
//! transform any path, §5.2); one that declares a grant holds exactly the
//! paths and kinds it declares, so a binding given only transform paths,
//! or made read-only, asks for no effect.

use std::fmt;

use hookwire::Mode;
use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

/// The response-extension namespace the host reads effects from.
pub(crate) const NAMESPACE: &str = "hookwire";

/// A kind of effect an interceptor may ask for in the `hookwire` namespace
/// of its response extensions, beyond its verdict. A binding must hold a
/// grant for each kind it asks for
/// ([`InterceptorBinding::may_effect`](crate::InterceptorBinding::may_effect),
/// a declaration's `config.effects`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Effect {
    /// `route`: run a tool call on another executor (the reference agent).
    Route,
    /// `model`: override model parameters, the model or the system prompt
    /// (the gateway).
    ModelParams,
    /// `upstream.*.set_headers` / `clear_headers`: set or clear headers of
    /// the upstream request (the gateway).
    Headers,
    /// `upstream.before_credentials.credential`: pick the pooled
    /// credential (the gateway).
    Credential,
    /// `upstream.*.body`: replace the whole upstream body (the gateway).
    UpstreamBody,
}

impl Effect {
    /// Every kind, in the order the records list them.
    pub const ALL: [Self; 5] = [
        Self::Route,
        Self::ModelParams,
        Self::Headers,
        Self::Credential,
        Self::UpstreamBody,
    ];

    /// The name a declaration and a record use, e.g. `model_params`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Route => "route",
            Self::ModelParams => "model_params",
            Self::Headers => "headers",
            Self::Credential => "credential",
            Self::UpstreamBody => "upstream_body",
        }
    }

    /// Parses a kind's name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of effect kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Effects(u8);

impl Effects {
    /// No kind.
    pub(crate) const NONE: Self = Self(0);
    /// Every kind.
    pub(crate) const ALL: Self = Self(0b1_1111);

    /// The set of `kinds`.
    pub(crate) fn of(kinds: impl IntoIterator<Item = Effect>) -> Self {
        kinds
            .into_iter()
            .fold(Self::NONE, |s, k| Self(s.0 | k.bit()))
    }

    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub(crate) fn contains(self, kind: Effect) -> bool {
        self.0 & kind.bit() != 0
    }

    /// The kinds of `self` that `other` lacks.
    pub(crate) fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    fn insert(&mut self, kind: Effect) {
        self.0 |= kind.bit();
    }

    pub(crate) fn iter(self) -> impl Iterator<Item = Effect> {
        Effect::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// `route, headers`, or `none`.
    pub(crate) fn describe(self) -> String {
        if self.is_empty() {
            return "none".to_owned();
        }
        self.iter()
            .map(Effect::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn to_json(self) -> Value {
        Value::Array(self.iter().map(|k| Value::from(k.as_str())).collect())
    }
}

/// The kinds of effect a response's extensions ask for (the table in the
/// module docs). Only the presence of a member counts: whether its value
/// is well formed is its consumer's check, which fails closed.
pub(crate) fn asked(extensions: &Map<String, Value>) -> Effects {
    let Some(Value::Object(ours)) = extensions.get(NAMESPACE) else {
        return Effects::NONE;
    };
    let mut kinds = Effects::NONE;
    if ours.contains_key("route") {
        kinds.insert(Effect::Route);
    }
    if ours.contains_key("model") {
        kinds.insert(Effect::ModelParams);
    }
    let stages = ours.get("upstream").and_then(Value::as_object);
    for stage in stages.into_iter().flat_map(Map::values) {
        for member in stage.as_object().into_iter().flat_map(Map::keys) {
            match member.as_str() {
                "set_headers" | "clear_headers" => kinds.insert(Effect::Headers),
                "credential" => kinds.insert(Effect::Credential),
                "body" => kinds.insert(Effect::UpstreamBody),
                _ => {}
            }
        }
    }
    kinds
}

/// What became of one binding's asks: released to the emission's
/// consumers, refused at its grant, or ignored and why. The record's
/// `extensions.hookwire.effects.<binding>.fate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// They may act: [`Emission::response_extensions`](crate::Emission::response_extensions) holds them.
    Released,
    /// Outside the binding's grant: its slot became
    /// `host_error:verdict_invalid`.
    Refused,
    /// Ignored: the emission ran in `evaluate_only` (§8: its outcome is
    /// never presented as enforcement).
    EvaluateOnly,
    /// Ignored: the binding's own verdict was a deny (whether or not an
    /// approval or the profile let the action run).
    NotPermitted,
    /// Ignored: the combined verdict blocked the action.
    Blocked,
}

impl Fate {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Released => "released",
            Self::Refused => "refused",
            Self::EvaluateOnly => "evaluate_only",
            Self::NotPermitted => "not_permitted",
            Self::Blocked => "blocked",
        }
    }
}

/// Step 1 of the rule: the kinds `asked` that `grant` does not hold
/// (`None`: a binding that declared no grant holds every kind). Empty when
/// the answer may stand.
pub(crate) fn outside_grant(grant: Option<Effects>, asked: Effects) -> Effects {
    asked.without(grant.unwrap_or(Effects::ALL))
}

/// Step 2 of the rule, for an answer that passed its grant: whether its
/// extensions act, given the emission's mode, whether the binding's own
/// verdict permitted, and whether the combined verdict lets the action
/// run. The first reason that applies is the one recorded.
pub(crate) fn fate(mode: Mode, own_permits: bool, combined_permits: bool) -> Fate {
    if mode == Mode::EvaluateOnly {
        Fate::EvaluateOnly
    } else if !own_permits {
        Fate::NotPermitted
    } else if !combined_permits {
        Fate::Blocked
    } else {
        Fate::Released
    }
}

/// The answers of one emission that carried extensions, kept until the
/// combined verdict decides which act.
#[derive(Default)]
pub(crate) struct Answers {
    kept: Vec<Answer>,
    /// `{binding: {kinds, fate}}` for every binding that asked for an effect.
    facts: Map<String, Value>,
}

struct Answer {
    binding: String,
    own_permits: bool,
    asked: Effects,
    extensions: Map<String, Value>,
}

/// What an emission's answers came to: the extensions released to its
/// consumers by binding, and the record's `effects` fact (empty when no
/// binding asked for an effect).
pub(crate) struct Settled {
    pub(crate) released: Vec<(String, Map<String, Value>)>,
    pub(crate) facts: Map<String, Value>,
}

impl Answers {
    /// One binding's answer: its own verdict's class, what it asked for
    /// and its extensions (empty when refused or failed), and the kinds
    /// refused at its grant (empty when none).
    pub(crate) fn answered(
        &mut self,
        binding: &str,
        own_permits: bool,
        asked: Effects,
        refused: Effects,
        extensions: Map<String, Value>,
    ) {
        if !refused.is_empty() {
            self.fact(binding, refused, Fate::Refused);
        }
        if !extensions.is_empty() {
            self.kept.push(Answer {
                binding: binding.to_owned(),
                own_permits,
                asked,
                extensions,
            });
        }
    }

    /// Applies step 2 to every kept answer.
    pub(crate) fn settle(mut self, mode: Mode, combined_permits: bool) -> Settled {
        let mut released = Vec::new();
        for a in std::mem::take(&mut self.kept) {
            let fate = fate(mode, a.own_permits, combined_permits);
            if !a.asked.is_empty() {
                self.fact(&a.binding, a.asked, fate);
            }
            if fate == Fate::Released {
                released.push((a.binding, a.extensions));
            }
        }
        Settled {
            released,
            facts: self.facts,
        }
    }

    fn fact(&mut self, binding: &str, kinds: Effects, fate: Fate) {
        let mut fact = Map::new();
        fact.insert("kinds".into(), kinds.to_json());
        fact.insert("fate".into(), Value::from(fate.as_str()));
        self.facts.insert(binding.to_owned(), Value::Object(fact));
    }
}
