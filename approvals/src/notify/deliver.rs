//! Getting a notification to its receiver: one worker per channel
//! draining that channel's bounded queue, each delivery an HTTPS (or
//! loopback HTTP) `POST` signed with the channel's secret, retried with
//! jittered backoff on a connection failure, a timeout, `408`, `429` or a
//! `5xx`, and written to the dead-letter log when its attempts run out or
//! the receiver refuses it (another `4xx`). Counted in
//! `hookwire_approval_notifications_total{channel, result}`.
//!
//! The signature: `X-Hookwire-Signature: sha256=<hex>`, the HMAC-SHA256
//! under the secret of `TIMESTAMP.BODY`, where `TIMESTAMP` is the
//! `X-Hookwire-Timestamp` header (Unix seconds). A receiver recomputes
//! it, compares in constant time and refuses a timestamp too far from its
//! clock: a captured delivery cannot be replayed later. Errors and logs
//! name the channel, never its URL (Slack's and Teams' URLs are secrets)
//! nor the secret.

use std::borrow::Cow;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use hookwire_edge::https::{HttpsClient, UpstreamTls};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Uri};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::{mpsc, watch};

/// Most bytes of a receiver's answer read (and thrown away).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Largest dead-letter log written; past it, entries are counted as
/// dropped rather than written.
pub const MAX_DEAD_LETTER_BYTES: u64 = 64 * 1024 * 1024;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-hookwire-signature";
/// The header carrying the signed timestamp (Unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-hookwire-timestamp";

/// `sha256=<hex>`: the signature of `body` sent at `timestamp` under
/// `secret`, as [`SIGNATURE_HEADER`] carries it.
pub fn signature(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The delivery counters, by channel and result: `sent`, `failed` (an
/// attempt that failed), `retried` (an attempt after a failure),
/// `dropped` (not queued: the channel's queue was full, or the service
/// stopped first) and `dead_lettered` (given up on).
#[derive(Clone, Debug, Default)]
pub struct DeliveryCounters {
    family: Family<[(&'static str, Cow<'static, str>); 2], Counter>,
}

impl DeliveryCounters {
    /// Registers the counters in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "hookwire_approval_notifications",
            "Approval notifications by channel and result (sent, failed, retried, dropped, dead_lettered)",
            self.family.clone(),
        );
    }

    /// Counts one `result` on `channel`.
    pub(super) fn inc(&self, channel: &str, result: &'static str) {
        self.family
            .get_or_create(&[
                ("channel", Cow::Owned(channel.to_owned())),
                ("result", Cow::Borrowed(result)),
            ])
            .inc();
    }

    /// How many `result`s `channel` has counted.
    pub fn get(&self, channel: &str, result: &'static str) -> u64 {
        self.family
            .get_or_create(&[
                ("channel", Cow::Owned(channel.to_owned())),
                ("result", Cow::Borrowed(result)),
            ])
            .get()
    }
}

/// One notification to send: its id, kind and body.
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    pub(super) event_id: String,
    pub(super) event: &'static str,
    pub(super) body: Bytes,
}

/// The log of deliveries given up on: JSON lines of the channel, the
/// event, the attempts, the last error and the payload, up to
/// [`MAX_DEAD_LETTER_BYTES`].
#[derive(Debug)]
pub(super) struct DeadLetters {
    path: Option<PathBuf>,
    written: Mutex<u64>,
}

impl DeadLetters {
    pub(super) fn new(path: Option<PathBuf>) -> Self {
        let written = path
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        Self {
            path,
            written: Mutex::new(written),
        }
    }

    /// Appends one entry; `false` when it was not written (no log, the
    /// log full or not writable).
    fn write(&self, channel: &str, d: &Delivery, attempts: u32, error: &str) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let payload: Value = serde_json::from_slice(&d.body).unwrap_or(Value::Null);
        let mut line = json!({
            "at": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "channel": channel,
            "event_id": d.event_id,
            "event": d.event,
            "attempts": attempts,
            "error": error,
            "payload": payload,
        })
        .to_string();
        line.push('\n');
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if *written + line.len() as u64 > MAX_DEAD_LETTER_BYTES {
            return false;
        }
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        match appended {
            Ok(()) => {
                *written += line.len() as u64;
                true
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "approval notifications: dead-letter log not writable");
                false
            }
        }
    }
}

