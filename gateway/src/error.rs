//! The gateway's one error type. Configuration and serving errors stop
//! the gateway; the request errors become the body the client receives in
//! its API's own shape (`Api::error_body`; OpenAI's is
//! [`Error::to_openai_json`], `{"error": {"message", "type", "param",
//! "code"}}`), with a status the SDKs map to their own exception classes. No
//! variant ever carries an upstream key: credentials are named by their
//! label only.

use std::net::SocketAddr;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hookwire::InterceptionPoint;
use serde_json::json;

/// Everything that can go wrong in the gateway.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The upstream URL is not an absolute `http`/`https` URL.
    #[error("invalid upstream URL {url:?}: {reason}")]
    InvalidUpstream {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A credential of the pool could not be read (named by its label,
    /// never by its value).
    #[error("credential {label}: {reason}")]
    Credential {
        /// `env:NAME` or `file:PATH#LINE`.
        label: String,
        /// What is wrong (missing, empty, not a header value).
        reason: String,
    },
    /// A configuration value is out of range.
    #[error("invalid gateway configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("{}", hookwire::listen::BindFailure::new(.addr, .source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP server stopped on an I/O error.
    #[error("serving failed: {0}")]
    Serve(std::io::Error),

    /// The request body exceeds the configured bound.
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The request is not one the gateway can govern.
    #[error("{0}")]
    BadRequest(String),
    /// A combined verdict denied the request at `point`: nothing (more)
    /// went upstream.
    #[error("denied at {point}: {reason}{}", .message.as_deref().map(|m| format!(" \u{2014} {m}")).unwrap_or_default())]
    Denied {
        /// Where.
        point: InterceptionPoint,
        /// The combined verdict's machine reason.
        reason: String,
        /// The verdict's message, bounded, so that the agent and its
        /// model can correct themselves (`None`: the verdict gave none).
        message: Option<String>,
    },
    /// An emission could not be made (the host refused it): failed
    /// closed, nothing forwarded.
    #[error("the hookwire host failed closed: {0}")]
    Host(#[from] hookwire_client::Error),
    /// An interceptor asked for an upstream mutation or model override
    /// the gateway cannot apply: failed closed, nothing forwarded.
    #[error("interceptor {binding:?} asked for something the gateway cannot apply: {reason}")]
    InvalidExtension {
        /// The binding that asked.
        binding: String,
        /// What is wrong with the request.
        reason: String,
    },
    /// A verdict's transform changed what the gateway cannot write back
    /// into the client's request or answer (e.g. the number of
    /// `pre_model_call` messages, or text into something else): failed
    /// closed, nothing forwarded.
    #[error("a transform the gateway cannot apply: {0}")]
    Transform(String),
    /// A callback token was missing its grant: forged, replayed, expired
    /// or revoked.
    #[error("callback token refused: {0}")]
    CallbackRefused(&'static str),
    /// The request presents no client token the clients file lists (no
    /// token, a malformed header, a mistyped or revoked token); says
    /// why, never the token.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The clients file cannot be read or parsed: every client is
    /// refused until it is fixed (the log says why).
    #[error(
        "the gateway cannot check client tokens now (its clients file is unusable); retry later"
    )]
    ClientsUnavailable,
    /// The request names an agent session its principal may not join
    /// (another principal's, or it presented no credential;
    /// `crate::hooks`): refused, neither joined nor governed as a
    /// conversation of its own.
    #[error("{0} is an agent session of another principal; present the credential that owns it")]
    NotOwner(String),
    /// The request is nested deeper than the configured bound.
    #[error("request depth {depth} exceeds the bound {max}")]
    TooDeep {
        /// The request's depth.
        depth: u32,
        /// The bound.
        max: u32,
    },
    /// The session table is full and every session in it is in a
    /// request (an idle one would have been displaced).
    #[error("too many sessions in requests at once ({0}); retry later")]
    Overloaded(usize),
    /// Every one of the sessions the client credential may hold is in a
    /// request (an idle one would have been displaced): wait for one.
    #[error(
        "every one of the {0} sessions this credential may hold is in a request; retry when one finished"
    )]
    Quota(usize),
    /// The client runs as many requests at once as one client may
    /// (`MAX_FLIGHTS_PER_CLIENT`): wait for one to finish.
    #[error(
        "this client runs the most requests at once one client may ({0}); retry when one finished"
    )]
    RequestQuota(usize),
    /// A retry of the request joined its run and receives its streamed
    /// answer (module `core::flight`); this connection does not.
    #[error("superseded: {0}")]
    Superseded(&'static str),
    /// The upstream refused a request the gateway made for the client
    /// (reading back a continued answer with the client's own key): its
    /// status and JSON error reach the client unchanged, as its own
    /// errors do on a forwarded request.
    #[error("the upstream answered {status}")]
    UpstreamRefused {
        /// The upstream's status.
        status: StatusCode,
        /// Its error body, in the API's own shape.
        body: serde_json::Value,
    },
    /// The upstream could not be reached or broke off.
    #[error("upstream unavailable: {0}")]
    Upstream(String),
    /// The upstream answered with something the gateway cannot read or
    /// that exceeds its bound.
    #[error("upstream response unusable: {0}")]
    UpstreamResponse(String),
}

