//! The request that goes upstream: the client's headers minus the
//! connection's and the gateway's own, the model overrides the chain
//! released, `before_credentials` mutations, the pooled credential
//! attached the way the API takes it (`Api::pooled_credential_header`),
//! `after_credentials` mutations, the depth header. A replacement body
//! keeps the shape of answer the client asked for (`stream`).

use axum::http::header::{self, HeaderName};
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use serde_json::Value;

use super::governed::Governed;
use crate::api::{Api, ApiRequest};
use crate::credentials::{Chosen, CredentialPool};
use crate::error::Error;
use crate::extension::{Asked, StageMutation};
use crate::headers::DEPTH_HEADER;

/// Client headers never forwarded upstream.
const DROPPED_HEADERS: [&str; 12] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    // The gateway reads the upstream's body; it asks for it uncompressed.
    "accept-encoding",
    "expect",
];

/// The headers that carry a client's own upstream credential, dropped
/// when the pool supplies one.
const CREDENTIAL_HEADERS: [&str; 2] = ["authorization", "x-api-key"];

/// The client headers that go upstream: all but the connection's, the
/// gateway's own, and (when the pool supplies a key) the client's
/// credential headers.
pub(crate) fn forwarded_headers(client: &HeaderMap, pool_supplies_key: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in client {
        let n = name.as_str();
        if DROPPED_HEADERS.contains(&n)
            || n.starts_with("x-hookwire-")
            || (pool_supplies_key && CREDENTIAL_HEADERS.contains(&n))
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Clears, then sets (the extension's semantics). Names and values were
/// checked when the extension was read.
pub(crate) fn apply_stage(headers: &mut HeaderMap, stage: &StageMutation) {
    for name in &stage.clear_headers {
        headers.remove(name.as_str());
    }
    for (name, v) in &stage.set_headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&v.value),
        ) {
            headers.insert(n, v);
        }
    }
}

/// Sets the pooled credential in the header the API takes it in: `Bearer
/// KEY` in `Authorization`, the key alone anywhere else.
pub(crate) fn attach<A: Api>(headers: &mut HeaderMap, chosen: &Chosen) {
    let name = A::pooled_credential_header();
    if name.eq_ignore_ascii_case("authorization") {
        headers.insert(header::AUTHORIZATION, chosen.header.clone());
    } else if let Ok(n) = HeaderName::from_bytes(name.as_bytes()) {
        headers.insert(n, chosen.key.clone());
    }
}

/// The request's nesting depth (`x-hookwire-depth`, 0 when absent),
/// refused past `max`.
pub(crate) fn depth_of(headers: &HeaderMap, max: u32) -> Result<u32, Error> {
    let Some(v) = headers.get(DEPTH_HEADER) else {
        return Ok(0);
    };
    let depth = v
        .to_str()
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| Error::BadRequest(format!("{DEPTH_HEADER} must be an integer")))?;
    if depth > max {
        return Err(Error::TooDeep { depth, max });
    }
    Ok(depth)
}

