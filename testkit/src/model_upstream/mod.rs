//! Recording model upstreams, one per wire API the gateway speaks, each
//! faithful to its provider's shapes (bodies, stream events in their
//! documented order, error bodies), served on `127.0.0.1:0`, recording
//! every request it receives (path, headers, body); and the official
//! Python SDKs (pinned in examples/gateway/requirements.txt and
//! tests/gateway-requirements.txt, installed into .cache/venv by
//! scripts/setup.sh) run as child processes against a base URL.
//!
//! Each upstream answers from a script: a function of the request body
//! giving a [`Reply`]. [`chat::conversation`], [`responses::conversation`]
//! and [`messages::conversation`] are the one conversation the tests
//! script, written once per API's transcript shape.

#![allow(dead_code)]

pub mod chat;
pub mod clients;
pub mod messages;
pub mod responses;
pub mod responses_stored;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

/// One request an upstream received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request path (`/v1/responses`).
    pub path: String,
    /// Its headers, names lowercase.
    pub headers: HashMap<String, String>,
    /// Its body as JSON (`null` when none or not JSON).
    pub body: Value,
}

/// What an upstream answers one request with.
pub enum Reply {
    /// A text answer.
    Answer(String),
    /// Function tool calls: id, name, arguments.
    Calls(Vec<(&'static str, &'static str, Value)>),
    /// An error: the status and the body, in the API's own shape.
    Error(u16, Value),
}

/// The script an upstream answers from.
pub type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The most requests one upstream records (a runaway client loop fails
/// the test instead of filling memory).
const MAX_RECORDED: usize = 1000;

/// What every route of an upstream shares: the log, the script, and the
/// conversations it stores (Responses: by response id, for
/// `previous_response_id`).
#[derive(Clone)]
pub struct Recorder {
    seen: Arc<Mutex<Vec<Received>>>,
    script: Script,
    stored: Arc<Mutex<HashMap<String, Vec<Value>>>>,
}

impl Recorder {
    /// Records one request.
    pub fn record(&self, path: &str, headers: &HeaderMap, body: Value) {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let mut seen = self.seen.lock().unwrap();
        assert!(
            seen.len() < MAX_RECORDED,
            "more than {MAX_RECORDED} requests"
        );
        seen.push(Received {
            path: path.into(),
            headers,
            body,
        });
    }

    /// The script's reply to a body.
    pub fn reply(&self, body: &Value) -> Reply {
        (self.script)(body)
    }

    /// The transcript stored under `id`.
    pub fn stored(&self, id: &str) -> Option<Vec<Value>> {
        self.stored.lock().unwrap().get(id).cloned()
    }

    /// Stores a transcript under `id` (bounded like the log).
    pub fn store(&self, id: String, transcript: Vec<Value>) {
        let mut stored = self.stored.lock().unwrap();
        assert!(
            stored.len() < MAX_RECORDED,
            "more than {MAX_RECORDED} stored"
        );
        stored.insert(id, transcript);
    }
}

/// A running upstream; stops when dropped.
pub struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Received>>>,
    _stop: oneshot::Sender<()>,
}

impl Upstream {
    /// Serves `routes` (built over a [`Recorder`] of `script`) on
    /// `127.0.0.1:0`.
    pub async fn serve(
        script: impl Fn(&Value) -> Reply + Send + Sync + 'static,
        routes: impl FnOnce(Recorder) -> Router,
    ) -> Self {
        let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
        let app = routes(Recorder {
            seen: seen.clone(),
            script: Arc::new(script),
            stored: Arc::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self {
            addr,
            seen,
            _stop: stop,
        }
    }

    /// The base URL an OpenAI SDK (and the gateway's `--upstream`) takes,
    /// `http://ADDR/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL the Anthropic SDK takes, `http://ADDR`.
    pub fn root(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests received on `path`.
    pub fn at(&self, path: &str) -> Vec<Received> {
        self.seen().into_iter().filter(|r| r.path == path).collect()
    }

    /// The Chat Completions requests.
    pub fn chats(&self) -> Vec<Received> {
        self.at("/v1/chat/completions")
    }
}

/// One OpenAI upstream serving both Chat Completions and Responses (an
/// agent may speak either to one base URL), answering each from its own
/// scripted conversation.
pub async fn openai() -> Upstream {
    let script = |body: &Value| {
        if body.get("messages").is_some() {
            chat::conversation(body)
        } else {
            responses::conversation(body)
        }
    };
    Upstream::serve(script, |r| {
        chat::routes()
            .merge(responses::routes())
            .fallback(responses::unknown)
            .with_state(r)
    })
    .await
}

/// The body as JSON; `None` when it is not.
pub fn json_body(body: &Bytes) -> Option<Value> {
    serde_json::from_slice(body).ok()
}

/// A `text/event-stream` response of `frames`, paced 2 ms apart
/// so that a client reads them as separate chunks.
pub fn event_stream(frames: Vec<Bytes>) -> Response {
    let stream = futures::stream::iter(frames).then(|f| async move {
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok::<_, Infallible>(f)
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// One named event (Responses, Messages): `event: NAME` and its data.
pub fn named(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// A text cut into pieces of at most `n` characters (the deltas of a
/// streamed answer).
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The text the scripted conversation answers tool results with.
pub fn done(results: &[String]) -> Reply {
    Reply::Answer(format!("done: {}", results.join(" | ")))
}

/// The scripted conversation's answer to a user's text: two shell
/// commands for "List the files", a rate-limit error for "rate limit me"
/// (`error` is the API's own body for it), an answer carrying a key for
/// "secret", a greeting otherwise.
pub fn answer_user(text: &str, calls: [&'static str; 2], error: impl FnOnce() -> Value) -> Reply {
    if text.contains("List the files") {
        Reply::Calls(vec![
            (calls[0], "bash", serde_json::json!({"cmd": "ls"})),
            (calls[1], "bash", serde_json::json!({"cmd": "rm -rf /"})),
        ])
    } else if text.contains("rate limit me") {
        Reply::Error(429, error())
    } else if text.contains("secret") {
        Reply::Answer(SECRET_ANSWER.into())
    } else {
        Reply::Answer(GREETING.into())
    }
}

/// The scripted greeting.
pub const GREETING: &str = "Hello from upstream";

/// The scripted answer carrying a key (what an output guard withholds).
pub const SECRET_ANSWER: &str = "Hello from upstream. The key is AKIA0123456789 and more. Bye.";
