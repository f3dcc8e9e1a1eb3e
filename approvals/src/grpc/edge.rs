//! What every call of the gRPC edge starts from: the queue, the access
//! list, the heartbeat settings and the shutdown signal ([`Edge`]), who is
//! calling (a bearer token, a verified client certificate) and how a
//! refused caller is answered.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hookwire::pb;
use hookwire_server::Peer;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};
use tonic::{Request, Status};

use crate::auth::{Access, ApproverAccess, Credentials, Denial, bearer};
use crate::events::ApproverIdentity;
use crate::queue::ApprovalQueue;

/// How often each side of a stream sends a heartbeat by default.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);

/// Messages buffered per stream before the sender waits.
pub(super) const STREAM_BUFFER: usize = 256;

/// A response stream of the service.
pub(super) type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The service's state, shared by every call.
#[derive(Debug, Clone)]
pub(super) struct Edge {
    pub(super) queue: ApprovalQueue,
    pub(super) access: Access,
    pub(super) settings: Arc<Settings>,
    pub(super) closing: watch::Receiver<bool>,
}

/// The name announced to hosts and approvers, and the heartbeat period.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) name: String,
    pub(super) heartbeat: Duration,
}

impl Edge {
    /// Authenticates a host: its configured name, or the refusal.
    pub(super) fn host<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let (token, peer) =
            credentials(request).map_err(|d| refuse(d, "Resolve", &peer_addr(request)))?;
        self.access
            .host(Credentials {
                token: token.as_deref(),
                peer: peer.as_ref(),
            })
            .map_err(|d| refuse(d, "Resolve", &peer_addr(request)))
    }

    /// Authenticates an approver for `call`: its access and the identity
    /// its decisions are recorded under, or the refusal.
    pub(super) fn approver<T>(
        &self,
        request: &Request<T>,
        call: &str,
    ) -> Result<(Arc<ApproverAccess>, ApproverIdentity), Status> {
        let (token, peer) =
            credentials(request).map_err(|d| refuse(d, call, &peer_addr(request)))?;
        let (access, proof) = self
            .access
            .approver(Credentials {
                token: token.as_deref(),
                peer: peer.as_ref(),
            })
            .map_err(|d| refuse(d, call, &peer_addr(request)))?;
        let identity = access.identity(proof.method());
        Ok((access, identity))
    }

    /// The first message of every stream.
    pub(super) fn ready(&self) -> pb::ServiceReady {
        pb::ServiceReady {
            service: self.settings.name.clone(),
            heartbeat_interval_ms: u64::try_from(self.settings.heartbeat.as_millis())
                .unwrap_or(u64::MAX),
        }
    }

    /// Ticks once per heartbeat, the first one period from now.
    pub(super) fn ticker(&self) -> tokio::time::Interval {
        let period = self.settings.heartbeat;
        let mut t = tokio::time::interval_at(Instant::now() + period, period);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        t
    }
}

/// Who is calling: the bearer token and the verified client certificate
/// of the request, to check against the access list. An `authorization`
/// header that is not `Bearer <token68>` is refused, not ignored.
fn credentials<T>(request: &Request<T>) -> Result<(Option<String>, Option<Peer>), Denial> {
    let token = match request.metadata().get("authorization") {
        None => None,
        Some(v) => {
            let v = v.to_str().map_err(|_| Denial::MalformedToken)?;
            Some(bearer(v).map_err(|_| Denial::MalformedToken)?.to_owned())
        }
    };
    let peer = request
        .peer_certs()
        .and_then(|certs| certs.first().and_then(|c| Peer::from_der(c)));
    Ok((token, peer))
}

/// The caller's address, for logs.
pub(super) fn peer_addr<T>(request: &Request<T>) -> String {
    request
        .remote_addr()
        .map_or_else(|| "unknown".to_owned(), |a| a.to_string())
}

/// The credentials a stream opened with, kept (in memory only, never
/// logged: no `Debug`) to authenticate it again when the access list is
/// reloaded.
pub(super) struct Presented {
    token: Option<String>,
    peer: Option<Peer>,
}

impl Presented {
    pub(super) fn of<T>(request: &Request<T>) -> Self {
        // Called once the request authenticated, so its header is well
        // formed; a malformed one would present nothing.
        let (token, peer) = credentials(request).unwrap_or_default();
        Self { token, peer }
    }

    pub(super) fn credentials(&self) -> Credentials<'_> {
        Credentials {
            token: self.token.as_deref(),
            peer: self.peer.as_ref(),
        }
    }
}

/// The status for a refused caller; logged by kind and peer, never with
/// the credential.
pub(super) fn refuse(denial: Denial, call: &str, peer: &str) -> Status {
    tracing::warn!(target: "hookwire::approval::audit", %peer, call, denial = denial.as_str(), "approval call refused");
    if denial.is_unauthenticated() {
        Status::unauthenticated("approval service: authentication required")
    } else {
        Status::permission_denied(format!("approval service: {denial}"))
    }
}

/// Resolves once `closing` is `true` or its sender is gone.
pub(super) async fn closed(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}
