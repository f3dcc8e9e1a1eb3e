//! The requests the core relays without governing them: `GET /v1/models`
//! (passed through with the credential), a request carrying a callback
//! token (redeemed, then forwarded as it is: recursion protection), and
//! the end of a conversation (`DELETE /v1/hookwire/sessions/{id}`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::header;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::Limited;
use serde_json::json;

use super::state::Inner;
use super::upstream_request::{self, depth_of, forwarded_headers};
use crate::api::Api;
use crate::applied::Applied;
use crate::error::Error;
use crate::headers::DEPTH_HEADER;
use crate::principal::Owner;

impl Inner {
    /// `GET /v1/models`: passed through with the credential.
    pub(crate) async fn models(self: Arc<Self>, headers: HeaderMap) -> Response {
        let depth = match depth_of(&headers, self.config.max_depth) {
            Ok(d) => d,
            Err(e) => return e.into_response(),
        };
        let mut applied = Applied {
            depth,
            request_id: self.request_id(),
            ..Applied::default()
        };
        let result = self
            .relay::<crate::api::chat::Chat>(
                Method::GET,
                "/models",
                &headers,
                Bytes::new(),
                &mut applied,
            )
            .await;
        applied.outcome = outcome_of(&result);
        self.applied.push(applied);
        result.unwrap_or_else(IntoResponse::into_response)
    }

    /// `DELETE /v1/hookwire/sessions/{id}`: ends a conversation
    /// (`agent_shutdown`, `completed`). Only the principal that opened it
    /// may end it (`crate::principal`).
    pub(crate) async fn end_session(self: Arc<Self>, owner: Owner, id: String) -> Response {
        match self.sessions.remove(&id, owner) {
            Some(conv) => {
                conv.close(hookwire_client::ShutdownReason::Completed).await;
                StatusCode::NO_CONTENT.into_response()
            }
            None => (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"error": {"message": "no such session", "type": "invalid_request_error", "param": null, "code": "session_not_found"}})),
            )
                .into_response(),
        }
    }

    /// A request with a callback token: redeemed, then relayed without
    /// interception.
    pub(super) async fn callback<A: Api>(
        &self,
        headers: &HeaderMap,
        token: &HeaderValue,
        body: Bytes,
    ) -> Result<Response, Error> {
        let mut applied = Applied {
            callback: true,
            request_id: self.request_id(),
            ..Applied::default()
        };
        let grant = token
            .to_str()
            .map_err(|_| "not a token this gateway issued")
            .and_then(|t| self.tokens.redeem(t));
        let result = match grant {
            Err(why) => Err(Error::CallbackRefused(why)),
            Ok(grant) if grant.depth > self.config.max_depth => Err(Error::TooDeep {
                depth: grant.depth,
                max: self.config.max_depth,
            }),
            Ok(grant) => {
                applied.session = grant.session;
                applied.depth = grant.depth;
                applied.callback_binding = Some(grant.binding);
                self.relay::<A>(Method::POST, A::UPSTREAM_PATH, headers, body, &mut applied)
                    .await
            }
        };
        applied.outcome = outcome_of(&result);
        self.applied.push(applied);
        result
    }

    /// Forwards a request as it is (credential and depth header set) and
    /// streams the upstream's answer back, bounded.
    async fn relay<A: Api>(
        &self,
        method: Method,
        path: &str,
        client: &HeaderMap,
        body: Bytes,
        applied: &mut Applied,
    ) -> Result<Response, Error> {
        let mut headers = forwarded_headers(client, !self.pool.is_empty());
        if let Some(c) = self.pool.choose(None).map_err(Error::Config)? {
            upstream_request::attach::<A>(&mut headers, &c);
            applied.credential = Some(c.label);
        }
        headers.insert(
            axum::http::HeaderName::from_static(DEPTH_HEADER),
            HeaderValue::from(applied.depth),
        );
        let resp = self.upstream.send(method, path, headers, body).await?;
        applied.upstream_status = Some(resp.status().as_u16());
        let (parts, incoming) = resp.into_parts();
        let mut out = Response::builder().status(parts.status);
        for name in [header::CONTENT_TYPE, header::CACHE_CONTROL] {
            if let Some(v) = parts.headers.get(&name) {
                out = out.header(name, v);
            }
        }
        let body = Body::new(Limited::new(incoming, self.config.max_upstream_bytes));
        out.body(body)
            .map_err(|e| Error::UpstreamResponse(e.to_string()))
    }
}

fn outcome_of(result: &Result<Response, Error>) -> String {
    match result {
        Ok(r) => format!("relayed:{}", r.status().as_u16()),
        Err(e) => format!("failed:{}", e.status().as_u16()),
    }
}
