//! How a host combines verdicts and whether it enforces them: the
//! enforcement mode (§8) and the composition profile with its knobs
//! (§7.1–§7.2), as a host configures them and as the record's
//! `composition` block shows them resolved.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

/// Enforcement mode (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Combined verdicts are honoured (§6).
    #[default]
    Enforce,
    /// Interceptors run and are recorded; every action proceeds as if
    /// allowed, transforms are validated but not applied, and the approval
    /// seam is never consulted.
    EvaluateOnly,
}

impl Mode {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Enforce => "enforce",
            Self::EvaluateOnly => "evaluate_only",
        }
    }
}

/// The closed set of composition profiles (§7.2), ordered as §7.2 lists
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Profile {
    /// Fold-through; the first deny short-circuits.
    #[default]
    SequentialFirstDeny,
    /// Fold-through; everything runs; severity-max aggregate.
    SequentialRunAll,
    /// Snapshot isolation; severity-max aggregate.
    ParallelStrictest,
    /// Snapshot isolation; anything but unanimous allow is a disagreement.
    ParallelUnanimous,
}

impl Profile {
    /// The wire name, e.g. `parallel/strictest`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SequentialFirstDeny => "sequential/first_deny",
            Self::SequentialRunAll => "sequential/run_all",
            Self::ParallelStrictest => "parallel/strictest",
            Self::ParallelUnanimous => "parallel/unanimous",
        }
    }

    /// Sequential profiles fold transforms through in registration order.
    pub const fn is_sequential(self) -> bool {
        matches!(self, Self::SequentialFirstDeny | Self::SequentialRunAll)
    }

    /// Multi-verdict profiles must carry the `verdicts` summary (§10.3).
    pub const fn is_multi_verdict(self) -> bool {
        !matches!(self, Self::SequentialFirstDeny)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string naming no profile of §7.2 (the set is closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown composition profile {0:?}: expected sequential/first_deny, sequential/run_all, parallel/strictest or parallel/unanimous"
)]
pub struct UnknownProfile(pub String);

impl FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::SequentialFirstDeny,
            Self::SequentialRunAll,
            Self::ParallelStrictest,
            Self::ParallelUnanimous,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
        .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

/// `on_approval` (§7.4): what a permit resolution does in
/// `sequential/first_deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnApproval {
    /// The resolution ends the emission (normative default).
    #[default]
    Stop,
    /// The resolution substitutes and the fold continues.
    Resume,
}

/// `on_disagreement` / `on_transform_conflict` (§7.5): whether a
/// synthesized deny is final or offered to the approval seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Synthesis {
    /// A plain deny (normative default).
    #[default]
    Deny,
    /// A liftable deny, offered to the approval seam.
    Approval,
}

impl OnApproval {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Resume => "resume",
        }
    }
}

impl Synthesis {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Approval => "approval",
        }
    }
}

/// A profile with its knobs, as a host configures it. Unset knobs take the
/// §7.2 normative defaults; knobs the profile does not consult are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Composition {
    /// The profile.
    pub profile: Profile,
    /// `on_approval` (`sequential/first_deny`).
    pub on_approval: Option<OnApproval>,
    /// `on_disagreement` (`parallel/unanimous`).
    pub on_disagreement: Option<Synthesis>,
    /// `on_transform_conflict` (`parallel/strictest`).
    pub on_transform_conflict: Option<Synthesis>,
}

impl Composition {
    /// A profile with every knob at its default.
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            ..Self::default()
        }
    }

    /// `sequential/first_deny` with `on_approval`.
    pub fn first_deny(on_approval: OnApproval) -> Self {
        Self {
            on_approval: Some(on_approval),
            ..Self::new(Profile::SequentialFirstDeny)
        }
    }

    /// `parallel/strictest` with `on_transform_conflict`.
    pub fn strictest(on_transform_conflict: Synthesis) -> Self {
        Self {
            on_transform_conflict: Some(on_transform_conflict),
            ..Self::new(Profile::ParallelStrictest)
        }
    }

    /// `parallel/unanimous` with `on_disagreement`.
    pub fn unanimous(on_disagreement: Synthesis) -> Self {
        Self {
            on_disagreement: Some(on_disagreement),
            ..Self::new(Profile::ParallelUnanimous)
        }
    }

    /// The knobs the profile consults, defaults filled in, the others
    /// cleared: exactly what the record's `composition` block carries.
    pub fn resolved(self) -> Self {
        let mut r = Self::new(self.profile);
        match self.profile {
            Profile::SequentialFirstDeny => {
                r.on_approval = Some(self.on_approval.unwrap_or_default())
            }
            Profile::SequentialRunAll => {}
            Profile::ParallelStrictest => {
                r.on_transform_conflict = Some(self.on_transform_conflict.unwrap_or_default())
            }
            Profile::ParallelUnanimous => {
                r.on_disagreement = Some(self.on_disagreement.unwrap_or_default())
            }
        }
        r
    }

    /// The record's `composition` block (§10.3), resolved.
    pub fn to_json(self) -> Value {
        let r = self.resolved();
        let mut m = Map::new();
        m.insert("profile".into(), r.profile.as_str().into());
        if let Some(k) = r.on_approval {
            m.insert("on_approval".into(), k.as_str().into());
        }
        if let Some(k) = r.on_disagreement {
            m.insert("on_disagreement".into(), k.as_str().into());
        }
        if let Some(k) = r.on_transform_conflict {
            m.insert("on_transform_conflict".into(), k.as_str().into());
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn composition_resolves_only_the_knobs_a_profile_consults() {
        assert_eq!(
            Composition::new(Profile::SequentialFirstDeny).to_json(),
            json!({"profile": "sequential/first_deny", "on_approval": "stop"})
        );
        assert_eq!(
            Composition::new(Profile::SequentialRunAll).to_json(),
            json!({"profile": "sequential/run_all"})
        );
        let noisy = Composition {
            on_approval: Some(OnApproval::Resume),
            ..Composition::new(Profile::ParallelUnanimous)
        };
        assert_eq!(
            noisy.to_json(),
            json!({"profile": "parallel/unanimous", "on_disagreement": "deny"})
        );
        assert_eq!(
            Composition::strictest(Synthesis::Approval).to_json(),
            json!({"profile": "parallel/strictest", "on_transform_conflict": "approval"})
        );
    }
}