/// The upstream request's headers and body, recorded in `g.applied`.
pub(crate) fn build<A: Api>(
    g: &mut Governed<'_>,
    pool: &CredentialPool,
    client: &HeaderMap,
    mut req: A::Request,
    asked: &Asked,
) -> Result<(HeaderMap, Bytes), Error> {
    let stream = req.view().stream;
    req.apply_overrides(&asked.model);
    g.applied.overrides = asked.model.clone();
    let mut headers = forwarded_headers(client, !pool.is_empty());
    apply_stage(&mut headers, &asked.before);
    g.applied.headers_set_before.extend(
        asked
            .before
            .set_headers
            .iter()
            .map(|(k, v)| (k.clone(), v.by.clone())),
    );
    let mut body = req.into_body();
    for stage in [&asked.before, &asked.after] {
        g.applied
            .headers_cleared
            .extend(stage.clear_headers.iter().cloned());
        if let Some(replacement) = &stage.body {
            body = replacement.value.clone();
            // The client asked for one shape of answer; a replacement
            // body does not change it.
            body.insert("stream".into(), Value::Bool(stream));
            g.applied.body_replaced_by = Some(replacement.by.clone());
        }
    }
    let wanted = asked.credential.as_ref().map(|c| c.value.as_str());
    let chosen = pool
        .choose(wanted)
        .map_err(|reason| Error::InvalidExtension {
            binding: asked
                .credential
                .as_ref()
                .map(|c| c.by.clone())
                .unwrap_or_default(),
            reason,
        })?;
    if let Some(c) = chosen {
        attach::<A>(&mut headers, &c);
        g.applied.credential = Some(c.label);
    }
    apply_stage(&mut headers, &asked.after);
    g.applied.headers_set_after.extend(
        asked
            .after
            .set_headers
            .iter()
            .map(|(k, v)| (k.clone(), v.by.clone())),
    );
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        HeaderName::from_static(DEPTH_HEADER),
        HeaderValue::from(g.applied.depth),
    );
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| Error::BadRequest(format!("the request cannot be encoded: {e}")))?;
    Ok((headers, Bytes::from(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn connection_and_gateway_headers_stay_and_a_pooled_key_replaces_the_clients() {
        let client = headers(&[
            ("host", "gw"),
            ("authorization", "Bearer client"),
            ("x-api-key", "client"),
            ("x-hookwire-session", "s"),
            ("accept-encoding", "gzip"),
            ("anthropic-version", "2023-06-01"),
            ("x-team", "a"),
        ]);
        let own = forwarded_headers(&client, false);
        assert_eq!(own.get("authorization").unwrap(), "Bearer client");
        assert_eq!(own.get("x-api-key").unwrap(), "client");
        assert!(own.get("host").is_none() && own.get("accept-encoding").is_none());
        assert!(own.get("x-hookwire-session").is_none());
        let pooled = forwarded_headers(&client, true);
        assert!(pooled.get("authorization").is_none() && pooled.get("x-api-key").is_none());
        assert_eq!(pooled.get("anthropic-version").unwrap(), "2023-06-01");
        assert_eq!(pooled.get("x-team").unwrap(), "a");
    }

    #[test]
    fn depth_is_an_integer_within_the_bound() {
        assert_eq!(depth_of(&HeaderMap::new(), 1).unwrap(), 0);
        assert_eq!(depth_of(&headers(&[(DEPTH_HEADER, "1")]), 1).unwrap(), 1);
        assert!(matches!(
            depth_of(&headers(&[(DEPTH_HEADER, "2")]), 1),
            Err(Error::TooDeep { depth: 2, max: 1 })
        ));
        assert!(matches!(
            depth_of(&headers(&[(DEPTH_HEADER, "x")]), 1),
            Err(Error::BadRequest(_))
        ));
    }

    #[test]
    fn a_pooled_key_goes_where_the_api_takes_it() {
        struct Keyed;
        impl Api for Keyed {
            const NAME: &'static str = "keyed";
            const ROUTE: &'static str = "/v1/keyed";
            const UPSTREAM_PATH: &'static str = "/keyed";
            type Request = <crate::api::chat::Chat as Api>::Request;
            type Response = <crate::api::chat::Chat as Api>::Response;
            type Assembler = <crate::api::chat::Chat as Api>::Assembler;
            type Writer = <crate::api::chat::Chat as Api>::Writer;
            fn decode_request(b: &[u8]) -> Result<Self::Request, Error> {
                crate::api::chat::Chat::decode_request(b)
            }
            fn decode_response(b: &[u8]) -> Result<Self::Response, Error> {
                crate::api::chat::Chat::decode_response(b)
            }
            fn error_body(e: &Error) -> (axum::http::StatusCode, Value) {
                crate::api::chat::Chat::error_body(e)
            }
            fn pooled_credential_header() -> &'static str {
                "x-api-key"
            }
        }
        let pool = CredentialPool::new()
            .with_key("k", crate::Secret::new("sk-1"))
            .unwrap();
        let chosen = pool.choose(None).unwrap().unwrap();
        let mut h = HeaderMap::new();
        attach::<crate::api::chat::Chat>(&mut h, &chosen);
        assert_eq!(h.get("authorization").unwrap(), "Bearer sk-1");
        assert!(h.get("authorization").unwrap().is_sensitive());
        let mut h = HeaderMap::new();
        attach::<Keyed>(&mut h, &chosen);
        assert_eq!(h.get("x-api-key").unwrap(), "sk-1");
        assert!(h.get("x-api-key").unwrap().is_sensitive());
        assert!(h.get("authorization").is_none());
    }
}
