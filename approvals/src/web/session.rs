//! Signed-in page sessions: the session cookie that names one, the CSRF
//! token every `POST` must carry, and the bounded table of live sessions
//! (the edge's one session table: a quota per approver, expiry).
//!
//! A session id and its CSRF token are 256 random bits each, never the
//! approver's token. The cookie is written and read with the `cookie`
//! crate. The CSRF check stays a constant-time comparison of one header
//! with the session's token: the page reads the token from the sign-in
//! answer and sends it back (a synchronizer token), which needs no
//! framework of its own.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use hookwire_edge::sessions::{self as edge, Bounds, EdgeSession, Ending, InUse, WhenFull};
use hookwire_edge::token::constant_time_eq;
use tokio::time::Instant;

use super::views::status;
use crate::auth::{Access, ApproverAccess, random_hex};
use crate::error::Error;
use crate::events::{ApproverIdentity, AuthMethod};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "hookwire_session";

/// The header carrying the session's CSRF token on every `POST`.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);

/// Most sessions kept at once; a sign-in beyond takes the place of the
/// least recently used one (whose approver signs in again).
const MAX_SESSIONS: usize = 10_000;

/// Most sessions one approver keeps at once (browsers, devices); a
/// sign-in beyond takes the place of their own least recently used one.
const MAX_SESSIONS_PER_APPROVER: usize = 16;

/// A signed-in approver.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) approver: Arc<ApproverAccess>,
    pub(super) identity: ApproverIdentity,
    pub(super) csrf: String,
    pub(super) expires: Instant,
    /// The access list's generation at sign-in: a reloaded list ends the
    /// session (the approver signs in again, if the new list lets it).
    pub(super) generation: u64,
}

/// A page session ends at its expiry, whatever its use: the table takes
/// an expired one out as it takes out an idle one.
impl InUse for Session {
    fn ended(&self) -> bool {
        self.expires <= Instant::now()
    }
}

/// A page session holds nothing to end: signing out is forgetting it.
impl EdgeSession for Session {
    async fn end(self: Arc<Self>, _why: Ending) {}
}

/// Signed-in sessions by their random id, in the edge's one session
/// table (`hookwire_edge::sessions`), each bound to its approver.
pub(super) struct Sessions {
    table: edge::Sessions<Session, String>,
}

impl Default for Sessions {
    fn default() -> Self {
        let bounds = Bounds::new(MAX_SESSIONS, MAX_SESSIONS_PER_APPROVER, WhenFull::Displace);
        Self {
            table: edge::Sessions::new(bounds, SESSION_TTL),
        }
    }
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("len", &self.table.len())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    fn get(&self, id: &str) -> Option<Session> {
        let mut t = self.table.lock();
        let session = t.peek(id)?.clone();
        if session.ended() {
            t.remove(id);
            return None;
        }
        t.touch(id, std::time::Instant::now());
        Some(Session::clone(&session))
    }

    /// Signs `approver` in under the access list's `generation`: a new
    /// session, with its id. Expired sessions are let go first; past a
    /// bound, the least recently used session (the approver's own past
    /// their quota) gives its place.
    pub(super) async fn open(
        &self,
        approver: Arc<ApproverAccess>,
        generation: u64,
    ) -> Result<(String, Session), Error> {
        let session = Session {
            identity: approver.identity(AuthMethod::WebSession),
            csrf: random_hex()?,
            expires: Instant::now() + SESSION_TTL,
            generation,
            approver,
        };
        let id = random_hex()?;
        self.table.reap_idle().await;
        let owner = session.approver.name.clone();
        let opened = session.clone();
        self.table
            .enter(&id, owner, || Ok(opened), |_| None::<()>)
            .await
            .map_err(|e: hookwire_edge::Error| Error::Web(std::io::Error::other(e.to_string())))?;
        Ok((id, session))
    }

    /// Ends the session the request's cookie names, if any.
    pub(super) fn close(&self, headers: &HeaderMap) {
        if let Some(id) = session_id(headers) {
            self.close_id(&id);
        }
    }

    fn close_id(&self, id: &str) {
        self.table.lock().remove(id);
    }

    /// The live session the request's cookie names, signed in under the
    /// access list in force; `401` otherwise.
    pub(super) fn signed_in(
        &self,
        access: &Access,
        headers: &HeaderMap,
    ) -> Result<Session, Turned> {
        let id = session_id(headers).ok_or(Turned::NoSession)?;
        let session = self.get(&id).ok_or(Turned::NoSession)?;
        if session.generation != access.generation() {
            // Signed in under an access list since reloaded.
            self.close_id(&id);
            return Err(Turned::NoSession);
        }
        Ok(session)
    }

