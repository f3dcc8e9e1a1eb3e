//! The approval web page: a signed-in approver's pending requests live in
//! a browser, with a detail view, approve (as asked or with edited
//! arguments), reject, and the decision history.
//!
//! Routes (all under the router returned by [`router`]):
//!
//! - `GET /`: the page (static HTML and a little vanilla JS, embedded);
//! - `POST /api/login` `{token}`: signs an approver in with its
//!   operator-issued token. Sets the session cookie (`HttpOnly`,
//!   `SameSite=Strict`, `Secure` under TLS, a random id that is not the
//!   token) and answers `{approver, csrf}`. An unknown, expired or revoked
//!   token is `401`, a host's token `403`;
//! - `GET /api/session`: `{approver, csrf}` of the signed-in session;
//! - `POST /api/logout`: ends the session;
//! - `GET /api/pending`: the pending requests the approver's rules cover,
//!   as JSON ([`PendingView`]s);
//! - `GET /api/events`: Server-Sent Events; a `pending` event carrying
//!   that set on connect and after every change, and a `notice` event
//!   (`{request_id, text}`) when a request is resolved or closed;
//! - `POST /api/seen` `{request_id}`: the approver opened the request;
//! - `POST /api/decide` `{request_id, outcome, context_identity, args?,
//!   message?}`: approve (with `args`: a `transform` of `$target` to the
//!   edited value, which the host validates, §9) or reject. Answers
//!   `{status}`: `accepted`, the [`Refusal`](super::Refusal) name with
//!   `409`, or `forbidden` with `403` when the approver's rules do not
//!   cover the request (audited);
//! - `GET /api/history`: the decision history ([`HistoryView`]s), newest
//!   first.
//!
//! Every `/api/` route but `login` needs the session cookie (`401`
//! without); every `POST` but `login` also needs the session's CSRF token
//! in the `x-csrf-token` header (`403` without). The approver's name is
//! the session's, never a body field. Bodies are bounded
//! ([`MAX_BODY_BYTES`]) and so is the number of sessions.
//!
//! The page echoes the `context_identity` it was shown; the host checks
//! it (§9 echo rule). Nothing here quotes the context anywhere but in the
//! page that shows it to the approver, and the page inserts every value
//! as text, never as HTML.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use hookwire::Verdict;
use hookwire::approval::{ApprovalOutcome, ApprovalResolution};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::auth::{Access, ApproverAccess, Credentials, Denial, hex};
use super::grpc::may_decide;
use super::queue::{
    Acceptance, ApprovalQueue, ApproverIdentity, AuthMethod, DecisionRecord, HistoryQuery,
    PendingApproval, QueueEvent,
};
use crate::error::Error;

/// The page, embedded at build time.
const PAGE: &str = include_str!("page.html");

/// The reason carried by a rejection made on the page.
pub const REJECT_REASON: &str = "approval:rejected";

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "hookwire_session";

/// The header carrying the session's CSRF token on every `POST`.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Largest request body the page's API reads.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);

/// Most sessions kept at once; sign-ins beyond are refused (`503`) until
/// some expire.
const MAX_SESSIONS: usize = 10_000;

/// How many history entries the page shows.
const HISTORY_LIMIT: usize = 200;

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
    /// Milliseconds left when this view was made: what is left of the
    /// deadline the host sent.
    pub remaining_ms: u64,
    /// Approvers who opened it.
    pub seen_by: Vec<String>,
    /// The whole context as presented (after the host's redactor), for
    /// the detail view.
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

/// A signed-in approver.
#[derive(Debug, Clone)]
struct Session {
    approver: Arc<ApproverAccess>,
    identity: ApproverIdentity,
    csrf: String,
    expires: Instant,
    /// The access list's generation at sign-in: a reloaded list ends the
    /// session (the approver signs in again, if the new list lets it).
    generation: u64,
}

/// Signed-in sessions by their random id.
#[derive(Debug, Default)]
struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        match map.get(id) {
            Some(s) if s.expires > now => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    fn open(
        &self,
        approver: Arc<ApproverAccess>,
        generation: u64,
    ) -> Result<(String, Session), Error> {
        let session = Session {
            identity: approver.identity(AuthMethod::WebSession),
            approver,
            csrf: random_hex()?,
            expires: Instant::now() + SESSION_TTL,
            generation,
        };
        let id = random_hex()?;
        let mut map = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_SESSIONS {
            let now = Instant::now();
            map.retain(|_, s| s.expires > now);
            if map.len() >= MAX_SESSIONS {
                return Err(Error::Web(std::io::Error::other("too many sessions")));
            }
        }
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    fn close(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

fn random_hex() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Random(e.to_string()))?;
    Ok(hex(&bytes))
}

#[derive(Clone)]
struct WebState {
    queue: ApprovalQueue,
    access: Access,
    sessions: Arc<Sessions>,
    secure: bool,
    closing: watch::Receiver<bool>,
}

/// The page and its API over `queue`, for the approvers of `access`.
/// `secure`: the page is served over TLS (the session cookie is then
/// `Secure`). Event streams end once `closing` turns `true` (or its
/// sender is dropped), so graceful shutdown does not wait on open pages.
pub fn router(
    queue: ApprovalQueue,
    access: Access,
    secure: bool,
    closing: watch::Receiver<bool>,
) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/login", post(login))
        .route("/api/logout", post(logout))
        .route("/api/session", get(session))
        .route("/api/pending", get(pending))
        .route("/api/events", get(events))
        .route("/api/seen", post(seen))
        .route("/api/decide", post(decide))
        .route("/api/history", get(history))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(security_headers))
        .with_state(WebState {
            queue,
            access,
            sessions: Arc::new(Sessions::default()),
            secure,
            closing,
        })
}

