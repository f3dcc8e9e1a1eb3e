//! What the page's API answers: the JSON views of pending requests and
//! decisions, the bodies it reads, the Server-Sent Events it streams, and
//! its `{status}` answers.

use std::time::SystemTime;

use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use hookwire::approval::ApprovalOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::trail::{TrailEntry, Trails};
use crate::auth::ApproverAccess;
use crate::events::{DecisionOutcome, DecisionRecord, PendingApproval, QueueEvent};
use crate::queue::ApprovalQueue;

/// A pending request as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingView {
    /// The queue's id.
    pub request_id: String,
    /// The host that asked.
    pub host: String,
    /// `interception_point`.
    pub point: String,
    /// `session.id`.
    pub session_id: String,
    /// `agent.id`.
    pub agent: Option<String>,
    /// `tenant.id`, when the context has a tenant.
    pub tenant: Option<String>,
    /// `tool_call.name`, at the tool points.
    pub tool_name: Option<String>,
    /// The liftable deny's `approval` block (what the policy asks the
    /// approver to weigh, e.g. `{"limit": 5000}`).
    pub approval: Option<Value>,
    /// When this instance received it, in milliseconds since the Unix
    /// epoch (`None` once the page's trail forgot it).
    pub submitted_at_ms: Option<u64>,
    /// The other recent requests of the same session this instance has
    /// seen and the approver's rules cover, newest first.
    pub trail: Vec<TrailEntry>,
    /// The target as the host's redactor left it (the tool arguments at
    /// `pre_tool_call`).
    pub target: Option<Value>,
    /// The liftable deny's reason.
    pub reason: Option<String>,
    /// The liftable deny's message.
    pub message: Option<String>,
    /// The identity the page must echo (`null` for the null provider).
    pub context_identity: Option<String>,
    /// Milliseconds left when this view was made: what is left of the
    /// deadline the host sent.
    pub remaining_ms: u64,
    /// Approvers who opened it.
    pub seen_by: Vec<String>,
    /// The whole context as presented (after the host's redactor), for
    /// the detail view.
    pub context: Value,
}

