//! The command hook's side (`hookwire hook`): one POST of the agent's
//! payload to the daemon, over loopback TCP or its Unix socket, on one
//! fresh HTTP/1.1 connection, bounded in time and size, and a strict
//! reading of the answer. Anything but a 200 carrying a JSON object, or
//! one marked failed closed, is an error the command turns into the
//! agent's blocking exit status.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::agents::Agent;
use crate::error::Error;
use crate::serve::FAILED_CLOSED_HEADER;

/// The largest daemon answer read, in bytes.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Where the daemon is: `http://HOST:PORT` or `unix:/path/hooks.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An HTTP base URL's authority (`127.0.0.1:8790`).
    Http(String),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl Endpoint {
    /// Whether the socket's permissions authenticate the caller (a token
    /// is then optional).
    pub fn is_unix(&self) -> bool {
        matches!(self, Self::Unix(_))
    }
}

impl FromStr for Endpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("`unix:` names no socket path".into());
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        let Some(rest) = s.strip_prefix("http://") else {
            return Err("the endpoint must be an http:// URL or unix:/path".into());
        };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err("the http:// endpoint must be a base URL (http://HOST:PORT)".into());
        }
        // Parsed as a URI authority, so that the Host header and the
        // connection agree.
        authority
            .parse::<hyper::http::uri::Authority>()
            .map_err(|e| format!("not a URL: {e}"))?;
        Ok(Self::Http(authority.to_owned()))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http(a) => write!(f, "http://{a}"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What the daemon answered.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The agent's output, a JSON object, to print as is.
    Answer(serde_json::Value),
    /// The daemon could not govern the payload, and says why.
    FailedClosed(String),
}

/// Asks the daemon at `endpoint` to govern one `agent` hook `payload`,
/// presenting `token` when given, within `timeout`.
pub async fn ask_daemon(
    endpoint: &Endpoint,
    token: Option<&str>,
    agent: Agent,
    payload: Vec<u8>,
    timeout: Duration,
) -> Result<CallOutcome, Error> {
    let fail = |reason: String| Error::Daemon {
        endpoint: endpoint.to_string(),
        reason,
    };
    let host = match endpoint {
        Endpoint::Http(authority) => authority.as_str(),
        Endpoint::Unix(_) => "localhost",
    };
    let mut request = hyper::Request::post(format!("/v1/hooks/{}", agent.name()))
        .header(hyper::header::HOST, host)
        .header(hyper::header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {}", token.trim()),
        );
    }
    let request = request
        .body(Full::new(Bytes::from(payload)))
        .map_err(|e| fail(format!("cannot build the request: {e}")))?;
    let exchange = async {
        let response = match endpoint {
            Endpoint::Http(authority) => {
                let stream = tokio::net::TcpStream::connect(authority.as_str())
                    .await
                    .map_err(|e| fail(format!("unreachable: {e}")))?;
                // One request: no Nagle delay between its head and body.
                let _ = stream.set_nodelay(true);
                send(TokioIo::new(stream), request).await
            }
            Endpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|e| fail(format!("unreachable: {e}")))?;
                send(TokioIo::new(stream), request).await
            }
        }
        .map_err(&fail)?;
        let status = response.status();
        let failed = response
            .headers()
            .get(FAILED_CLOSED_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| fail(format!("unreadable answer: {e}")))?
            .to_bytes();
        Ok::<_, Error>((status, failed, body))
    };
    let (status, failed, body) = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| fail(format!("no answer within {} ms", timeout.as_millis())))??;
    if status != hyper::StatusCode::OK {
        let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return Err(fail(format!("answered {status}: {text}")));
    }
    if let Some(reason) = failed {
        return Ok(CallOutcome::FailedClosed(reason));
    }
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(CallOutcome::Answer(v)),
        _ => Err(fail("the answer is not a JSON object".into())),
    }
}

/// Sends `request` on a fresh HTTP/1.1 connection over `io`.
async fn send<I>(
    io: I,
    request: hyper::Request<Full<Bytes>>,
) -> Result<hyper::Response<Incoming>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("no HTTP connection: {e}"))?;
    // The connection is driven beside the request; it ends with the
    // answer's body or when the exchange is dropped (timeout).
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("unreachable: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_strictly() {
        assert_eq!(
            "http://127.0.0.1:8790/".parse::<Endpoint>(),
            Ok(Endpoint::Http("127.0.0.1:8790".into()))
        );
        assert_eq!(
            "unix:/run/user/1000/hookwire/hooks.sock".parse::<Endpoint>(),
            Ok(Endpoint::Unix("/run/user/1000/hookwire/hooks.sock".into()))
        );
        for bad in [
            "unix:",
            "https://127.0.0.1:8790",
            "127.0.0.1:8790",
            "http://",
            "http://127.0.0.1:8790/v1",
            "http://user@127.0.0.1:8790",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad}");
        }
        assert_eq!(
            Endpoint::Unix("/s".into()).to_string(),
            "unix:/s",
            "named as given"
        );
    }
}
