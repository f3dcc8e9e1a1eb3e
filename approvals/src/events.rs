//! What the approval queue tells the outside: a pending request as
//! approvers see it, why a request closed, the change feed's events and
//! what the queue delivers to a host; who decided ([`ApproverIdentity`]) and the
//! decision audit log's entries ([`DecisionRecord`]). Plain values, shared
//! by the queue, its stores, the gRPC service and the web page.

use std::time::{Duration, SystemTime};

use hookwire::InterceptionPoint;
use hookwire::approval::{ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamResolution};
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
    /// Names of the approvers who said they are looking
    /// ([`ApprovalQueue::seen`](super::ApprovalQueue::seen)), in order,
    /// without repeats.
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
    /// The service gave up on it ([`ApprovalQueue::fail`](super::ApprovalQueue::fail)).
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
        approver: ApproverIdentity,
    },
    /// A request was decided and its decision sent to its host.
    Resolved {
        /// The queue's id.
        id: String,
        /// Who decided.
        approver: ApproverIdentity,
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

/// Who decided or looked at a request, as the service verified it.
///
/// An approver's name on a decision must come from a credential the
/// service checked (a bearer token, a client certificate, a signed-in page
/// session), never from a field of the request being decided: the front
/// ends build an `ApproverIdentity` from what authenticated the caller, and the
/// queue records it as given. [`AuthMethod`] says how the name was
/// established, so that the audit log tells verified names from the
/// unverified ones of a service run without authentication.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApproverIdentity {
    name: String,
    method: AuthMethod,
}

/// How an [`ApproverIdentity`]'s name was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthMethod {
    /// An operator-issued bearer token, checked against its stored hash.
    BearerToken,
    /// A client certificate verified by mutual TLS.
    ClientCertificate,
    /// A signed-in session of the approval page.
    WebSession,
    /// Code in the service's own process (robots, bridges, tests); trusted
    /// as the process is.
    InProcess,
    /// Nothing: a service run without authentication named the caller
    /// after what it said or its network peer. Recorded as such.
    Unverified,
}

impl AuthMethod {
    /// A short lowercase name, for logs, the audit log and its storage.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::BearerToken => "bearer_token",
            Self::ClientCertificate => "client_certificate",
            Self::WebSession => "web_session",
            Self::InProcess => "in_process",
            Self::Unverified => "unverified",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names (for stored audit rows).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "bearer_token" => Self::BearerToken,
            "client_certificate" => Self::ClientCertificate,
            "web_session" => Self::WebSession,
            "in_process" => Self::InProcess,
            "unverified" => Self::Unverified,
            _ => return None,
        })
    }
}

/// Longest approver name kept; longer ones are cut (names are shown to
/// hosts and other approvers and stored in the audit log).
pub const MAX_APPROVER_NAME: usize = 128;

impl ApproverIdentity {
    /// An approver whose `name` comes from a credential checked by
    /// `method`. Front ends call this after authentication; the name is
    /// cut to [`MAX_APPROVER_NAME`] characters.
    pub fn verified(name: impl Into<String>, method: AuthMethod) -> Self {
        let name: String = name.into();
        Self {
            name: name.chars().take(MAX_APPROVER_NAME).collect(),
            method,
        }
    }

    /// An approver in the service's own process (a robot, a bridge, a
    /// test), trusted as the process is.
    pub fn in_process(name: impl Into<String>) -> Self {
        Self::verified(name, AuthMethod::InProcess)
    }

    /// A caller nothing authenticated, named as it said or after its
    /// peer; the audit log keeps it marked [`AuthMethod::Unverified`].
    pub fn unverified(name: impl Into<String>) -> Self {
        Self::verified(name, AuthMethod::Unverified)
    }

    /// The name, as shown and recorded.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the name was established.
    pub fn method(&self) -> AuthMethod {
        self.method
    }

    /// Whether a credential (or the process itself) vouches for the name.
    pub fn is_verified(&self) -> bool {
        self.method != AuthMethod::Unverified
    }
}

impl std::fmt::Display for ApproverIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// What a decision asked for, classified for the audit log and the
/// history view. The queue forwards the resolution itself unchanged (the
/// host validates it, §9); this is only how it reads.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DecisionOutcome {
    /// Approve with `allow`: the action proceeds as asked.
    Allow,
    /// Approve with a `transform`: the action proceeds with its target
    /// replaced (the edited tool arguments, at `pre_tool_call`).
    AllowEdited {
        /// The transform's path (`$target` from the page).
        path: String,
        /// The replacement value.
        value: Value,
    },
    /// Reject: the deny stands.
    Deny,
    /// `unresolved`: the approver could not decide.
    Unresolved,
    /// A resolution the host will refuse (no outcome, or an outcome
    /// without a fitting verdict); recorded as sent.
    Malformed,
}

impl DecisionOutcome {
    /// How `resolution` reads.
    pub fn of(resolution: &ApprovalResolution) -> Self {
        use hookwire::Decision;
        match (resolution.outcome, resolution.verdict.as_ref()) {
            (Some(ApprovalOutcome::Approve), Some(v)) => match (v.decision, &v.transform) {
                (Decision::Allow, _) => Self::Allow,
                (Decision::Transform, Some(t)) => Self::AllowEdited {
                    path: t.path.clone(),
                    value: t.value.clone(),
                },
                _ => Self::Malformed,
            },
            (Some(ApprovalOutcome::Reject), Some(v)) if v.decision == Decision::Deny => Self::Deny,
            (Some(ApprovalOutcome::Unresolved), None) => Self::Unresolved,
            _ => Self::Malformed,
        }
    }

