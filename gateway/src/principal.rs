//! Who is asking, settled before any route runs: the layer authenticates
//! every request and hands the handlers the [`Principal`] that owns what
//! the request opens or continues (sessions, answer ids, flights).
//!
//! With a clients file (`GatewayConfig::clients`), the principal is the
//! client whose token the request presents where its SDK sends an API key
//! (`Authorization: Bearer`; Messages also `x-api-key`); no token, a
//! token no line lists (mistyped or revoked) or a malformed header is
//! refused `401`, and a clients file that cannot be read refuses
//! everyone `503` (fail closed), each in the route's API shape. Without
//! one, the principal is the client's own credential, hashed, as the
//! upstream sees it. A request carrying a callback token on a governed
//! route is an interceptor's own: the token, checked by the core before
//! anything else, is its authentication.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::api::{Api, chat::Chat, messages::Messages, responses::Responses};
use crate::error::Error;
use crate::headers::CALLBACK_HEADER;
use hookwire_edge::clients::WatchedClients;

/// What owns sessions and answers: a SHA-256 (see [`Principal::owner`]).
pub(crate) type Owner = [u8; 32];

/// The header Anthropic's SDKs send an API key in.
const API_KEY_HEADER: &str = "x-api-key";

/// The party a request acts for.
#[derive(Clone, Debug)]
pub(crate) struct Principal {
    /// What owns the sessions and answers the request opens: a SHA-256
    /// of the client's name, or of its credential without clients.
    pub(crate) owner: Owner,
    /// The client's name in the clients file (none without one).
    pub(crate) name: Option<String>,
}

/// Which API's terms a route answers in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    OpenAi,
    Messages,
}

impl Shape {
    fn of(path: &str) -> Self {
        if crate::access::api_of(path) == Messages::NAME {
            Self::Messages
        } else {
            Self::OpenAi
        }
    }

    fn error(self, e: &Error) -> Response {
        let (status, body) = match self {
            Self::OpenAi => Chat::error_body(e),
            Self::Messages => Messages::error_body(e),
        };
        (status, axum::Json(body)).into_response()
    }

    /// The credential the client sent, as the owner of its sessions
    /// without a clients file: Messages' `x-api-key`, else
    /// `Authorization`; elsewhere `Authorization`, else `x-api-key`.
    fn credential(self, headers: &HeaderMap) -> Option<&[u8]> {
        let (first, second) = match self {
            Self::Messages => (API_KEY_HEADER, header::AUTHORIZATION.as_str()),
            Self::OpenAi => (header::AUTHORIZATION.as_str(), API_KEY_HEADER),
        };
        headers
            .get(first)
            .or_else(|| headers.get(second))
            .map(|v| v.as_bytes())
    }
}

/// The owner of a client's sessions without a clients file: SHA-256 of
/// its credential (of nothing when it sent none).
pub(crate) fn owner_of_credential(credential: Option<&[u8]>) -> Owner {
    Sha256::digest(credential.unwrap_or_default()).into()
}

/// The owner of a listed client's sessions. The prefix holds control
/// bytes no header value can, so no credential's owner is ever a
/// client's.
pub(crate) fn owner_of_client(name: &str) -> Owner {
    let mut h = Sha256::new();
    h.update(b"\x01client\x00");
    h.update(name.as_bytes());
    h.finalize().into()
}

/// Whether the request is an interceptor's callback on a governed route,
/// which the core authenticates by its token.
fn is_callback(request: &Request) -> bool {
    request.method() == Method::POST
        && request.headers().contains_key(CALLBACK_HEADER)
        && [Chat::ROUTE, Responses::ROUTE, Messages::ROUTE].contains(&request.uri().path())
}

/// The token the request presents where its SDK sends an API key.
fn presented(headers: &HeaderMap, shape: Shape) -> Result<&str, Error> {
    let refused = |why: &str| Error::Unauthenticated(why.to_owned());
    if shape == Shape::Messages
        && let Some(key) = headers.get(API_KEY_HEADER)
    {
        return key
            .to_str()
            .ok()
            .filter(|k| hookwire_edge::token::is_token68(k))
            .ok_or_else(|| refused("the x-api-key header is not a token"));
    }
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(refused(
            "this gateway admits listed clients only: send your client token as the API key \
             (`hookwire gateway token --name NAME` makes one)",
        ));
    };
    let value = value
        .to_str()
        .map_err(|_| refused("the authorization header is not visible ASCII"))?;
    hookwire_edge::token::bearer(value).map_err(|e| Error::Unauthenticated(e.to_string()))
}

