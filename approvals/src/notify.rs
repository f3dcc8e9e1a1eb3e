//! Notifications: telling reviewers that something waits, where they
//! are. On a new request, a decision and an expiry, the service posts to
//! the channels of its config file (`notify`, docs/approvals.md): a
//! generic signed webhook, or a ready Slack or Microsoft Teams incoming
//! webhook message.
//!
//! Each channel names approvers; a request is sent to the channel when
//! the rules of at least one of them cover it (the same
//! [`ApproverRules`](crate::ApproverRules) that decide what the page
//! shows them), and its decision and expiry go where the request went. A
//! notification carries a summary and a link to the page, never the
//! arguments, context or approval block: the page, behind sign-in, shows
//! those. It grants nothing.
//!
//! Here: the configuration ([`NotifyConfig`], checked into
//! [`Notifications`]) and the task that turns queue events into
//! deliveries; `payload`: the bodies; `deliver`: the signed posts, retries,
//! dead letters and counters.

mod deliver;
mod payload;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hookwire_edge::https::UpstreamTls;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use deliver::{DeadLetters, Delivery, Target};
pub use deliver::{
    DeliveryCounters, MAX_DEAD_LETTER_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature,
};
pub use payload::{Decision, MAX_NOTICE_FIELD, Notice, NotifyKind, generic, slack, teams};

use crate::auth::Access;
use crate::error::Error;
use crate::events::{CloseReason, PendingApproval, QueueEvent};
use crate::queue::ApprovalQueue;

/// Most channels one service notifies.
pub const MAX_CHANNELS: usize = 32;
/// Largest queue of one channel.
pub const MAX_QUEUE_CAPACITY: usize = 65_536;
/// Most requests remembered between their notification and their
/// decision or expiry; past it the oldest are forgotten (and their
/// decision goes unnotified).
pub const MAX_TRACKED: usize = 10_000;

/// The `notify` member of `approvals serve`'s config file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// The page's public URL, linked from every notification; defaults to
    /// the address the page is served on.
    #[serde(default)]
    pub page_url: Option<String>,
    /// Notifications each channel holds before it drops new ones
    /// (default 1024, at most [`MAX_QUEUE_CAPACITY`]).
    #[serde(default = "default_capacity")]
    pub queue_capacity: usize,
    /// Where deliveries given up on are appended (JSON lines); without
    /// it they are only counted.
    #[serde(default)]
    pub dead_letter_file: Option<PathBuf>,
    /// The channels.
    pub channels: Vec<ChannelConfig>,
}

fn default_capacity() -> usize {
    1024
}

/// What a channel posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    /// The generic JSON body, signed with the channel's secret.
    Webhook,
    /// A Slack incoming-webhook message.
    Slack,
    /// A Microsoft Teams incoming-webhook Adaptive Card message.
    Teams,
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Its name, in metrics, logs and the dead-letter log (1 to 64
    /// characters of `[A-Za-z0-9_.-]`).
    pub name: String,
    /// What it posts.
    pub kind: ChannelKind,
    /// The receiver's URL (`https://`, or `http://` on loopback).
    #[serde(default)]
    pub url: Option<String>,
    /// A file holding the URL instead (Slack's and Teams' URLs are
    /// secrets).
    #[serde(default)]
    pub url_file: Option<PathBuf>,
    /// A file holding the shared secret the body is signed with; required
    /// for `webhook`.
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// The approvers (names in the access list) whose rules route
    /// requests here; at least one.
    pub approvers: Vec<String>,
    /// This channel's queue bound, instead of the settings'
    /// `queue_capacity`.
    #[serde(default)]
    pub queue_capacity: Option<usize>,
    /// Which events (default all three).
    #[serde(default = "all_kinds")]
    pub events: Vec<NotifyKind>,
    /// Attempts per notification before it is dead-lettered (default 5,
    /// 1 to 20).
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    /// The first retry's backoff step in milliseconds (default 500).
    #[serde(default = "default_backoff_base")]
    pub backoff_base_ms: u64,
    /// The largest backoff step in milliseconds (default 30000).
    #[serde(default = "default_backoff_max")]
    pub backoff_max_ms: u64,
    /// Time allowed for one attempt, in milliseconds (default 10000).
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
}

fn all_kinds() -> Vec<NotifyKind> {
    NotifyKind::ALL.to_vec()
}
fn default_attempts() -> u32 {
    5
}
fn default_backoff_base() -> u64 {
    500
}
fn default_backoff_max() -> u64 {
    30_000
}
fn default_timeout() -> u64 {
    10_000
}

/// A checked channel, its URL and secret read.
#[derive(Debug, Clone)]
struct Channel {
    kind: ChannelKind,
    capacity: usize,
    approvers: Vec<String>,
    events: Vec<NotifyKind>,
    target: Target,
}

/// Checked notification settings, ready to run
/// ([`ApprovalServer::notify`](crate::ApprovalServer::notify)).
#[derive(Debug, Clone)]
pub struct Notifications {
    page_url: Option<String>,
    channels: Vec<Channel>,
    dead: Arc<DeadLetters>,
    counters: DeliveryCounters,
    tls: UpstreamTls,
}

