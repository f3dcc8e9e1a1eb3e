//! The host handle: what an agent holds after building a host. It opens
//! sessions and answers questions about the configuration in effect (mode,
//! composition, chains, timeouts) and about the remote services (their
//! manifests and health). Building one is [`HostBuilder`](crate::HostBuilder)'s
//! job, or the declaration loader's; the state it shares is
//! [`HostState`].

use std::sync::Arc;
use std::time::Duration;

use hookwire::{Composition, InterceptionPoint, Mode};
use serde_json::{Map, Value};

use crate::binding::Callee;
use crate::error::Error;
use crate::host_state::HostState;
use crate::remote::Described;
use crate::session::{Session, SessionBuilder};
use crate::sink::RecordLog;

/// The agent-side host. Cheap to clone; every clone shares one
/// configuration and one set of connections.
#[derive(Clone)]
pub struct Host {
    state: Arc<HostState>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.state;
        f.debug_struct("Host")
            .field("agent", &i.agent)
            .field("mode", &i.mode)
            .field("composition", &i.composition)
            .field("identity", &i.identity)
            .field(
                "bindings",
                &i.bindings
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("declaration", &i.declaration)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// The handle of a built state.
    pub(crate) fn from_state(state: HostState) -> Self {
        Self {
            state: Arc::new(state),
        }
    }

    /// Opens the session `session_id` (non-empty; the caller chooses it,
    /// e.g. a run or conversation id) with no extra context members.
    pub fn session(&self, session_id: impl Into<String>) -> Result<Session, Error> {
        self.session_with(session_id, Map::new())
    }

    /// Opens a session whose contexts all carry `members` (well-known
    /// optional fields such as `trace`, `tenant`, `actor`, and
    /// `extensions`, §4.5–§4.6).
    pub fn session_with(
        &self,
        session_id: impl Into<String>,
        members: Map<String, Value>,
    ) -> Result<Session, Error> {
        self.session_builder(session_id).members(members).open()
    }

    /// Opens a session with its own configuration: members, a mode or a
    /// composition for the whole session or for one point (§7.2, §8), or
    /// strict turns (§3.1 rule 3). What is not set is the host's.
    ///
    /// ```no_run
    /// # fn demo(host: &hookwire_client::Host) -> Result<(), hookwire_client::Error> {
    /// use hookwire::{Composition, InterceptionPoint, Mode, Profile};
    /// let session = host
    ///     .session_builder("run-2")
    ///     .mode_at(InterceptionPoint::Output, Mode::EvaluateOnly)
    ///     .composition_at(
    ///         InterceptionPoint::PreToolCall,
    ///         Composition::new(Profile::ParallelStrictest),
    ///     )
    ///     .open()?;
    /// # let _ = session; Ok(()) }
    /// ```
    pub fn session_builder(&self, session_id: impl Into<String>) -> SessionBuilder {
        SessionBuilder::new(self.state.clone(), session_id.into())
    }

    /// The mode in effect.
    pub fn mode(&self) -> Mode {
        self.state.mode
    }

    /// The composition in effect (resolved).
    pub fn composition(&self) -> Composition {
        self.state.composition.resolved()
    }

    /// The names of the interceptors bound at `point`, in order.
    pub fn chain(&self, point: InterceptionPoint) -> Vec<String> {
        self.state
            .chain(point)
            .iter()
            .map(|b| b.name.clone())
            .collect()
    }

    /// Asks every remote interceptor service for its manifest, in
    /// registration order: what `hookwire check` prints, and how an operator
    /// verifies the chain before traffic flows.
    pub async fn describe_remotes(
        &self,
        timeout: Duration,
    ) -> Vec<(String, Result<Described, Error>)> {
        let calls = self.state.bindings.iter().filter_map(|b| match &b.callee {
            Callee::Service(r) => Some(async move {
                let result = r.describe(timeout).await.map_err(|reason| Error::Describe {
                    name: b.name.clone(),
                    reason,
                });
                (b.name.clone(), result)
            }),
            Callee::InProcess(_) => None,
        });
        futures::future::join_all(calls).await
    }

    /// The declaration contract version this host was built from
    /// (`agent-hooks-declaration/1.0`), stamped on every record; `None` for
    /// a host configured in code. A declared host is sealed: nothing about
    /// its configuration can change after load (§7.7.7).
    pub fn declaration(&self) -> Option<&str> {
        self.state.declaration.as_deref()
    }

    /// A declared host's in-memory record buffer: where its records go
    /// when no record sink was attached, bounded by the document's
    /// `records.max_buffered` (oldest dropped first). `None` for a host
    /// configured in code or one with sinks.
    pub fn record_buffer(&self) -> Option<&RecordLog> {
        self.state.record_buffer.as_ref()
    }

    /// The bound of each interceptor bound at `point`, in chain order
    /// (`None`: unbounded).
    pub fn timeouts(&self, point: InterceptionPoint) -> Vec<Option<Duration>> {
        self.state.chain(point).iter().map(|b| b.timeout).collect()
    }

    /// The longest one emission may wait on an approval: `None` when the
    /// host has no approval resolver (a liftable deny is final), the
    /// deadline the resolver is told otherwise, and [`Duration::MAX`]
    /// when it is unbounded (a declaration's `approval_resolver_ms:
    /// null`). A command that bounds an emission (`hookwire emit`) waits
    /// at least this long, so an approval is not given up on while a
    /// person still may decide it.
    pub fn approval_wait(&self) -> Option<Duration> {
        self.state
            .approval
            .as_ref()
            .map(|a| a.deadline.unwrap_or(Duration::MAX))
    }

    /// The names of the bindings granted the gateway's callback token
    /// ([`InterceptorBinding::receives_callback`](crate::InterceptorBinding::receives_callback)),
    /// in registration order: a gateway mints each its own token
    /// ([`callback_token_for`](crate::callback_token_for)).
    pub fn callback_bindings(&self) -> Vec<String> {
        self.state
            .bindings
            .iter()
            .filter(|b| b.callback)
            .map(|b| b.name.clone())
            .collect()
    }

    /// Asks every remote interceptor service's `grpc.health.v1` service for
    /// the status of `hookwire.v1.Interceptor`, in registration order, with
    /// each binding's metadata: `Ok("SERVING")` when all is well, and
    /// `Ok(`[`HEALTH_UNIMPLEMENTED`](crate::HEALTH_UNIMPLEMENTED)`)` for a
    /// reachable service that does not serve health (it answered
    /// `UNIMPLEMENTED`).
    pub async fn health_remotes(&self, timeout: Duration) -> Vec<(String, Result<String, Error>)> {
        let calls = self.state.bindings.iter().filter_map(|b| match &b.callee {
            Callee::Service(r) => Some(async move {
                let result = r.health(timeout).await.map_err(|reason| Error::Health {
                    name: b.name.clone(),
                    reason,
                });
                (b.name.clone(), result)
            }),
            Callee::InProcess(_) => None,
        });
        futures::future::join_all(calls).await
    }

    /// The remote endpoints, by interceptor name.
    pub fn remote_endpoints(&self) -> Vec<(String, String)> {
        self.state
            .bindings
            .iter()
            .filter_map(|b| match &b.callee {
                Callee::Service(r) => Some((b.name.clone(), r.endpoint().to_owned())),
                Callee::InProcess(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Error, Host};

    /// An endpoint nothing listens on: every call to it fails at once.
    fn gone() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        endpoint
    }

    #[tokio::test]
    async fn a_failed_health_check_is_a_health_error_and_a_failed_describe_a_describe_error() {
        let host = Host::builder("agent", "hookwire")
            .remote("gone", gone())
            .build()
            .unwrap();
        let timeout = Duration::from_millis(500);

        let health = host.health_remotes(timeout).await;
        assert_eq!(health.len(), 1);
        let (name, result) = &health[0];
        assert_eq!(name, "gone");
        let err = result.as_ref().unwrap_err();
        assert!(
            matches!(err, Error::Health { name, .. } if name == "gone"),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("health \"gone\": "), "{err}");

        let manifests = host.describe_remotes(timeout).await;
        let err = manifests[0].1.as_ref().unwrap_err();
        assert!(
            matches!(err, Error::Describe { name, .. } if name == "gone"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn connect_names_the_service_that_did_not_describe_itself() {
        let err = Host::builder("agent", "hookwire")
            .remote("gone", gone())
            .connect(Duration::from_millis(500))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Describe { name, .. } if name == "gone"),
            "{err:?}"
        );
    }
}
