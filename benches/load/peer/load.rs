//! The section's HTTP load: one request checked end to end, an open-loop
//! run at a fixed rate (latency from each request's intended send time),
//! and a closed-loop window at a fixed concurrency (requests per second).
//! Every request names its conversation (`x-hookwire-session`, which only
//! the gateway reads), and a conversation is never used by two requests
//! at once: each is one governed turn.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::apis::Api;
use super::stats;

/// The largest answer a client reads.
const MAX_ANSWER: usize = 1 << 20;
/// How long one request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The most requests an open-loop run lets be in flight: a path further
/// behind than this cannot sustain the rate, and the run fails.
const MAX_IN_FLIGHT: usize = 2048;

/// An HTTP/1.1 client with a keep-alive pool, shared by every path.
#[derive(Clone)]
pub struct Http(Client<HttpConnector, Full<Bytes>>);

impl Http {
    /// A client whose connections set `TCP_NODELAY`.
    pub fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self(
            Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(1024)
                .build(connector),
        )
    }
}

impl Http {
    /// Whether a `GET` of `url` answers 200 within two seconds.
    pub async fn get_ok(&self, url: &str) -> bool {
        let Ok(req) = hyper::Request::get(url).body(Full::new(Bytes::new())) else {
            return false;
        };
        let exchange = async {
            let resp = self.0.request(req).await.ok()?;
            let ok = resp.status().is_success();
            Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .ok()?;
            Some(ok)
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), exchange).await,
            Ok(Some(true))
        )
    }
}

/// Where requests go: a base URL (`http://127.0.0.1:PORT`).
#[derive(Clone)]
pub struct Target {
    /// The path's name in the table and in errors.
    pub label: &'static str,
    /// The base URL; each API's route is appended.
    pub base: String,
    /// The key the client sends (never printed).
    pub key: String,
}

/// One request kind: an API, whole or streamed.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// The API.
    pub api: Api,
    /// Whether the answer is streamed.
    pub stream: bool,
}

impl Kind {
    /// Its name in the table.
    pub fn name(self) -> String {
        format!(
            "{}, {}",
            self.api.name(),
            if self.stream { "streamed" } else { "whole" }
        )
    }
}

/// Sends one request of `kind` with `text` in conversation `session`;
/// returns the status and the body read (bounded).
pub async fn send(
    http: &Http,
    target: &Target,
    kind: Kind,
    session: &str,
    text: &str,
) -> Result<(u16, Bytes), String> {
    let body = kind.api.request(kind.stream, text);
    send_body(http, target, kind.api, session, body).await
}

/// Ends conversation `session` at the gateway `target`
/// (`DELETE /v1/hookwire/sessions/{id}`, 204 expected).
pub async fn end_session(http: &Http, target: &Target, session: &str) -> Result<(), String> {
    let mut req = hyper::Request::delete(format!("{}/v1/hookwire/sessions/{session}", target.base));
    for (name, value) in Api::Chat.auth_headers(&target.key) {
        req = req.header(name, value);
    }
    let req = req
        .body(Full::new(Bytes::new()))
        .map_err(|e| format!("request: {e}"))?;
    let resp = tokio::time::timeout(REQUEST_TIMEOUT, http.0.request(req))
        .await
        .map_err(|_| format!("no answer within {REQUEST_TIMEOUT:?}"))?
        .map_err(|e| format!("{e}"))?;
    match resp.status().as_u16() {
        204 => Ok(()),
        s => Err(format!("ending session {session}: status {s}")),
    }
}

/// Sends `body` to `api`'s route of `target` in conversation `session`;
/// returns the status and the body read (bounded).
pub async fn send_body(
    http: &Http,
    target: &Target,
    api: Api,
    session: &str,
    body: Bytes,
) -> Result<(u16, Bytes), String> {
    let mut req = hyper::Request::post(format!("{}{}", target.base, api.path()))
        .header("content-type", "application/json")
        .header("x-hookwire-session", session);
    for (name, value) in api.auth_headers(&target.key) {
        req = req.header(name, value);
    }
    let req = req
        .body(Full::new(body))
        .map_err(|e| format!("request: {e}"))?;
    let exchange = async {
        let resp = http.0.request(req).await.map_err(|e| format!("{e}"))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        Ok::<_, String>((status, body))
    };
    tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no answer within {REQUEST_TIMEOUT:?}"))?
}

/// One request that must succeed: status 200 and a complete answer.
pub async fn once(
    http: &Http,
    target: &Target,
    kind: Kind,
    session: &str,
    n: u64,
) -> Result<(), String> {
    let (status, body) = send(http, target, kind, session, &format!("question {n}")).await?;
    if status == 200 && kind.api.complete(kind.stream, &body) {
        return Ok(());
    }
    let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    Err(format!(
        "{} {}: status {status}, answer {shown:?}",
        target.label,
        kind.name()
    ))
}

