//! The webhook receiver the notification tests serve on 127.0.0.1:0, and
//! the log capture they read back.

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};

use super::WAIT;

/// One request a receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Received {
    /// The body, parsed.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// How the receiver answers on a path: `/ok/*` 200, `/down/*` 503,
/// `/flaky/*` 503 twice then 200, `/refuse/*` 400, `/slow/*` 200 once a
/// permit is released.
#[derive(Clone)]
struct Receiver {
    seen: mpsc::UnboundedSender<Received>,
    flaky: Arc<Mutex<u32>>,
    slow: Arc<Semaphore>,
}

async fn receive(
    State(r): State<Receiver>,
    Path((mode, rest)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let path = format!("/{mode}/{rest}");
    let _ = r.seen.send(Received {
        path,
        headers,
        body,
    });
    match mode.as_str() {
        "ok" => StatusCode::OK,
        "down" => StatusCode::SERVICE_UNAVAILABLE,
        "refuse" => StatusCode::BAD_REQUEST,
        "flaky" => {
            let mut n = r.flaky.lock().unwrap();
            *n += 1;
            if *n <= 2 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }
        "slow" => {
            let permit = r.slow.acquire().await.unwrap();
            permit.forget();
            StatusCode::OK
        }
        _ => StatusCode::NOT_FOUND,
    }
}

/// The receiver's address and what it received.
pub(crate) struct Served {
    pub(crate) base: String,
    seen: mpsc::UnboundedReceiver<Received>,
    pub(crate) slow: Arc<Semaphore>,
    /// Received, not yet taken by `next`.
    waiting: Vec<Received>,
    /// Everything received.
    pub(crate) all: Vec<Received>,
}

impl Served {
    /// The next request, in arrival order, on a path starting with
    /// `prefix`.
    pub(crate) async fn next(&mut self, prefix: &str) -> Received {
        if let Some(i) = self.waiting.iter().position(|r| r.path.starts_with(prefix)) {
            return self.waiting.remove(i);
        }
        tokio::time::timeout(WAIT, async {
            loop {
                let r = self.seen.recv().await.expect("the receiver runs");
                self.all.push(r.clone());
                if r.path.starts_with(prefix) {
                    return r;
                }
                self.waiting.push(r);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("nothing arrived on {prefix}"))
    }
}

pub(crate) async fn receiver() -> Served {
    let (tx, rx) = mpsc::unbounded_channel();
    let slow = Arc::new(Semaphore::new(0));
    let state = Receiver {
        seen: tx,
        flaky: Arc::default(),
        slow: Arc::clone(&slow),
    };
    let app = Router::new()
        .route("/{mode}/{*rest}", post(receive))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Served {
        base,
        seen: rx,
        slow,
        waiting: Vec::new(),
        all: Vec::new(),
    }
}

/// Log lines written while the guard lives (this thread's, which on a
/// current-thread runtime are every task's).
#[derive(Clone, Default)]
pub(crate) struct Logs(pub(crate) Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