/// The principal of a request, or why it is refused.
fn principal(
    clients: Option<&WatchedClients>,
    request: &Request,
    shape: Shape,
) -> Result<Principal, Error> {
    let headers = request.headers();
    let unlisted = || Principal {
        owner: owner_of_credential(shape.credential(headers)),
        name: None,
    };
    let Some(clients) = clients else {
        return Ok(unlisted());
    };
    if is_callback(request) {
        return Ok(unlisted());
    }
    let token = presented(headers, shape)?;
    match clients.authenticate(token) {
        Ok(Some(name)) => Ok(Principal {
            owner: owner_of_client(&name),
            name: Some(name),
        }),
        Ok(None) => Err(Error::Unauthenticated(
            "the client token is not listed (mistyped, or revoked)".into(),
        )),
        Err(e) => {
            tracing::error!(target: "hookwire_gateway::access", "every client refused: {e}");
            Err(Error::ClientsUnavailable)
        }
    }
}

/// The layer: authenticates the request, then runs the route with its
/// [`Principal`] in the request's extensions.
pub(crate) async fn authenticate(
    State(clients): State<Option<Arc<WatchedClients>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let shape = Shape::of(request.uri().path());
    match principal(clients.as_deref(), &request, shape) {
        Ok(p) => {
            if let Some(name) = &p.name {
                crate::applied::note_client(name);
            }
            request.extensions_mut().insert(p);
            next.run(request).await
        }
        Err(e) => {
            tracing::info!(target: "hookwire_gateway::access", "request refused: {e}");
            shape.error(&e).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_of_clients_and_of_credentials_never_meet() {
        assert_ne!(owner_of_client("a"), owner_of_client("b"));
        assert_ne!(owner_of_client("a"), owner_of_credential(Some(b"client:a")));
        assert!(axum::http::HeaderValue::from_bytes(b"\x01client\x00a").is_err());
        assert_eq!(
            owner_of_credential(Some(b"k")),
            owner_of_credential(Some(b"k"))
        );
        assert_ne!(owner_of_credential(None), owner_of_credential(Some(b"k")));
    }

    #[test]
    fn without_clients_the_owner_is_the_credential_each_sdk_sends() {
        let mut h = HeaderMap::new();
        assert_eq!(Shape::Messages.credential(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer tok".parse().unwrap());
        assert_eq!(Shape::Messages.credential(&h), Some(&b"Bearer tok"[..]));
        h.insert(API_KEY_HEADER, "sk-ant-1".parse().unwrap());
        assert_eq!(Shape::Messages.credential(&h), Some(&b"sk-ant-1"[..]));
        assert_eq!(Shape::OpenAi.credential(&h), Some(&b"Bearer tok"[..]));
        h.remove(header::AUTHORIZATION);
        assert_eq!(Shape::OpenAi.credential(&h), Some(&b"sk-ant-1"[..]));
    }

    #[test]
    fn the_token_is_where_each_sdk_sends_its_key() {
        let mut h = HeaderMap::new();
        assert!(matches!(
            presented(&h, Shape::OpenAi),
            Err(Error::Unauthenticated(_))
        ));
        h.insert(header::AUTHORIZATION, "bearer tok-1".parse().unwrap());
        assert_eq!(presented(&h, Shape::OpenAi).unwrap(), "tok-1");
        assert_eq!(presented(&h, Shape::Messages).unwrap(), "tok-1");
        h.insert(API_KEY_HEADER, "tok-2".parse().unwrap());
        assert_eq!(presented(&h, Shape::Messages).unwrap(), "tok-2");
        assert_eq!(presented(&h, Shape::OpenAi).unwrap(), "tok-1");
        h.insert(API_KEY_HEADER, "not a token".parse().unwrap());
        assert!(presented(&h, Shape::Messages).is_err());
        h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        let e = presented(&h, Shape::OpenAi).unwrap_err().to_string();
        assert!(!e.contains("abc"), "{e}");
    }
}