/// No framing (clickjacking), no sniffing, no caching of API answers.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

fn status(code: StatusCode, status: &str) -> Response {
    (code, Json(json!({ "status": status }))).into_response()
}

fn unauthenticated() -> Response {
    status(StatusCode::UNAUTHORIZED, "unauthenticated")
}

/// The session id in the request's cookie, if any.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Why a request to the page's API was turned away before it was read.
#[derive(Debug, Clone, Copy)]
enum Turned {
    /// No live session: `401`.
    NoSession,
    /// A `POST` without the session's CSRF token: `403`.
    NoCsrfToken,
}

impl IntoResponse for Turned {
    fn into_response(self) -> Response {
        match self {
            Self::NoSession => unauthenticated(),
            Self::NoCsrfToken => status(StatusCode::FORBIDDEN, "csrf"),
        }
    }
}

impl WebState {
    /// The signed-in session, or `401`.
    fn signed_in(&self, headers: &HeaderMap) -> Result<Session, Turned> {
        let id = session_id(headers).ok_or(Turned::NoSession)?;
        let session = self.sessions.get(id).ok_or(Turned::NoSession)?;
        if session.generation != self.access.generation() {
            // Signed in under an access list since reloaded.
            self.sessions.close(id);
            return Err(Turned::NoSession);
        }
        Ok(session)
    }

