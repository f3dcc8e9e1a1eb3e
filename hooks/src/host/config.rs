//! The core's settings: how many agent sessions, how long idle, and what a
//! standing liftable deny becomes. A leaf: the host and its turns read it.

use std::time::Duration;

/// What a liftable deny that the host left standing becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Liftable {
    /// A block, like any deny.
    #[default]
    Deny,
    /// The agent's own `ask` where it has one (the human at the
    /// terminal decides), else a block.
    Ask,
}

/// The core's settings.
#[derive(Debug, Clone)]
pub struct HooksConfig {
    /// The most agent sessions open at once; an event of one more fails
    /// closed.
    pub max_sessions: usize,
    /// An agent session with no event for this long is shut down
    /// (`agent_shutdown`, `completed`): how agents without a session-end
    /// event are closed.
    pub idle_timeout: Duration,
    /// What a standing liftable deny becomes.
    pub liftable: Liftable,
}

impl Default for HooksConfig {
    fn default() -> Self {
        Self {
            max_sessions: 1024,
            idle_timeout: Duration::from_secs(3600),
            liftable: Liftable::Deny,
        }
    }
}