impl Error {
    /// The HTTP status the client receives.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BadRequest(_) | Self::TooDeep { .. } => StatusCode::BAD_REQUEST,
            Self::Denied { .. } | Self::NotOwner(_) => StatusCode::FORBIDDEN,
            Self::CallbackRefused(_) | Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::Overloaded(_) | Self::ClientsUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Quota(_) | Self::RequestQuota(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Superseded(_) => StatusCode::CONFLICT,
            Self::Upstream(_) | Self::UpstreamResponse(_) => StatusCode::BAD_GATEWAY,
            Self::UpstreamRefused { status, .. } => *status,
            Self::InvalidUpstream { .. }
            | Self::Credential { .. }
            | Self::Config(_)
            | Self::Bind { .. }
            | Self::Serve(_)
            | Self::Host(_)
            | Self::InvalidExtension { .. }
            | Self::Transform(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The OpenAI error `type` and `code` of this error.
    fn kind(&self) -> (&'static str, String) {
        match self {
            Self::BodyTooLarge { .. } => ("invalid_request_error", "request_too_large".into()),
            Self::BadRequest(_) => ("invalid_request_error", "invalid_request".into()),
            Self::TooDeep { .. } => ("invalid_request_error", "hookwire_depth_exceeded".into()),
            Self::NotOwner(_) => ("permission_error", "hookwire_session_not_owned".into()),
            Self::Denied { reason, .. } => ("hookwire_denied", reason.clone()),
            Self::CallbackRefused(_) => ("authentication_error", "invalid_callback_token".into()),
            Self::Unauthenticated(_) => ("invalid_request_error", "invalid_api_key".into()),
            Self::ClientsUnavailable => ("server_error", "hookwire_clients_unavailable".into()),
            Self::Overloaded(_) => ("server_error", "hookwire_overloaded".into()),
            Self::Quota(_) => ("rate_limit_error", "hookwire_session_quota".into()),
            Self::RequestQuota(_) => ("rate_limit_error", "hookwire_request_quota".into()),
            Self::Superseded(_) => ("invalid_request_error", "hookwire_superseded".into()),
            Self::Upstream(_) | Self::UpstreamResponse(_) => {
                ("server_error", "upstream_unavailable".into())
            }
            _ => ("hookwire_host_error", "hookwire_failed_closed".into()),
        }
    }

    /// The OpenAI-shaped JSON body of this error.
    pub fn to_openai_json(&self) -> serde_json::Value {
        if let Self::UpstreamRefused { body, .. } = self {
            return body.clone();
        }
        let (kind, code) = self.kind();
        json!({
            "error": {
                "message": self.to_string(),
                "type": kind,
                "param": null,
                "code": code,
            }
        })
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        if self.status().is_server_error() {
            tracing::warn!(error = %self, "request failed");
        }
        (self.status(), axum::Json(self.to_openai_json())).into_response()
    }
}

/// The session table's refusals (`hookwire_edge::sessions`) in the
/// gateway's terms: another client's session id, a credential's quota, a
/// full table, each when no conversation could be displaced.
impl From<hookwire_edge::Error> for Error {
    fn from(e: hookwire_edge::Error) -> Self {
        match e {
            hookwire_edge::Error::SessionNotOwned => Self::Denied {
                point: InterceptionPoint::AgentStartup,
                reason: "hookwire:session_owned_by_another_client".into(),
                message: None,
            },
            hookwire_edge::Error::SessionQuota(n) => Self::Quota(n),
            hookwire_edge::Error::SessionsFull(n) => Self::Overloaded(n),
            other => Self::Config(other.to_string()),
        }
    }
}