fn bad(channel: &str, what: impl std::fmt::Display) -> Error {
    Error::NotifyConfig(format!("channel {channel:?}: {what}"))
}

fn read_secret(channel: &str, what: &str, path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(
            channel,
            format!("cannot read {what} {}: {e}", path.display()),
        )
    })?;
    let text = text.trim();
    if text.is_empty() || text.len() > 4096 {
        return Err(bad(
            channel,
            format!("{what} {} must hold 1 to 4096 bytes", path.display()),
        ));
    }
    Ok(text.to_owned())
}

impl NotifyConfig {
    /// Checks the settings against `access` (every approver named must
    /// be in it) and reads every URL and secret file. Errors name the
    /// channel and the setting, never a URL or secret.
    pub fn load(&self, access: &Access) -> Result<Notifications, Error> {
        if self.channels.len() > MAX_CHANNELS {
            return Err(Error::NotifyConfig(format!(
                "at most {MAX_CHANNELS} channels"
            )));
        }
        if !(1..=MAX_QUEUE_CAPACITY).contains(&self.queue_capacity) {
            return Err(Error::NotifyConfig(format!(
                "queue_capacity must be 1 to {MAX_QUEUE_CAPACITY}"
            )));
        }
        let mut channels = Vec::with_capacity(self.channels.len());
        for c in &self.channels {
            let name = c.name.as_str();
            let well_named = (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch));
            if !well_named {
                return Err(Error::NotifyConfig(format!(
                    "channel name {name:?} must be 1 to 64 characters of A-Z, a-z, 0-9, _ . -"
                )));
            }
            if channels
                .iter()
                .any(|ch: &Channel| ch.target.channel == name)
            {
                return Err(bad(name, "named twice"));
            }
            let url = match (&c.url, &c.url_file) {
                (Some(u), None) => u.clone(),
                (None, Some(path)) => read_secret(name, "url_file", path)?,
                _ => return Err(bad(name, "give exactly one of url and url_file")),
            };
            let uri: hyper::Uri = url
                .parse()
                .map_err(|_| bad(name, "the URL does not parse"))?;
            let loopback = uri.host().is_some_and(|h| {
                h == "localhost"
                    || h.trim_matches(['[', ']'])
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            });
            match uri.scheme_str() {
                Some("https") => {}
                Some("http") if loopback => {}
                _ => {
                    return Err(bad(
                        name,
                        "the URL must be https:// (or http:// on loopback)",
                    ));
                }
            }
            let secret = match &c.secret_file {
                Some(path) => Some(Arc::from(
                    read_secret(name, "secret_file", path)?.into_bytes(),
                )),
                None if c.kind == ChannelKind::Webhook => {
                    return Err(bad(
                        name,
                        "a webhook needs secret_file (its signing secret)",
                    ));
                }
                None => None,
            };
            if c.approvers.is_empty() {
                return Err(bad(name, "name at least one approver to route by"));
            }
            if let Some(unknown) = c
                .approvers
                .iter()
                .find(|a| access.approver_named(a).is_none())
            {
                return Err(bad(
                    name,
                    format!("approver {unknown:?} is not in the access list"),
                ));
            }
            let capacity = c.queue_capacity.unwrap_or(self.queue_capacity);
            if !(1..=MAX_QUEUE_CAPACITY).contains(&capacity) {
                return Err(bad(
                    name,
                    format!("queue_capacity must be 1 to {MAX_QUEUE_CAPACITY}"),
                ));
            }
            if !(1..=20).contains(&c.max_attempts) {
                return Err(bad(name, "max_attempts must be 1 to 20"));
            }
            if c.timeout_ms == 0 || c.backoff_base_ms == 0 {
                return Err(bad(name, "timeout_ms and backoff_base_ms must be positive"));
            }
            channels.push(Channel {
                kind: c.kind,
                capacity,
                approvers: c.approvers.clone(),
                events: c.events.clone(),
                target: Target {
                    channel: name.to_owned(),
                    uri,
                    secret,
                    max_attempts: c.max_attempts,
                    backoff_base: Duration::from_millis(c.backoff_base_ms),
                    backoff_max: Duration::from_millis(c.backoff_max_ms.max(c.backoff_base_ms)),
                    timeout: Duration::from_millis(c.timeout_ms),
                },
            });
        }
        Ok(Notifications {
            page_url: self.page_url.clone(),
            channels,
            dead: Arc::new(DeadLetters::new(self.dead_letter_file.clone())),
            counters: DeliveryCounters::default(),
            tls: UpstreamTls::default(),
        })
    }
}

impl Notifications {
    /// Delivers over `tls` to `https` receivers: an extra CA, a client
    /// certificate for receivers that require mutual TLS (default: the
    /// web PKI roots alone).
    #[must_use]
    pub fn with_tls(mut self, tls: UpstreamTls) -> Self {
        self.tls = tls;
        self
    }

    /// The delivery counters (shared with the running notifier).
    pub fn counters(&self) -> &DeliveryCounters {
        &self.counters
    }