/// How one channel delivers: where, signed how, how hard it tries.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) channel: String,
    pub(super) uri: Uri,
    pub(super) secret: Option<Arc<[u8]>>,
    pub(super) max_attempts: u32,
    pub(super) backoff_base: Duration,
    pub(super) backoff_max: Duration,
    pub(super) timeout: Duration,
}

/// Why one attempt failed: whether another may succeed, and a text that
/// names no URL.
enum Failure {
    Transient(String),
    Permanent(String),
}

type HttpClient = HttpsClient<Full<Bytes>>;

/// The client every channel shares: the edges' shared HTTP/1.1 client,
/// rustls with the web PKI roots plus the operator's CA and client
/// certificate (`--webhook-ca`, `--webhook-client-cert`) for `https`.
pub(super) fn client(tls: &UpstreamTls) -> HttpClient {
    hookwire_edge::https::client(tls)
}

async fn attempt(client: &HttpClient, t: &Target, d: &Delivery) -> Result<(), Failure> {
    let timestamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut request = Request::post(t.uri.clone())
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("hookwire-approvals/", env!("CARGO_PKG_VERSION")),
        )
        .header("x-hookwire-event", d.event)
        .header("x-hookwire-delivery", d.event_id.as_str())
        .header(TIMESTAMP_HEADER, timestamp.to_string());
    if let Some(secret) = &t.secret {
        request = request.header(SIGNATURE_HEADER, signature(secret, timestamp, &d.body));
    }
    let request = request
        .body(Full::new(d.body.clone()))
        .map_err(|_| Failure::Permanent("the request could not be built".into()))?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| {
            Failure::Transient(if e.is_connect() {
                "connection failed".to_owned()
            } else {
                "the request failed".to_owned()
            })
        })?;
        let status = response.status();
        // Read (boundedly) and drop the answer, so the connection is reused.
        let _ = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await;
        match status.as_u16() {
            200..=299 => Ok(()),
            408 | 429 | 500..=599 => Err(Failure::Transient(format!("HTTP {}", status.as_u16()))),
            other => Err(Failure::Permanent(format!("HTTP {other}"))),
        }
    };
    match tokio::time::timeout(t.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Transient("timed out".into())),
    }
}

/// Drains `queue` until it closes or `closing` turns: each delivery tried
/// up to the channel's attempts, then dead-lettered. Deliveries left when
/// the service stops are counted as dropped.
pub(super) async fn worker(
    client: HttpClient,
    target: Target,
    mut queue: mpsc::Receiver<Delivery>,
    counters: DeliveryCounters,
    dead: Arc<DeadLetters>,
    mut closing: watch::Receiver<bool>,
) {
    let channel = target.channel.as_str();
    loop {
        let delivery = tokio::select! {
            d = queue.recv() => match d { Some(d) => d, None => return },
            _ = closing.wait_for(|c| *c) => break,
        };
        let mut backoff = hookwire::backoff::Backoff::new(target.backoff_base, target.backoff_max);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match attempt(&client, &target, &delivery).await {
                Ok(()) => {
                    counters.inc(channel, "sent");
                    break;
                }
                Err(failure) => {
                    counters.inc(channel, "failed");
                    let (error, retry) = match failure {
                        Failure::Transient(e) => (e, attempts < target.max_attempts),
                        Failure::Permanent(e) => (e, false),
                    };
                    if !retry {
                        tracing::warn!(channel, event_id = %delivery.event_id, attempts, error, "approval notification given up on");
                        if dead.write(channel, &delivery, attempts, &error) {
                            counters.inc(channel, "dead_lettered");
                        } else {
                            counters.inc(channel, "dropped");
                        }
                        break;
                    }
                    counters.inc(channel, "retried");
                    tokio::select! {
                        () = tokio::time::sleep(backoff.next_delay()) => {}
                        _ = closing.wait_for(|c| *c) => {
                            counters.inc(channel, "dropped");
                            return drop_rest(&mut queue, &counters, channel);
                        }
                    }
                }
            }
        }
    }
    drop_rest(&mut queue, &counters, channel);
}

fn drop_rest(queue: &mut mpsc::Receiver<Delivery>, counters: &DeliveryCounters, channel: &str) {
    queue.close();
    while queue.try_recv().is_ok() {
        counters.inc(channel, "dropped");
    }
}