    /// The signed-in session whose CSRF token the request carries; `401`
    /// without a session, `403` without the token.
    fn signed_in_post(&self, headers: &HeaderMap) -> Result<Session, Turned> {
        let session = self.signed_in(headers)?;
        let sent = headers
            .get(CSRF_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if bool::from(sent.ct_eq(session.csrf.as_bytes())) {
            Ok(session)
        } else {
            tracing::warn!(
                target: "hookwire::approval::audit",
                approver = %session.approver.name,
                "approval page: request without its CSRF token refused"
            );
            Err(Turned::NoCsrfToken)
        }
    }

    fn cookie(&self, id: &str, max_age: Duration) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let value = format!(
            "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            max_age.as_secs()
        );
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

async fn login(State(s): State<WebState>, Json(body): Json<LoginBody>) -> Response {
    let generation = s.access.generation();
    let approver = s.access.approver(Credentials {
        token: Some(&body.token),
        peer: None,
    });
    let approver = match approver {
        Ok((a, _)) => a,
        Err(denial) => {
            tracing::warn!(
                target: "hookwire::approval::audit",
                denial = denial.as_str(),
                "approval page: sign-in refused"
            );
            return if denial == Denial::WrongPrincipal {
                status(StatusCode::FORBIDDEN, "forbidden")
            } else {
                unauthenticated()
            };
        }
    };
    let (id, session) = match s.sessions.open(approver, generation) {
        Ok(opened) => opened,
        Err(_) => return status(StatusCode::SERVICE_UNAVAILABLE, "too_many_sessions"),
    };
    tracing::info!(
        target: "hookwire::approval::audit",
        approver = %session.approver.name,
        "approval page: signed in"
    );
    let mut response = Json(json!({
        "approver": session.approver.name,
        "csrf": session.csrf,
    }))
    .into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, s.cookie(&id, SESSION_TTL));
    response
}

async fn logout(State(s): State<WebState>, headers: HeaderMap) -> Response {
    if let Err(r) = s.signed_in_post(&headers) {
        return r.into_response();
    }
    if let Some(id) = session_id(&headers) {
        s.sessions.close(id);
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, s.cookie("", Duration::ZERO));
    response
}

async fn session(State(s): State<WebState>, headers: HeaderMap) -> Response {
    match s.signed_in(&headers) {
        Ok(session) => Json(json!({
            "approver": session.approver.name,
            "csrf": session.csrf,
        }))
        .into_response(),
        Err(r) => r.into_response(),
    }
}

fn views(queue: &ApprovalQueue, approver: &ApproverAccess) -> Vec<PendingView> {
    queue
        .pending()
        .iter()
        .filter(|p| approver.rules.permits(p))
        .map(PendingView::from)
        .collect()
}

async fn pending(State(s): State<WebState>, headers: HeaderMap) -> Response {
    match s.signed_in(&headers) {
        Ok(session) => Json(views(&s.queue, &session.approver)).into_response(),
        Err(r) => r.into_response(),
    }
}

fn pending_event(queue: &ApprovalQueue, approver: &ApproverAccess) -> Event {
    Event::default()
        .event("pending")
        .data(serde_json::to_string(&views(queue, approver)).unwrap_or_else(|_| "[]".into()))
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

async fn events(State(s): State<WebState>, headers: HeaderMap) -> Response {
    struct Feed {
        queue: ApprovalQueue,
        approver: Arc<ApproverAccess>,
        events: broadcast::Receiver<QueueEvent>,
        closing: watch::Receiver<bool>,
        first: bool,
        queued: Option<Event>,
        expires: Instant,
        access: Access,
        generation: u64,
    }
    let session = match s.signed_in(&headers) {
        Ok(session) => session,
        Err(r) => return r.into_response(),
    };
    let sub = s.queue.subscribe();
    let feed = Feed {
        queue: s.queue,
        approver: session.approver,
        events: sub.events,
        closing: s.closing,
        first: true,
        queued: None,
        expires: session.expires,
        access: s.access,
        generation: session.generation,
    };
    let stream = futures::stream::unfold(feed, |mut f| async move {
        if f.first {
            f.first = false;
            let e = pending_event(&f.queue, &f.approver);
            return Some((Ok::<_, Infallible>(e), f));
        }
        if let Some(e) = f.queued.take() {
            return Some((Ok(e), f));
        }
        let change = tokio::select! {
            change = f.events.recv() => change,
            _ = f.closing.wait_for(|c| *c) => return None,
            // The feed ends with the session.
            () = tokio::time::sleep_until(f.expires) => return None,
        };
        // The feed ends with the session, which a reloaded access list
        // ends: nothing more is shown to a signed-in page.
        if f.access.generation() != f.generation {
            return None;
        }
        match change {
            Ok(e) => f.queued = notice(&e),
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return None,
        }
        let e = pending_event(&f.queue, &f.approver);
        Some((Ok(e), f))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
        .into_response()
}

async fn seen(
    State(s): State<WebState>,
    headers: HeaderMap,
    Json(body): Json<SeenBody>,
) -> Response {
    let session = match s.signed_in_post(&headers) {
        Ok(session) => session,
        Err(r) => return r.into_response(),
    };
    let Some(pending) = s.queue.get(&body.request_id) else {
        return status(StatusCode::CONFLICT, "unknown_request");
    };
    if !session.approver.rules.permits(&pending) {
        return status(StatusCode::FORBIDDEN, "forbidden");
    }
    match s.queue.seen(&body.request_id, &session.identity).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => status(StatusCode::CONFLICT, "unknown_request"),
    }
}

async fn decide(
    State(s): State<WebState>,
    headers: HeaderMap,
    Json(body): Json<DecideBody>,
) -> Response {
    let session = match s.signed_in_post(&headers) {
        Ok(session) => session,
        Err(r) => return r.into_response(),
    };
    let approver = &session.approver;
    let (outcome, mut verdict) = match (body.outcome.as_str(), body.args) {
        ("approve", None) => (ApprovalOutcome::Approve, Verdict::allow()),
        ("approve", Some(args)) => (
            ApprovalOutcome::Approve,
            Verdict::transform("$target", args),
        ),
        ("reject", _) => (
            ApprovalOutcome::Reject,
            Verdict::deny(REJECT_REASON).with_message(format!("rejected by {}", approver.name)),
        ),
        _ => {
            let error =
                json!({"status": "bad_request", "error": "outcome must be approve or reject"});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    if let Some(m) = body.message.filter(|m| !m.trim().is_empty()) {
        verdict.message = Some(m.chars().take(1024).collect());
    }
    let resolution = ApprovalResolution {
        outcome: Some(outcome),
        context_identity: body.context_identity,
        verdict: Some(verdict),
    };
    let allowed = may_decide(
        &s.queue,
        approver,
        &session.identity,
        &body.request_id,
        &resolution,
    )
    .await;
    if allowed.is_err() {
        return status(StatusCode::FORBIDDEN, "forbidden");
    }
    match s
        .queue
        .resolve(&body.request_id, &session.identity, resolution)
        .await
    {
        Ok(_) => status(StatusCode::OK, "accepted"),
        Err(Error::Refused { refusal, .. }) => status(StatusCode::CONFLICT, refusal.as_str()),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"status": "error", "error": e.to_string()})),
        )
            .into_response(),
    }
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
        }
    }
}

async fn history(State(s): State<WebState>, headers: HeaderMap) -> Response {
    let session = match s.signed_in(&headers) {
        Ok(session) => session,
        Err(r) => return r.into_response(),
    };
    match s.queue.history(&HistoryQuery::latest(HISTORY_LIMIT)).await {
        // An approver sees its own decisions, and the accepted ones about
        // what its rules cover.
        Ok(records) => {
            let views: Vec<HistoryView> = records
                .iter()
                .filter(|r| {
                    r.approver.name() == session.approver.name
                        || (r.acceptance == Acceptance::Accepted
                            && r.subject
                                .as_ref()
                                .is_some_and(|s| session.approver.rules.covers(s)))
                })
                .map(HistoryView::from)
                .collect();
            Json(views).into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"status": "error", "error": e.to_string()})),
        )
            .into_response(),
    }
}
