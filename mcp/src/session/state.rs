//! What one MCP session is made of: the session itself, the state
//! behind its lock, its requests in flight and its parked calls. The
//! behaviour is in the sibling modules (`mod.rs` the relays, `start`,
//! `call`, `park`, `stateless`, `inbound`), each an `impl` over these
//! types, so that every one of them imports this leaf and none imports
//! its parent.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hookwire_client::Session;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::config::McpConfig;
use crate::jsonrpc::Id;
use crate::upstream::Link;

/// Where a message to the client goes: the stdio writer, or one HTTP
/// request's event stream.
pub type Notifier = mpsc::Sender<Value>;

/// A request of the client in flight.
pub(super) struct InFlight {
    /// Set to cancel it.
    pub(super) cancel: watch::Sender<bool>,
    /// Its id upstream, once sent.
    pub(super) upstream: Option<i64>,
    /// Its progress token and where its notifications go.
    pub(super) progress: Option<(Value, Notifier)>,
}

/// What a session keeps behind its lock.
#[derive(Default)]
pub(super) struct State {
    /// Whether the handshake (`initialize`) ran.
    pub(super) initialized: bool,
    /// The client's requests not yet answered, by their id.
    pub(super) in_flight: HashMap<Id, InFlight>,
    /// Server requests relayed to the client: the proxy's id → the
    /// upstream's.
    pub(super) relayed: HashMap<i64, Id>,
    /// Stateless calls answered `input_required`, by their state.
    pub(super) parked: HashMap<String, Parked>,
}

/// One MCP session.
pub struct McpSession {
    /// The hookwire `session.id`.
    pub(super) key: String,
    /// The hookwire session every emission goes through.
    pub(super) hw: Session,
    /// The upstream connection.
    pub(super) link: Link,
    /// The proxy's configuration.
    pub(super) config: Arc<McpConfig>,
    /// The downstream's channel for messages the client did not ask for
    /// (stdio); `None` over HTTP.
    pub(super) to_client: Option<Notifier>,
    /// What changes as messages pass.
    pub(super) state: Mutex<State>,
    /// The stateless start, once a request with the envelope came.
    pub(super) stateless: tokio::sync::OnceCell<Result<Started, Value>>,
    /// The names of the tools the upstream listed and the chain saw.
    pub(super) tools: Mutex<BTreeSet<String>>,
    /// The next id of a request the proxy sends the client.
    pub(super) next_down: AtomicI64,
    /// Set once `agent_shutdown` is under way.
    pub(super) ended: AtomicBool,
    /// How many requests are in flight, for the end to wait on.
    pub(super) drained: watch::Sender<usize>,
}

/// What a started stateless session keeps.
#[derive(Debug, Clone)]
pub(crate) struct Started {
    /// The version it speaks.
    pub(super) version: String,
    /// The client's `server/discover` answer.
    pub(super) discover: Value,
}

/// What a parked call came to: its result or error object; `None` when
/// it was cancelled.
pub(super) type Outcome = Option<Result<Value, Value>>;

/// A call running on after its request was answered `input_required`.
pub(super) struct Parked {
    /// What binds it to the retry that collects it.
    pub(super) digest: String,
    /// Its outcome, once it exists.
    pub(super) outcome: watch::Receiver<Option<Outcome>>,
    /// Cancels it.
    pub(super) cancel: watch::Sender<bool>,
    /// When it was parked (or last collected).
    pub(super) since: Instant,
}

impl Parked {
    /// Cancels the call (the session ends, or the state expired).
    pub(super) fn cancel(&self) {
        self.cancel.send_replace(true);
    }
}
