//! A Streamable HTTP upstream: each message is a `POST` to the endpoint;
//! a request's answer is the response body (`application/json`) or one of
//! the events of a `text/event-stream` body, among the server's own
//! requests and notifications, which go to the session. The session id
//! the server assigns at `initialize` (`Mcp-Session-Id`) and the protocol
//! version it agreed are sent with every later message; `close` ends the
//! session with a `DELETE`. Bodies and events are bounded by the message
//! size bound, every exchange by the call timeout.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use hookwire_edge::https::{HttpsClient, UpstreamTls};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};

use super::shared::{Failure, Shared};
use crate::jsonrpc::{self, Id, Message};

/// The HTTP client every upstream session shares (one connection pool).
#[derive(Clone)]
pub struct Client(HttpsClient<Full<Bytes>>);

impl Client {
    /// A client for `http://` and `https://` upstreams: the edges' shared
    /// client with `tls` (the web PKI roots, plus the operator's CA and
    /// client certificate when configured).
    pub fn new(tls: &UpstreamTls) -> Self {
        Self(hookwire_edge::https::client(tls))
    }
}

impl Default for Client {
    fn default() -> Self {
        Self::new(&UpstreamTls::default())
    }
}

/// One session with a Streamable HTTP server.
pub(super) struct Http {
    client: Client,
    url: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    session: Arc<Mutex<Option<String>>>,
    version: Arc<Mutex<Option<String>>>,
    shared: Arc<Shared>,
}

impl Http {
    /// A session with the server at `url`, sending `headers` with every
    /// message.
    pub(super) fn new(
        client: Client,
        url: String,
        headers: Vec<(String, String)>,
        shared: Arc<Shared>,
    ) -> Result<Self, Failure> {
        let url: hyper::Uri = url
            .parse()
            .map_err(|e| Failure::Failed(format!("the upstream URL is not a URI: {e}")))?;
        let headers = headers
            .into_iter()
            .map(|(n, v)| {
                let name = hyper::header::HeaderName::try_from(n.as_str())
                    .map_err(|_| Failure::Failed(format!("{n:?} is not a header name")))?;
                let value = hyper::header::HeaderValue::try_from(v.as_str()).map_err(|_| {
                    Failure::Failed(format!("the value of header {n} is not valid"))
                })?;
                Ok((name, value))
            })
            .collect::<Result<_, Failure>>()?;
        Ok(Self {
            client,
            url,
            headers,
            session: Arc::default(),
            version: Arc::default(),
            shared,
        })
    }

    fn exchange(&self) -> Exchange {
        Exchange {
            client: self.client.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            session: self.session.clone(),
            version: self.version.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Posts a request; its answer is routed to its waiter by a task.
    pub(super) fn send_request(&self, message: Message) {
        let exchange = self.exchange();
        let timeout = self.shared.timeout;
        tokio::spawn(async move {
            let initialize =
                matches!(&message, Message::Request { method, .. } if method == "initialize");
            let Message::Request {
                id: crate::jsonrpc::Id::Num(id),
                ..
            } = &message
            else {
                return;
            };
            let id = *id;
            let outcome = tokio::time::timeout(timeout, exchange.post(&message, initialize)).await;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(f)) => exchange.shared.fail(id, f),
                Err(_) => exchange.shared.fail(id, Failure::Timeout(timeout)),
            }
        });
    }

    /// Posts a notification or an answer: accepted (202) or failed.
    pub(super) async fn send_other(&self, message: Message) -> Result<(), Failure> {
        let timeout = self.shared.timeout;
        tokio::time::timeout(timeout, self.exchange().post(&message, false))
            .await
            .map_err(|_| Failure::Timeout(timeout))?
    }

    /// Ends the server's session (`DELETE`), within the call timeout.
    pub(super) async fn close(&self) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(session) = session else { return };
        let mut req = Request::builder()
            .method(Method::DELETE)
            .uri(self.url.clone());
        for (n, v) in &self.headers {
            req = req.header(n, v);
        }
        let Ok(req) = req
            .header("mcp-session-id", session)
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        let _ = tokio::time::timeout(self.shared.timeout, self.client.0.request(req)).await;
    }
}

