//! What the approval queue tells the outside: a pending request as
//! approvers see it, why a request closed, the change feed's events and
//! what the queue delivers to a host. Plain values, shared by the queue,
//! the gRPC service and the web page.

use std::time::Duration;

use hookwire::approval::{ApprovalOutcome, ApprovalRequest, StreamResolution};
use serde_json::Value;
use tokio::time::Instant;

use crate::error::Refusal;

/// A request waiting for a decision, as approvers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    /// The queue's id for the request, unique across hosts.
    pub id: String,
    /// The host that asked (its hello, or its network peer).
    pub host: String,
    /// The §9 request: identity, point, the liftable deny, and the
    /// context as the host's redactor left it.
    pub request: ApprovalRequest,
    /// When the queue stops accepting decisions.
    pub deadline: Instant,
    /// Approvers who said they are looking, in order, without repeats.
    pub seen_by: Vec<String>,
}

impl PendingApproval {
    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `tool_call.name`, at the tool points.
    pub fn tool_name(&self) -> Option<&str> {
        self.request.context.tool_name()
    }

    /// The point's target as the approver may see it (at `pre_tool_call`,
    /// the tool arguments).
    pub fn target(&self) -> Option<&Value> {
        self.request.context.target()
    }

    /// `session.id`.
    pub fn session_id(&self) -> &str {
        self.request.context.session_id()
    }
}

/// Why a request left the queue without a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// Its deadline passed.
    Expired,
    /// Its host withdrew it.
    Cancelled,
    /// Its host's stream ended.
    HostGone,
    /// The service gave up on it ([`ApprovalQueue::fail`]).
    Failed,
}

impl CloseReason {
    /// A short lowercase name, for logs and the web page.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::HostGone => "host_gone",
            Self::Failed => "failed",
        }
    }
}

impl From<CloseReason> for Refusal {
    /// What a late decision for a request closed for `reason` is told.
    fn from(reason: CloseReason) -> Self {
        match reason {
            CloseReason::Expired => Self::Expired,
            CloseReason::Cancelled | CloseReason::HostGone | CloseReason::Failed => Self::Withdrawn,
        }
    }
}

/// One change to the pending set.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueEvent {
    /// A new request.
    Added(Box<PendingApproval>),
    /// An approver is looking at a request.
    Seen {
        /// The queue's id.
        id: String,
        /// Who.
        approver: String,
    },
    /// A request was decided and its decision sent to its host.
    Resolved {
        /// The queue's id.
        id: String,
        /// Who decided.
        approver: String,
        /// What they decided, as sent.
        outcome: Option<ApprovalOutcome>,
    },
    /// A request left the queue undecided.
    Closed {
        /// The queue's id.
        id: String,
        /// Why.
        reason: CloseReason,
    },
}

impl QueueEvent {
    /// The queue id of the request the event is about.
    pub fn id(&self) -> &str {
        match self {
            Self::Added(p) => &p.id,
            Self::Seen { id, .. } | Self::Resolved { id, .. } | Self::Closed { id, .. } => id,
        }
    }
}

/// What the queue sends a host, addressed by the host's own request ids.
#[derive(Debug, Clone, PartialEq)]
pub enum HostDelivery {
    /// The winning decision.
    Resolution(Box<StreamResolution>),
    /// An approver is looking at a request.
    Seen {
        /// The host's request id.
        request_id: String,
        /// Who.
        approver: String,
    },
    /// The service gave up on a request; the host fails it at once.
    Failed {
        /// The host's request id.
        request_id: String,
        /// Why, for logs.
        reason: String,
    },
}
