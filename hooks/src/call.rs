//! The command hook's side (`hookwire hook`): one POST of the agent's
//! payload to the daemon, bounded in time and size, and a strict reading
//! of the answer. Anything but a 200 carrying a JSON object, or one
//! marked failed closed, is an error the command turns into the agent's
//! blocking exit status.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::agents::Agent;
use crate::error::Error;
use crate::serve::FAILED_CLOSED_HEADER;

/// The largest daemon answer read, in bytes.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// What the daemon answered.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The agent's output, a JSON object, to print as is.
    Answer(serde_json::Value),
    /// The daemon could not govern the payload, and says why.
    FailedClosed(String),
}

/// Asks the daemon at `endpoint` (e.g. `http://127.0.0.1:8790`) to govern
/// one `agent` hook `payload`, presenting `token`, within `timeout`.
pub async fn ask_daemon(
    endpoint: &str,
    token: &str,
    agent: Agent,
    payload: Vec<u8>,
    timeout: Duration,
) -> Result<CallOutcome, Error> {
    let fail = |reason: String| Error::Daemon {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let base = endpoint.trim_end_matches('/');
    if !base.starts_with("http://") {
        return Err(fail("the endpoint must be an http:// URL".into()));
    }
    let uri: hyper::Uri = format!("{base}/v1/hooks/{}", agent.name())
        .parse()
        .map_err(|e| fail(format!("not a URL: {e}")))?;
    let request = hyper::Request::post(uri)
        .header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {}", token.trim()),
        )
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(payload)))
        .map_err(|e| fail(format!("cannot build the request: {e}")))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| fail(format!("unreachable: {e}")))?;
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
