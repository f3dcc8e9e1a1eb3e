//! What every mock upstream is made of: the requests it received
//! ([`Received`]), the script it answers from ([`Reply`], [`Script`]),
//! the recorder its routes share ([`Recorder`]), the running server
//! ([`Upstream`]), and the pieces of a streamed answer (server-sent event
//! frames paced apart, named events, text cut into deltas).

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
