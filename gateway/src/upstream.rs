//! The upstream model provider: one pooled HTTP/1.1 client (the edges'
//! shared client, `hookwire_edge::https`: rustls with the web PKI roots,
//! plus the operator's CA and client certificate when configured),
//! requests with a bound on the time to the response head, and bodies
//! collected up to a bound.

use std::time::Duration;

use axum::http::{HeaderMap, Method, Request, Response, Uri};
use bytes::Bytes;
use hookwire_edge::https::{HttpsClient, UpstreamTls};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;

use crate::error::Error;

/// The upstream and the client that reaches it.
#[derive(Clone, Debug)]
pub(crate) struct Upstream {
    /// The base URL without a trailing slash, e.g. `https://api.openai.com/v1`.
    base: String,
    client: HttpsClient<Full<Bytes>>,
    timeout: Duration,
}

impl Upstream {
    /// The client for `base` (an absolute `http` or `https` URL), with
    /// `tls` toward an `https` one.
    pub(crate) fn new(base: &str, timeout: Duration, tls: &UpstreamTls) -> Result<Self, Error> {
        let bad = |reason: &str| Error::InvalidUpstream {
            url: base.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = base.parse().map_err(|_| bad("not a URL"))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(bad("the scheme must be http or https")),
        }
        if uri.host().is_none() {
            return Err(bad("no host"));
        }
        if uri.query().is_some() {
            return Err(bad("a query string is not allowed"));
        }
        let client = hookwire_edge::https::client(tls);
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            client,
            timeout,
        })
    }

    /// The base URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Sends `method base+path` with `headers` and `body`; the response
    /// head must arrive within the timeout.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, Error> {
        let uri = format!("{}{path}", self.base);
        let mut req = Request::builder()
            .method(method)
            .uri(&uri)
            .body(Full::new(body))
            .map_err(|e| Error::Upstream(format!("cannot build the request: {e}")))?;
        *req.headers_mut() = headers;
        match tokio::time::timeout(self.timeout, self.client.request(req)).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(Error::Upstream(describe(&e))),
            Err(_) => Err(Error::Upstream(format!(
                "no response within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}

/// The error's chain of causes, without anything request-specific (hyper
/// errors carry no headers).
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Collects a body of at most `limit` bytes within `timeout`.
pub(crate) async fn collect(
    body: Incoming,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Error> {
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Error::UpstreamResponse(
            format!("the response exceeds {limit} bytes"),
        )),
        Ok(Err(e)) => Err(Error::Upstream(format!("the response broke off: {e}"))),
        Err(_) => Err(Error::Upstream(format!(
            "the response body did not complete within {} ms",
            timeout.as_millis()
        ))),
    }
}
