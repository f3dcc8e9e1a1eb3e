//! The mode and composition a session runs each point under (§8, §7.2):
//! what the session overrides, and the host's for the rest.

use std::collections::BTreeMap;

use hookwire::{Composition, InterceptionPoint, Mode};

use crate::host_state::HostState;
use crate::pipeline::Settings;

/// The mode and composition a session runs each point under.
#[derive(Debug, Clone, Default)]
pub(super) struct Overrides {
    /// The session's mode, over the host's.
    pub(super) mode: Option<Mode>,
    /// The session's composition, over the host's.
    pub(super) composition: Option<Composition>,
    /// Modes at single points, over the session's.
    pub(super) mode_at: BTreeMap<InterceptionPoint, Mode>,
    /// Compositions at single points, over the session's.
    pub(super) composition_at: BTreeMap<InterceptionPoint, Composition>,
}

impl Overrides {
    /// Whether the session overrides nothing (what a sealed host allows).
    pub(super) fn is_empty(&self) -> bool {
        self.mode.is_none()
            && self.composition.is_none()
            && self.mode_at.is_empty()
            && self.composition_at.is_empty()
    }

    /// What `point` runs under: the point's override, else the session's,
    /// else the host's.
    pub(super) fn at(&self, host: &HostState, point: InterceptionPoint) -> Settings {
        Settings {
            mode: self
                .mode_at
                .get(&point)
                .copied()
                .or(self.mode)
                .unwrap_or(host.mode),
            composition: self
                .composition_at
                .get(&point)
                .copied()
                .or(self.composition)
                .unwrap_or(host.composition),
        }
    }
}
