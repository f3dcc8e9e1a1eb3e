//! The closed set of eight interception points (AGENT-HOOKS-0.1 §3) and what
//! the contract fixes about each: its wire name, where its target lives, and
//! whether a transform may rewrite it.

use std::fmt;
use std::str::FromStr;

/// One of the eight lifecycle positions at which a host consults its
/// interceptors (§3). The set is closed: there is no "other" variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InterceptionPoint {
    /// Once, before the first `input` of a session. Target: `agent_init`.
    AgentStartup,
    /// Each external request entering the session. Target: `input`.
    Input,
    /// Before each model request. Target: `messages`.
    PreModelCall,
    /// After each model response. Target: `response`.
    PostModelCall,
    /// Before each tool invocation. Target: `tool_call.args`.
    PreToolCall,
    /// After each tool invocation. Target: `tool_result.value`.
    PostToolCall,
    /// Before the final response reaches the caller. Target: `output`.
    Output,
    /// Once, after everything else. Target: `summary`.
    AgentShutdown,
}

impl InterceptionPoint {
    /// All eight points in loop order (§3.1).
    pub const ALL: [InterceptionPoint; 8] = [
        Self::AgentStartup,
        Self::Input,
        Self::PreModelCall,
        Self::PostModelCall,
        Self::PreToolCall,
        Self::PostToolCall,
        Self::Output,
        Self::AgentShutdown,
    ];

    /// The wire name used in contexts and records, e.g. `pre_tool_call`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AgentStartup => "agent_startup",
            Self::Input => "input",
            Self::PreModelCall => "pre_model_call",
            Self::PostModelCall => "post_model_call",
            Self::PreToolCall => "pre_tool_call",
            Self::PostToolCall => "post_tool_call",
            Self::Output => "output",
            Self::AgentShutdown => "agent_shutdown",
        }
    }

    /// Where the target lives in the context (§3 table, §4.3), as the chain
    /// of object members from the context root.
    pub const fn target_location(self) -> &'static [&'static str] {
        match self {
            Self::AgentStartup => &["agent_init"],
            Self::Input => &["input"],
            Self::PreModelCall => &["messages"],
            Self::PostModelCall => &["response"],
            Self::PreToolCall => &["tool_call", "args"],
            Self::PostToolCall => &["tool_result", "value"],
            Self::Output => &["output"],
            Self::AgentShutdown => &["summary"],
        }
    }

    /// Whether a `transform` verdict may rewrite the target here (§3, §4.3):
    /// every point except the two session boundaries.
    pub const fn permits_transform(self) -> bool {
        !matches!(self, Self::AgentStartup | Self::AgentShutdown)
    }

    /// Whether an action has already run when this point is emitted
    /// (§6.1): a deny here discards the result instead of preventing it.
    pub const fn is_post_action(self) -> bool {
        matches!(self, Self::PostModelCall | Self::PostToolCall)
    }
}

impl fmt::Display for InterceptionPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no interception point of §3.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown interception point {0:?}: expected one of agent_startup, input, pre_model_call, post_model_call, pre_tool_call, post_tool_call, output, agent_shutdown"
)]
pub struct UnknownInterceptionPoint(pub String);

impl FromStr for InterceptionPoint {
    type Err = UnknownInterceptionPoint;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownInterceptionPoint(s.to_owned()))
    }
}

impl serde::Serialize for InterceptionPoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for InterceptionPoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_refused() {
        for p in InterceptionPoint::ALL {
            assert_eq!(p.as_str().parse::<InterceptionPoint>().unwrap(), p);
        }
        assert!("pre_tool".parse::<InterceptionPoint>().is_err());
    }

    #[test]
    fn only_session_boundaries_forbid_transform() {
        let forbidden: Vec<_> = InterceptionPoint::ALL
            .into_iter()
            .filter(|p| !p.permits_transform())
            .collect();
        assert_eq!(
            forbidden,
            [
                InterceptionPoint::AgentStartup,
                InterceptionPoint::AgentShutdown
            ]
        );
    }
}
