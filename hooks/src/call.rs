//! The command hook's side (`hookwire hook`, `hookwire-hook`): one POST
//! of the agent's payload to the daemon, over loopback TCP or its Unix
//! socket, on one fresh HTTP/1.1 connection (module `http1`, blocking: a
//! command hook starts no runtime), bounded in time and size, and a
//! strict reading of the answer. Anything but a 200 carrying a JSON
//! object, or one marked failed closed, is an error the command turns
//! into the agent's blocking exit status.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::agents::Agent;
use crate::error::Error;
use crate::http1::{self, Timed};
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
/// presenting `token` when given, within `timeout`; blocks the calling
/// thread.
pub fn ask_daemon(
    endpoint: &Endpoint,
    token: Option<&str>,
    agent: Agent,
    payload: &[u8],
    timeout: Duration,
) -> Result<CallOutcome, Error> {
    let fail = |reason: String| Error::Daemon {
        endpoint: endpoint.to_string(),
        reason,
    };
    let deadline = Instant::now() + timeout;
    let path = format!("/v1/hooks/{}", agent.name());
    let request = |host| http1::Request {
        host,
        path: &path,
        token,
        body: payload,
        marker: FAILED_CLOSED_HEADER,
        max_body: MAX_ANSWER_BYTES,
    };
    let answer = match endpoint {
        Endpoint::Http(authority) => {
            let mut conn = connect_tcp(authority, deadline).map_err(&fail)?;
            // One request: no Nagle delay between its head and body.
            let _ = conn.set_nodelay(true);
            http1::exchange(&mut conn, &request(authority), deadline)
        }
        Endpoint::Unix(path) => {
            let mut conn = std::os::unix::net::UnixStream::connect(path)
                .map_err(|e| fail(format!("unreachable: {e}")))?;
            http1::exchange(&mut conn, &request("localhost"), deadline)
        }
    }
    .map_err(|e| match e.as_str() {
        "no answer in time" => fail(format!("no answer within {} ms", timeout.as_millis())),
        _ => fail(e),
    })?;
    if answer.status != 200 {
        let text: String = String::from_utf8_lossy(&answer.body)
            .chars()
            .take(200)
            .collect();
        return Err(fail(format!("answered {}: {text}", answer.status)));
    }
    if let Some(reason) = answer.marked {
        return Ok(CallOutcome::FailedClosed(reason));
    }
    match serde_json::from_slice::<serde_json::Value>(&answer.body) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(CallOutcome::Answer(v)),
        _ => Err(fail("the answer is not a JSON object".into())),
    }
}

/// A TCP connection to `authority` (`HOST:PORT`), each address tried
/// until the deadline.
fn connect_tcp(authority: &str, deadline: Instant) -> Result<std::net::TcpStream, String> {
    use std::net::ToSocketAddrs;
    let addrs = authority
        .to_socket_addrs()
        .map_err(|e| format!("unreachable: {e}"))?;
    let mut last = "no address".to_owned();
    for addr in addrs {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        match std::net::TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(1))) {
            Ok(conn) => {
                conn.bound(left).map_err(|e| format!("unreachable: {e}"))?;
                return Ok(conn);
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("unreachable: {last}"))
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
