//! Signed-in page sessions: the session cookie that names one, the CSRF
//! token every `POST` must carry, and the bounded table of live sessions.
//!
//! A session id and its CSRF token are 256 random bits each, never the
//! approver's token. The cookie is written and read with the `cookie`
//! crate. The CSRF check stays a constant-time comparison of one header
//! with the session's token: the page reads the token from the sign-in
//! answer and sends it back (a synchronizer token), which needs no
//! framework of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
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

/// Most sessions kept at once; sign-ins beyond are refused (`503`) until
/// some expire.
const MAX_SESSIONS: usize = 10_000;

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

/// Signed-in sessions by their random id.
#[derive(Debug, Default)]
pub(super) struct Sessions {
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

    /// Signs `approver` in under the access list's `generation`: a new
    /// session, with its id.
    pub(super) fn open(
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

    /// Ends the session the request's cookie names, if any.
    pub(super) fn close(&self, headers: &HeaderMap) {
        if let Some(id) = session_id(headers) {
            self.close_id(&id);
        }
    }

    fn close_id(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
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