    /// A short lowercase name: `allow`, `allow_edited`, `deny`,
    /// `unresolved`, `malformed`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::AllowEdited { .. } => "allow_edited",
            Self::Deny => "deny",
            Self::Unresolved => "unresolved",
            Self::Malformed => "malformed",
        }
    }
}

/// What became of a decision, as the audit log keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acceptance {
    /// It was the first for a pending request and went to the host.
    Accepted,
    /// The queue turned it away (someone decided first, the deadline
    /// passed, the request was withdrawn or never existed).
    Refused(Refusal),
    /// The approver's rules do not allow them to decide this request; the
    /// front end refused it before it reached the queue
    /// ([`ApprovalQueue::audit_forbidden`](super::ApprovalQueue::audit_forbidden)).
    Forbidden,
}

impl Acceptance {
    /// A short lowercase name: `accepted`, `forbidden`, or the refusal's.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Refused(r) => r.as_str(),
            Self::Forbidden => "forbidden",
        }
    }
}

/// The request a decision was about, as the audit log identifies it.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionSubject {
    /// The host that asked.
    pub host: String,
    /// The host's own id for the request.
    pub host_request_id: String,
    /// The request's `context_identity` (§10.1), `None` under the `null`
    /// identity provider.
    pub context_identity: Option<String>,
    /// Where the emission was.
    pub interception_point: InterceptionPoint,
    /// `session.id`.
    pub session_id: String,
    /// `tool_name`, at the tool points.
    pub tool_name: Option<String>,
    /// The liftable deny's reason.
    pub reason: Option<String>,
}

impl DecisionSubject {
    /// The subject of a decision about `pending`, submitted by its host
    /// under `host_request_id`.
    pub fn of(pending: &PendingApproval, host_request_id: &str) -> Self {
        Self {
            host: pending.host.clone(),
            host_request_id: host_request_id.to_owned(),
            context_identity: pending.request.context_identity.clone(),
            interception_point: pending.request.interception_point,
            session_id: pending.session_id().to_owned(),
            tool_name: pending.tool_name().map(str::to_owned),
            reason: pending.request.verdict.reason.clone(),
        }
    }
}

/// One entry of the decision audit log: who decided what about which
/// request, when, on which instance, and whether it counted.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    /// The queue's id of the request decided.
    pub request_id: String,
    /// The request, when the queue knew it (not for unknown ids).
    pub subject: Option<DecisionSubject>,
    /// Who decided, as verified.
    pub approver: ApproverIdentity,
    /// The service instance that took the decision.
    pub instance: String,
    /// When (wall clock, to the microsecond).
    pub decided_at: SystemTime,
    /// What the decision asked for.
    pub outcome: DecisionOutcome,
    /// The approver's note: the message of the decision's verdict, cut to
    /// [`MAX_DECISION_NOTE`] characters.
    pub note: Option<String>,
    /// Whether it counted.
    pub acceptance: Acceptance,
}

/// Longest note kept on an audit entry.
pub const MAX_DECISION_NOTE: usize = 1024;

/// The note of `resolution`: its verdict's message, bounded.
pub fn decision_note(resolution: &ApprovalResolution) -> Option<String> {
    resolution
        .verdict
        .as_ref()
        .and_then(|v| v.message.as_deref())
        .map(|m| m.chars().take(MAX_DECISION_NOTE).collect())
}

/// Which audit entries [`ApprovalQueue::history`](super::ApprovalQueue::history)
/// returns: newest first, at most `limit`, optionally only those older
/// than `before`, of one approver or about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// At most this many entries (cut to [`MAX_HISTORY`]).
    pub limit: usize,
    /// Only entries decided strictly before this time (for paging).
    pub before: Option<SystemTime>,
    /// Only this approver's entries (by name).
    pub approver: Option<String>,
    /// Only the entries about this request (queue id).
    pub request_id: Option<String>,
}

/// Most entries one history query returns.
pub const MAX_HISTORY: usize = 1000;

impl Default for HistoryQuery {
    fn default() -> Self {
        Self {
            limit: 100,
            before: None,
            approver: None,
            request_id: None,
        }
    }
}

impl HistoryQuery {
    /// The newest `limit` entries.
    pub fn latest(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Whether `record` is one this query asks for (the limit aside).
    pub fn matches(&self, record: &DecisionRecord) -> bool {
        self.before.is_none_or(|b| record.decided_at < b)
            && self
                .approver
                .as_deref()
                .is_none_or(|a| record.approver.name() == a)
            && self
                .request_id
                .as_deref()
                .is_none_or(|id| record.request_id == id)
    }
}

/// A request taken back by its host after the link that submitted it went
/// away with its instance ([`HostLink::reattach`](super::HostLink::reattach)).
#[derive(Debug, Clone, PartialEq)]
pub struct Reattached {
    /// The queue's id, unchanged.
    pub id: String,
    /// The original deadline, unchanged.
    pub deadline: Instant,
    /// Whether it was decided while its host was away; the decision has
    /// then been delivered on the new link already.
    pub decided: bool,
}
