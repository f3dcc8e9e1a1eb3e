//! The approval web page: pending requests live in a browser, with
//! Approve and Reject buttons, served over plain HTTP next to the gRPC
//! port.
//!
//! Routes (all under the router returned by [`router`]):
//!
//! - `GET /`: the page (static HTML and a little vanilla JS, embedded);
//! - `GET /api/pending`: the pending set as JSON ([`PendingView`]s);
//! - `GET /api/events`: Server-Sent Events; an `pending` event carrying the
//!   whole pending set on connect and after every change, and a `notice`
//!   event (`{request_id, text}`) when a request is resolved or closed;
//! - `POST /api/seen` `{request_id, approver}`: the approver is looking;
//! - `POST /api/decide` `{request_id, outcome, context_identity, approver,
//!   args?, message?}`: approve (with `args`: a `transform` of `$target`
//!   to the edited value) or reject. Answers `{status}`: `accepted`, or
//!   the [`Refusal`](super::Refusal) name with `409 Conflict`.
//!
//! The page echoes the `context_identity` it was shown; the host checks
//! it (§9 echo rule). Nothing here quotes the context anywhere but in the
//! page that shows it to the approver, and the page inserts every value
//! as text, never as HTML.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use hookwire::Verdict;
use hookwire::approval::{ApprovalOutcome, ApprovalResolution};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use super::queue::{ApprovalQueue, ApproverIdentity, PendingApproval, QueueEvent};
use crate::error::Error;

/// The page, embedded at build time.
const PAGE: &str = include_str!("page.html");

/// The reason carried by a rejection made on the page.
pub const REJECT_REASON: &str = "approval:rejected";

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
    /// `tool_call.name`, at the tool points.
    pub tool_name: Option<String>,
    /// The target as the host's redactor left it (the tool arguments at
    /// `pre_tool_call`).
    pub target: Option<Value>,
    /// The liftable deny's reason.
    pub reason: Option<String>,
    /// The liftable deny's message.
    pub message: Option<String>,
    /// The identity the page must echo (`null` for the null provider).
    pub context_identity: Option<String>,
    /// Milliseconds left when this view was made.
    pub remaining_ms: u64,
    /// Approvers looking at it.
    pub seen_by: Vec<String>,
    /// The whole context as presented, for the details view.
    pub context: Value,
}

impl From<&PendingApproval> for PendingView {
    fn from(p: &PendingApproval) -> Self {
        Self {
            request_id: p.id.clone(),
            host: p.host.clone(),
            point: p.request.interception_point.to_string(),
            session_id: p.session_id().to_owned(),
            tool_name: p.tool_name().map(str::to_owned),
            target: p.target().cloned(),
            reason: p.request.verdict.reason.clone(),
            message: p.request.verdict.message.clone(),
            context_identity: p.request.context_identity.clone(),
            remaining_ms: u64::try_from(p.remaining().as_millis()).unwrap_or(u64::MAX),
            seen_by: p.seen_by.clone(),
            context: p.request.context.to_json(),
        }
    }
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
    /// Who decides.
    #[serde(default)]
    pub approver: String,
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
    /// Who is looking.
    #[serde(default)]
    pub approver: String,
}

#[derive(Clone)]
struct WebState {
    queue: ApprovalQueue,
    closing: watch::Receiver<bool>,
}

/// The page and its API over `queue`. Event streams end once `closing`
/// turns `true` (or its sender is dropped), so graceful shutdown does not
/// wait on open pages.
pub fn router(queue: ApprovalQueue, closing: watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/pending", get(pending))
        .route("/api/events", get(events))
        .route("/api/seen", post(seen))
        .route("/api/decide", post(decide))
        .with_state(WebState { queue, closing })
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

fn views(queue: &ApprovalQueue) -> Vec<PendingView> {
    queue.pending().iter().map(PendingView::from).collect()
}

async fn pending(State(s): State<WebState>) -> Json<Vec<PendingView>> {
    Json(views(&s.queue))
}

fn pending_event(queue: &ApprovalQueue) -> Event {
    Event::default()
        .event("pending")
        .data(serde_json::to_string(&views(queue)).unwrap_or_else(|_| "[]".into()))
}

fn notice(e: &QueueEvent) -> Option<Event> {
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

async fn events(State(s): State<WebState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    struct Feed {
        queue: ApprovalQueue,
        events: broadcast::Receiver<QueueEvent>,
        closing: watch::Receiver<bool>,
        first: bool,
        queued: Option<Event>,
    }
    let sub = s.queue.subscribe();
    let feed = Feed {
        queue: s.queue,
        events: sub.events,
        closing: s.closing,
        first: true,
        queued: None,
    };
    let stream = futures::stream::unfold(feed, |mut f| async move {
        if f.first {
            f.first = false;
            let e = pending_event(&f.queue);
            return Some((Ok(e), f));
        }
        if let Some(e) = f.queued.take() {
            return Some((Ok(e), f));
        }
        let change = tokio::select! {
            change = f.events.recv() => change,
            _ = f.closing.wait_for(|c| *c) => return None,
        };
        match change {
            Ok(e) => f.queued = notice(&e),
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return None,
        }
        let e = pending_event(&f.queue);
        Some((Ok(e), f))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}

fn approver_name(name: &str) -> String {
    match name.trim() {
        "" => "web".to_owned(),
        n => n.chars().take(64).collect(),
    }
}

async fn seen(State(s): State<WebState>, Json(body): Json<SeenBody>) -> StatusCode {
    match s
        .queue
        .seen(
            &body.request_id,
            &ApproverIdentity::unverified(approver_name(&body.approver)),
        )
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::CONFLICT,
    }
}

async fn decide(State(s): State<WebState>, Json(body): Json<DecideBody>) -> Response {
    let approver = approver_name(&body.approver);
    let (outcome, mut verdict) = match (body.outcome.as_str(), body.args) {
        ("approve", None) => (ApprovalOutcome::Approve, Verdict::allow()),
        ("approve", Some(args)) => (
            ApprovalOutcome::Approve,
            Verdict::transform("$target", args),
        ),
        ("reject", _) => (
            ApprovalOutcome::Reject,
            Verdict::deny(REJECT_REASON).with_message(format!("rejected by {approver}")),
        ),
        _ => {
            let error =
                json!({"status": "bad_request", "error": "outcome must be approve or reject"});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    if let Some(m) = body.message.filter(|m| !m.trim().is_empty()) {
        verdict.message = Some(m);
    }
    let resolution = ApprovalResolution {
        outcome: Some(outcome),
        context_identity: body.context_identity,
        verdict: Some(verdict),
    };
    let approver = ApproverIdentity::unverified(approver);
    match s
        .queue
        .resolve(&body.request_id, &approver, resolution)
        .await
    {
        Ok(_) => (StatusCode::OK, Json(json!({"status": "accepted"}))).into_response(),
        Err(Error::Refused { refusal, .. }) => (
            StatusCode::CONFLICT,
            Json(json!({"status": refusal.as_str()})),
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"status": "error", "error": e.to_string()})),
        )
            .into_response(),
    }
}
