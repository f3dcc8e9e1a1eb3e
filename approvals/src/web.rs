//! The approval web page: a signed-in approver's pending requests live in
//! a browser, with a detail view, approve (as asked or with edited
//! arguments), reject, and the decision history.
//!
//! Routes (all under the router returned by [`router`]):
//!
//! - `GET /`, `/page.css`, `/page.js`: the page (static HTML, CSS and
//!   vanilla JS, embedded; the script and style are served from here, so
//!   the policy allows no inline script);
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
//!   first, with notes and, for edited approvals, what was approved and
//!   (when this instance remembers it) what was submitted.
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
//!
//! Here: the routes and their handlers, and the security headers of every
//! answer; `session`: the session cookie, CSRF tokens and the table of
//! signed-in sessions; `views`: what the API answers and streams;
//! `trail`: the per-session trail of what hosts submitted.

mod session;
mod trail;
mod views;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

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
use serde_json::json;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::auth::{Access, ApproverAccess, Credentials, Denial};
use crate::decide::may_decide;
use crate::error::Error;
use crate::events::{Acceptance, HistoryQuery, QueueEvent};
use crate::queue::ApprovalQueue;
pub use session::{CSRF_HEADER, SESSION_COOKIE, SESSION_TTL};
use session::{Session, Sessions, Turned, session_cookie};
use trail::Trails;
pub use trail::{MAX_ORIGINALS, MAX_TRAIL_ENTRIES, MAX_TRAIL_SESSIONS, TrailEntry};
pub use views::{DecideBody, HistoryView, LoginBody, PendingView, SeenBody};
use views::{notice, pending_event, status, unauthenticated, views};

/// The page, its style and its script, embedded at build time (no CDN,
/// nothing fetched from elsewhere).
const PAGE: &str = include_str!("web/page.html");
/// The page's style sheet.
const STYLE: &str = include_str!("web/page.css");
/// The page's script.
const SCRIPT: &str = include_str!("web/page.js");

/// The reason carried by a rejection made on the page.
pub const REJECT_REASON: &str = "approval:rejected";

/// Largest request body the page's API reads.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How many history entries the page shows.
const HISTORY_LIMIT: usize = 200;

#[derive(Clone)]
struct WebState {
    queue: ApprovalQueue,
    access: Access,
    sessions: Arc<Sessions>,
    secure: bool,
    closing: watch::Receiver<bool>,
    trails: Trails,
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
    let trails = Trails::default();
    trails.follow(&queue, closing.clone());
    Router::new()
        .route("/", get(page))
        .route("/page.css", get(style))
        .route("/page.js", get(script))
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
            trails,
        })
}

/// No framing (clickjacking), no sniffing, no caching of API answers: the
/// headers of every answer, set once for the whole router. One function
/// rather than tower-http's `SetResponseHeader`, which takes a layer per
/// header and a dependency for five constant values.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'",
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

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

impl WebState {
    /// The signed-in session, or `401`.
    fn signed_in(&self, headers: &HeaderMap) -> Result<Session, Turned> {
        self.sessions.signed_in(&self.access, headers)
    }

    /// The signed-in session whose CSRF token the request carries; `401`
    /// without a session, `403` without the token.
    fn signed_in_post(&self, headers: &HeaderMap) -> Result<Session, Turned> {
        self.sessions.signed_in_post(&self.access, headers)
    }

    /// The `Set-Cookie` value for session `id`.
    fn cookie(&self, id: &str, max_age: Duration) -> HeaderValue {
        session_cookie(id, max_age, self.secure)
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
    let (id, session) = match s.sessions.open(approver, generation).await {
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
    s.sessions.close(&headers);
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

async fn pending(State(s): State<WebState>, headers: HeaderMap) -> Response {
    match s.signed_in(&headers) {
        Ok(session) => Json(views(&s.queue, &session.approver, &s.trails)).into_response(),
        Err(r) => r.into_response(),
    }
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
        trails: Trails,
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
        trails: s.trails,
    };
    let stream = futures::stream::unfold(feed, |mut f| async move {
        if f.first {
            f.first = false;
            let e = pending_event(&f.queue, &f.approver, &f.trails);
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
        let e = pending_event(&f.queue, &f.approver, &f.trails);
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
                .map(|r| {
                    let mut view = HistoryView::from(r);
                    if view.edited.is_some() {
                        view.original = s.trails.original(&r.request_id, &session.approver.rules);
                    }
                    view
                })
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