    /// The signed-in session whose CSRF token the request carries; `401`
    /// without a session, `403` without the token.
    pub(super) fn signed_in_post(
        &self,
        access: &Access,
        headers: &HeaderMap,
    ) -> Result<Session, Turned> {
        let session = self.signed_in(access, headers)?;
        let sent = headers
            .get(CSRF_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if constant_time_eq(sent, session.csrf.as_bytes()) {
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
}

/// The session id in the request's cookies, if any.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value().to_owned())
}

/// The `Set-Cookie` value naming session `id` for `max_age` (zero: the
/// browser forgets it): `HttpOnly`, `SameSite=Strict`, on every path, and
/// `Secure` when the page is served over TLS.
pub(super) fn session_cookie(id: &str, max_age: Duration, secure: bool) -> HeaderValue {
    let seconds = i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX);
    let cookie = Cookie::build((SESSION_COOKIE, id))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .max_age(cookie::time::Duration::seconds(seconds))
        .secure(secure)
        .build();
    HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Why a request to the page's API was turned away before it was read.
#[derive(Debug, Clone, Copy)]
pub(super) enum Turned {
    /// No live session: `401`.
    NoSession,
    /// A `POST` without the session's CSRF token: `403`.
    NoCsrfToken,
}

impl IntoResponse for Turned {
    fn into_response(self) -> Response {
        match self {
            Self::NoSession => status(StatusCode::UNAUTHORIZED, "unauthenticated"),
            Self::NoCsrfToken => status(StatusCode::FORBIDDEN, "csrf"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approver(name: &str) -> Arc<ApproverAccess> {
        Arc::new(ApproverAccess {
            name: name.into(),
            rules: Default::default(),
        })
    }

    fn cookie_of(id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = format!("{SESSION_COOKIE}={id}");
        headers.insert(header::COOKIE, HeaderValue::from_str(&value).unwrap());
        headers
    }

    #[tokio::test]
    async fn an_approver_past_their_quota_gives_up_one_of_their_own_sessions() {
        let sessions = Sessions::default();
        let (bob, _) = sessions.open(approver("bob"), 0).await.unwrap();
        let mut ann = Vec::new();
        for _ in 0..MAX_SESSIONS_PER_APPROVER {
            ann.push(sessions.open(approver("ann"), 0).await.unwrap().0);
        }
        assert!(ann.iter().all(|id| sessions.get(id).is_some()));
        let (newest, _) = sessions.open(approver("ann"), 0).await.unwrap();
        assert!(sessions.get(&newest).is_some());
        // Which of hers went is the table's least-recently-used rule,
        // tested in `hookwire_edge::sessions`; here: one of hers, no more.
        let kept = ann.iter().filter(|id| sessions.get(id).is_some()).count();
        assert_eq!(kept, MAX_SESSIONS_PER_APPROVER - 1);
        assert!(sessions.get(&bob).is_some(), "another approver's stays");
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_ends_at_its_expiry_and_on_sign_out() {
        let sessions = Sessions::default();
        let (kept, _) = sessions.open(approver("ann"), 0).await.unwrap();
        let (closed, _) = sessions.open(approver("ann"), 0).await.unwrap();
        sessions.close(&cookie_of(&closed));
        assert!(sessions.get(&closed).is_none());
        tokio::time::advance(SESSION_TTL - Duration::from_secs(1)).await;
        assert!(sessions.get(&kept).is_some(), "used, not expired");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            sessions.get(&kept).is_none(),
            "expired, however recently used"
        );
        assert_eq!(sessions.table.len(), 0);
    }

    #[test]
    fn the_session_cookie_is_read_back_among_others_and_carries_its_attributes() {
        let set = session_cookie("abc123", SESSION_TTL, false);
        let set = set.to_str().unwrap();
        assert!(set.starts_with("hookwire_session=abc123"), "{set}");
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
            assert!(set.contains(attribute), "{set} lacks {attribute}");
        }
        assert!(!set.contains("Secure"));
        assert!(
            session_cookie("x", Duration::ZERO, true)
                .to_str()
                .unwrap()
                .contains("Secure")
        );
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("theme=dark; other=1"),
        );
        assert_eq!(session_id(&headers), None);
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=b; hookwire_session=abc123"),
        );
        assert_eq!(session_id(&headers).as_deref(), Some("abc123"));
    }
}