    /// Registers `hookwire_approval_notifications_total` in `registry`.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.counters.register(registry);
    }

    /// Runs the notifier over `queue` until `closing` turns: one task
    /// reading the queue's events, one worker per channel. `page_url` is
    /// the link when the settings give none.
    pub(crate) fn spawn(
        self,
        queue: &ApprovalQueue,
        access: Access,
        page_url: Option<String>,
        closing: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let client = deliver::client(&self.tls);
        let mut senders = Vec::with_capacity(self.channels.len());
        for c in &self.channels {
            let (tx, rx) = mpsc::channel(c.capacity);
            tokio::spawn(deliver::worker(
                client.clone(),
                c.target.clone(),
                rx,
                self.counters.clone(),
                Arc::clone(&self.dead),
                closing.clone(),
            ));
            senders.push(tx);
        }
        let (sub, internal) = queue.subscribe_internal();
        let link_base = self.page_url.clone().or(page_url).unwrap_or_default();
        let router = Router {
            n: self,
            senders,
            access,
            link_base,
            tracked: HashMap::new(),
            order: VecDeque::new(),
        };
        tokio::spawn(async move {
            let _internal = internal;
            router.run(sub.events, closing).await;
        })
    }
}

/// The task between the queue's events and the channels' queues.
struct Router {
    n: Notifications,
    senders: Vec<mpsc::Sender<Delivery>>,
    access: Access,
    link_base: String,
    /// Requests notified, with the channels they went to.
    tracked: HashMap<String, (Notice, Vec<usize>)>,
    order: VecDeque<String>,
}

impl Router {
    async fn run(
        mut self,
        mut events: broadcast::Receiver<QueueEvent>,
        mut closing: watch::Receiver<bool>,
    ) {
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                _ = closing.wait_for(|c| *c) => return,
            };
            match event {
                Ok(QueueEvent::Added(p)) => self.added(&p),
                Ok(QueueEvent::Resolved {
                    id,
                    approver,
                    outcome,
                }) => {
                    let decision = Decision {
                        approver: approver.name().to_owned(),
                        outcome,
                    };
                    self.closed(&id, NotifyKind::Decided, Some(&decision));
                }
                Ok(QueueEvent::Closed {
                    id,
                    reason: CloseReason::Expired,
                }) => {
                    self.closed(&id, NotifyKind::Expired, None);
                }
                Ok(QueueEvent::Closed { id, reason }) => {
                    self.withdrawn(&id, reason);
                }
                Ok(QueueEvent::Seen { .. }) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "approval notifications: events missed under load");
                    for c in &self.n.channels {
                        self.n.counters.inc(&c.target.channel, "dropped");
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// The channels whose approvers' rules cover `p`, in the list in
    /// force.
    fn routes(&self, p: &PendingApproval) -> Vec<usize> {
        let covered = |name: &String| {
            self.access
                .approver_named(name)
                .is_some_and(|a| a.rules.permits(p))
        };
        (0..self.n.channels.len())
            .filter(|&i| self.n.channels[i].approvers.iter().any(covered))
            .collect()
    }

    fn added(&mut self, p: &PendingApproval) {
        let routes = self.routes(p);
        if routes.is_empty() {
            return;
        }
        let notice = Notice::of(p);
        self.send(NotifyKind::Requested, &notice, None, &routes);
        if self.order.len() >= MAX_TRACKED
            && let Some(oldest) = self.order.pop_front()
        {
            self.tracked.remove(&oldest);
        }
        self.order.push_back(p.id.clone());
        self.tracked.insert(p.id.clone(), (notice, routes));
    }

    fn closed(&mut self, id: &str, kind: NotifyKind, decision: Option<&Decision>) {
        if let Some((notice, routes)) = self.tracked.remove(id) {
            self.order.retain(|o| o != id);
            self.send(kind, &notice, decision, &routes);
        }
    }

    /// A request its host withdrew: `approval.withdrawn`, naming why.
    fn withdrawn(&mut self, id: &str, reason: CloseReason) {
        if let Some((notice, _)) = self.tracked.get_mut(id) {
            notice.withdrawn = Some(reason.as_str().to_owned());
        }
        self.closed(id, NotifyKind::Withdrawn, None);
    }

    fn send(
        &self,
        kind: NotifyKind,
        notice: &Notice,
        decision: Option<&Decision>,
        routes: &[usize],
    ) {
        let link = notice.link(&self.link_base);
        for &i in routes {
            let c = &self.n.channels[i];
            if !c.events.contains(&kind) {
                continue;
            }
            let body = match c.kind {
                ChannelKind::Webhook => generic(kind, notice, decision, &link),
                ChannelKind::Slack => slack(kind, notice, decision, &link),
                ChannelKind::Teams => teams(kind, notice, decision, &link),
            };
            let delivery = Delivery {
                event_id: format!("{}:{}", notice.id, kind.as_str()),
                event: kind.event(),
                body: Bytes::from(body.to_string()),
            };
            if self.senders[i].try_send(delivery).is_err() {
                self.n.counters.inc(&c.target.channel, "dropped");
            }
        }
    }
}