impl PendingView {
    /// `p` as `approver` is shown it, with what `trails` remember of its
    /// session.
    fn of(p: &PendingApproval, approver: &ApproverAccess, trails: &Trails) -> Self {
        let ctx = p.request.context.to_json();
        let id_of = |member: &str| {
            ctx.get(member)
                .and_then(|v| v.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let session = p.session_id();
        Self {
            request_id: p.id.clone(),
            host: p.host.clone(),
            point: p.request.interception_point.to_string(),
            session_id: session.to_owned(),
            agent: id_of("agent"),
            tenant: id_of("tenant"),
            tool_name: p.tool_name().map(str::to_owned),
            approval: p.request.verdict.approval.clone().map(Value::Object),
            submitted_at_ms: trails.submitted_ms(session, &p.id),
            trail: trails.of_session(session, &p.id, &approver.rules),
            target: p.target().cloned(),
            reason: p.request.verdict.reason.clone(),
            message: p.request.verdict.message.clone(),
            context_identity: p.request.context_identity.clone(),
            remaining_ms: u64::try_from(p.remaining().as_millis()).unwrap_or(u64::MAX),
            seen_by: p.seen_by.clone(),
            context: ctx,
        }
    }
}

/// One decision as the history view shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryView {
    /// The queue's id of the request decided.
    pub request_id: String,
    /// Who decided, as the credential named them.
    pub approver: String,
    /// When, in milliseconds since the Unix epoch.
    pub decided_at_ms: u64,
    /// `allow`, `allow_edited`, `deny`, `unresolved` or `malformed`.
    pub outcome: String,
    /// `accepted`, `forbidden`, or why the queue refused it.
    pub status: String,
    /// The service instance that took it.
    pub instance: String,
    /// The tool of the request, when known.
    pub tool_name: Option<String>,
    /// `session.id` of the request, when known.
    pub session_id: Option<String>,
    /// Its point, when known.
    pub point: Option<String>,
    /// The liftable deny's reason, when known.
    pub reason: Option<String>,
    /// The approver's note (the decision's message).
    pub note: Option<String>,
    /// On `allow_edited`: the arguments approved.
    pub edited: Option<Value>,
    /// On `allow_edited`: the arguments as submitted, when this instance
    /// still remembers them, for the diff.
    pub original: Option<Value>,
}

/// `POST /api/login`.
#[derive(Debug, Clone, Deserialize)]
pub struct LoginBody {
    /// The approver's operator-issued token.
    pub token: String,
}

/// `POST /api/decide`.
#[derive(Debug, Clone, Deserialize)]
pub struct DecideBody {
    /// The queue's id.
    pub request_id: String,
    /// `approve` or `reject`.
    pub outcome: String,
    /// The identity the page was shown, echoed.
    #[serde(default)]
    pub context_identity: Option<String>,
    /// On approve: edited arguments, sent as a `transform` of `$target`.
    #[serde(default)]
    pub args: Option<Value>,
    /// A note for the record.
    #[serde(default)]
    pub message: Option<String>,
}

/// `POST /api/seen`.
#[derive(Debug, Clone, Deserialize)]
pub struct SeenBody {
    /// The queue's id.
    pub request_id: String,
}

impl From<&DecisionRecord> for HistoryView {
    fn from(r: &DecisionRecord) -> Self {
        let millis = r
            .decided_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            request_id: r.request_id.clone(),
            approver: r.approver.name().to_owned(),
            decided_at_ms: millis,
            outcome: r.outcome.as_str().to_owned(),
            status: r.acceptance.as_str().to_owned(),
            instance: r.instance.clone(),
            tool_name: r.subject.as_ref().and_then(|s| s.tool_name.clone()),
            session_id: r.subject.as_ref().map(|s| s.session_id.clone()),
            point: r.subject.as_ref().map(|s| s.interception_point.to_string()),
            reason: r.subject.as_ref().and_then(|s| s.reason.clone()),
            note: r.note.clone(),
            edited: match &r.outcome {
                DecisionOutcome::AllowEdited { value, .. } => Some(value.clone()),
                _ => None,
            },
            original: None,
        }
    }
}

/// The pending requests `approver`'s rules cover, as the page shows them.
pub(super) fn views(
    queue: &ApprovalQueue,
    approver: &ApproverAccess,
    trails: &Trails,
) -> Vec<PendingView> {
    queue
        .pending()
        .iter()
        .filter(|p| approver.rules.permits(p))
        .map(|p| PendingView::of(p, approver, trails))
        .collect()
}

/// The `pending` event: the whole set `approver` may see.
pub(super) fn pending_event(
    queue: &ApprovalQueue,
    approver: &ApproverAccess,
    trails: &Trails,
) -> Event {
    Event::default().event("pending").data(
        serde_json::to_string(&views(queue, approver, trails)).unwrap_or_else(|_| "[]".into()),
    )
}

/// The `notice` event for a request that was resolved or closed; `None`
/// for the other changes.
pub(super) fn notice(e: &QueueEvent) -> Option<Event> {
    let text = match e {
        QueueEvent::Resolved {
            approver, outcome, ..
        } => format!(
            "{} by {approver}",
            outcome.map_or("answered without an outcome", |o| match o {
                ApprovalOutcome::Approve => "approved",
                ApprovalOutcome::Reject => "rejected",
                ApprovalOutcome::Unresolved => "left unresolved",
            })
        ),
        QueueEvent::Closed { reason, .. } => format!("closed: {}", reason.as_str()),
        QueueEvent::Added(_) | QueueEvent::Seen { .. } => return None,
    };
    let data = json!({"request_id": e.id(), "text": text}).to_string();
    Some(Event::default().event("notice").data(data))
}

/// A JSON answer `{status}` with `code`.
pub(super) fn status(code: StatusCode, status: &str) -> Response {
    (code, Json(json!({ "status": status }))).into_response()
}

/// `401 {status: "unauthenticated"}`.
pub(super) fn unauthenticated() -> Response {
    status(StatusCode::UNAUTHORIZED, "unauthenticated")
}