/// What one `POST` needs.
struct Exchange {
    client: Client,
    url: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    session: Arc<Mutex<Option<String>>>,
    version: Arc<Mutex<Option<String>>>,
    shared: Arc<Shared>,
}

impl Exchange {
    async fn post(&self, message: &Message, initialize: bool) -> Result<(), Failure> {
        let want = match message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let failed = |m: String| Failure::Failed(m);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (n, v) in &self.headers {
            req = req.header(n, v);
        }
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        // A stateless (2026-07-28) request's routing headers, made from
        // the body as sent; a handshake session's negotiated version.
        let routing = match message {
            Message::Request { method, params, .. } => {
                crate::core::stateless::upstream_headers(method, params)
            }
            _ => Vec::new(),
        };
        if routing.is_empty() {
            let version = self
                .version
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(v) = version {
                req = req.header("mcp-protocol-version", v);
            }
        }
        for (name, value) in routing {
            req = req.header(name, value);
        }
        let req = req
            .body(Full::new(Bytes::from(message.encode())))
            .map_err(|e| failed(format!("cannot build the request: {e}")))?;
        let resp = self
            .client
            .0
            .request(req)
            .await
            .map_err(|e| failed(format!("cannot reach the upstream: {e}")))?;
        let status = resp.status();
        if status == StatusCode::ACCEPTED {
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND
            && self
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
        {
            let reason = "the upstream ended its session (404)".to_owned();
            self.shared.break_with(reason.clone());
            return Err(failed(reason));
        }
        if !status.is_success() {
            return Err(failed(format!(
                "the upstream answered HTTP {}",
                status.as_u16()
            )));
        }
        if initialize
            && let Some(s) = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(s.to_owned());
        }
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let max = self.shared.max_bytes;
        let mut body = resp.into_body();
        if !sse {
            let bytes = http_body_util::Limited::new(body, max)
                .collect()
                .await
                .map_err(|e| {
                    failed(format!(
                        "the upstream's answer could not be read or exceeds {max} bytes: {e}"
                    ))
                })?
                .to_bytes();
            if bytes.is_empty() {
                return Ok(());
            }
            return self.deliver(&bytes, initialize).await.map(drop);
        }
        // The edges' shared parser: an event over the bound (or not
        // UTF-8) fails the exchange, so nothing the chain did not see
        // crosses and nothing is skipped silently.
        let mut events = hookwire_edge::sse::Parser::new(max);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| failed(format!("the upstream's stream broke: {e}")))?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            let events = events.feed(data).map_err(|e| match e {
                hookwire_edge::Error::SseEventTooLarge(_) => {
                    failed(format!("the upstream sent a message over {max} bytes"))
                }
                e => failed(format!("the upstream's event stream is malformed: {e}")),
            })?;
            for event in events {
                // An event with empty data (a server priming its stream
                // with an id and a retry) carries no message.
                if event.data.trim().is_empty() {
                    continue;
                }
                // The answer ends the exchange, even on a stream the
                // server keeps open.
                if self.deliver(event.data.as_bytes(), initialize).await? == want && want.is_some()
                {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Routes one message from the server; the id it answers, if it is an
    /// answer.
    async fn deliver(&self, bytes: &[u8], initialize: bool) -> Result<Option<Id>, Failure> {
        let message = jsonrpc::decode(bytes, self.shared.max_bytes)
            .map_err(|e| Failure::Failed(format!("the upstream sent a malformed message ({e})")))?;
        if initialize
            && let Message::Response {
                outcome: Ok(result),
                ..
            } = &message
            && let Some(v) = result.get("protocolVersion").and_then(|v| v.as_str())
        {
            *self.version.lock().unwrap_or_else(PoisonError::into_inner) = Some(v.to_owned());
        }
        let answers = match &message {
            Message::Response { id, .. } => Some(id.clone()),
            _ => None,
        };
        self.shared.route(message).await;
        Ok(answers)
    }
}