/// Free conversation ids of one path and kind: a request takes one and
/// gives it back when done, so no conversation has two turns at once and
/// their number stays at the most ever in flight.
struct Sessions {
    prefix: String,
    free: Mutex<Vec<String>>,
    made: Mutex<usize>,
}

impl Sessions {
    fn new(prefix: String) -> Self {
        Self {
            prefix,
            free: Mutex::new(Vec::new()),
            made: Mutex::new(0),
        }
    }

    fn take(&self) -> String {
        if let Some(s) = self.free.lock().expect("sessions").pop() {
            return s;
        }
        let mut made = self.made.lock().expect("sessions");
        *made += 1;
        format!("{}-{}", self.prefix, *made)
    }

    fn give(&self, s: String) {
        self.free.lock().expect("sessions").push(s);
    }
}

/// Conversation ids unique to one path and kind across the run (a
/// conversation belongs to the credential that opened it, and each API
/// sends its own).
pub fn prefix(target: &Target, kind: Kind) -> String {
    let label: String = target
        .label
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!(
        "peer-{label}-{}-{}",
        kind.api.tag(),
        if kind.stream { "s" } else { "w" }
    )
}

/// An open-loop run: `rate` requests per second for `length`, each sent at
/// its intended time whatever the others are doing; returns each
/// request's latency from that time, in µs. Any failed request fails the
/// run.
///
/// The schedule is kept by a thread of its own sleeping to each due time
/// (the runtime's timer has a granularity of 1 ms, which would add up to
/// that to every latency), handing each request to the runtime as it
/// falls due.
pub async fn open_loop(
    http: &Http,
    target: &Target,
    kind: Kind,
    rate: f64,
    length: Duration,
) -> Result<Vec<f64>, String> {
    let sessions = Arc::new(Sessions::new(format!("{}-o", prefix(target, kind))));
    let n = stats::scheduled(rate, length);
    let start = Instant::now();
    let (tick, mut ticks) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    let clock = std::thread::spawn(move || {
        for i in 0..n {
            let due = start + stats::due(i, rate);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if tick.send((i, due)).is_err() {
                return;
            }
        }
    });
    let mut tasks = tokio::task::JoinSet::new();
    let mut latencies = Vec::with_capacity(n as usize);
    let mut failure = None;
    while let Some((i, due)) = ticks.recv().await {
        while let Some(done) = tasks.try_join_next() {
            match done
                .map_err(|e| format!("request task: {e}"))
                .and_then(|r| r)
            {
                Ok(us) => latencies.push(us),
                Err(e) => failure = Some(e),
            }
        }
        if failure.is_none() && tasks.len() >= MAX_IN_FLIGHT {
            failure = Some(format!(
                "{} {}: more than {MAX_IN_FLIGHT} requests in flight at {rate}/s",
                target.label,
                kind.name()
            ));
        }
        if failure.is_some() {
            break;
        }
        let (http, target, sessions) = (http.clone(), target.clone(), sessions.clone());
        tasks.spawn(async move {
            let session = sessions.take();
            let r = once(&http, &target, kind, &session, i).await;
            sessions.give(session);
            r.map(|()| due.elapsed().as_secs_f64() * 1e6)
        });
    }
    // Ends the clock thread at its next tick when the run failed early.
    drop(ticks);
    let _ = clock.join();
    if let Some(e) = failure {
        return Err(e);
    }
    while let Some(done) = tasks.join_next().await {
        latencies.push(done.map_err(|e| format!("request task: {e}"))??);
    }
    Ok(latencies)
}

/// A closed-loop window: `concurrency` loops, each sending its next
/// request as soon as its previous one is answered, for `window`; returns
/// requests per second, or the first failure.
pub async fn closed_loop(
    http: &Http,
    target: &Target,
    kind: Kind,
    concurrency: usize,
    window: Duration,
) -> Result<f64, String> {
    let started = Instant::now();
    let deadline = started + window;
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..concurrency {
        let (http, target) = (http.clone(), target.clone());
        let session = format!("{}-c{concurrency}-{c}", prefix(&target, kind));
        tasks.spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                once(&http, &target, kind, &session, done).await?;
                done += 1;
            }
            Ok::<_, String>(done)
        });
    }
    let mut total = 0u64;
    let mut failure = None;
    while let Some(r) = tasks.join_next().await {
        match r.map_err(|e| format!("request task: {e}")).and_then(|r| r) {
            Ok(n) => total += n,
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(total as f64 / started.elapsed().as_secs_f64()),
    }
}
