//! The state of one session, held in one value ([`SessionState`]) that the
//! [`Session`](crate::Session) handle shares with the task that shuts an
//! unclosed session down: the §3.1 and §6.1a lifecycle (startup first,
//! shutdown last, nothing but shutdown after a denied startup), the
//! admission of each emission in the §3.1 order, and the run of one
//! emission (its sequence, its context, its cancellation guard).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookwire::{AgentContext, HostError, InterceptionPoint, InvalidContext};
use serde_json::{Map, Value};
use tokio::sync::{RwLock, RwLockReadGuard};

use super::cancel::Unsettled;
use super::context::ContextBase;
use super::members::{shutdown_members, startup_members};
use super::order::{Forgotten, MAX_OPEN_CALLS, Order, OrderOptions, PostModel};
use super::overrides::Overrides;
use crate::emission::Emission;
use crate::error::Error;
use crate::host_state::HostState;
use crate::metrics::OpenSession;
use crate::payload::ShutdownReason;
use crate::pipeline;

/// Where a session stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lifecycle {
    Fresh,
    Running,
    StartupDenied,
    Closed,
}

/// Everything one session holds.
pub(super) struct SessionState {
    pub(super) host: Arc<HostState>,
    pub(super) id: String,
    /// What every context of the session starts from.
    pub(super) base: ContextBase,
    pub(super) overrides: Overrides,
    order: Mutex<Order>,
    next_sequence: AtomicU64,
    lifecycle: RwLock<Lifecycle>,
    /// What the lifecycle last settled to, and the reason of a denied
    /// startup: read by the state queries without waiting for an
    /// emission that holds the lifecycle.
    settled: Mutex<(Lifecycle, Option<String>)>,
    /// Keeps the host's open-sessions gauge up while the state lives.
    _open: Option<OpenSession>,
}

impl SessionState {
    /// A fresh session `id` of `host`, opened with `members` and
    /// `overrides`; `order` says how its ledger keeps calls and whether it
    /// has turns ([`SessionBuilder`](super::SessionBuilder)).
    pub(super) fn new(
        host: Arc<HostState>,
        id: String,
        members: Map<String, Value>,
        overrides: Overrides,
        order: OrderOptions,
    ) -> Self {
        Self {
            _open: host.metrics.as_ref().map(|m| m.session_opened()),
            base: ContextBase::new(&id, members),
            host,
            id,
            overrides,
            order: Mutex::new(Order::new(order)),
            next_sequence: AtomicU64::new(0),
            lifecycle: RwLock::new(Lifecycle::Fresh),
            settled: Mutex::new((Lifecycle::Fresh, None)),
        }
    }

    /// Whether the session started and was not shut down: what dropping
    /// it must still close with `agent_shutdown`. Asked where nothing else
    /// holds the lifecycle (the handle's `Drop`).
    pub(super) fn is_open(&self) -> bool {
        self.lifecycle
            .try_read()
            .is_ok_and(|l| matches!(*l, Lifecycle::Running | Lifecycle::StartupDenied))
    }

    /// Where the lifecycle stands, and the reason of a denied startup.
    pub(super) fn lifecycle_now(&self) -> (Lifecycle, Option<String>) {
        self.settled_state().clone()
    }

    fn settled_state(&self) -> MutexGuard<'_, (Lifecycle, Option<String>)> {
        // Two plain values, each written whole.
        self.settled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `agent_startup`: must come first. A denied startup closes the
    /// session to everything but [`SessionState::shutdown`].
    pub(super) async fn start(&self, tools_registered: Vec<String>) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        if *state != Lifecycle::Fresh {
            return Err(Error::AlreadyStarted(self.id.clone()));
        }
        let e = self
            .run(
                InterceptionPoint::AgentStartup,
                startup_members(tools_registered),
            )
            .await;
        *state = if e.proceeds() {
            Lifecycle::Running
        } else {
            Lifecycle::StartupDenied
        };
        let reason = (!e.proceeds()).then(|| e.reason().unwrap_or("denied").to_owned());
        *self.settled_state() = (*state, reason);
        Ok(e)
    }

    /// `agent_shutdown`: waits for in-flight emissions, emits last, and
    /// closes the session. After a denied startup the reason is `error`
    /// whatever was asked (§6.1a).
    pub(super) async fn shutdown(&self, reason: ShutdownReason) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        let reason = match *state {
            Lifecycle::Fresh => return Err(Error::NotStarted(self.id.clone())),
            Lifecycle::Closed => return Err(Error::Closed(self.id.clone())),
            Lifecycle::StartupDenied => ShutdownReason::Error,
            Lifecycle::Running => reason,
        };
        let e = self
            .run(InterceptionPoint::AgentShutdown, shutdown_members(reason))
            .await;
        *state = Lifecycle::Closed;
        self.settled_state().0 = Lifecycle::Closed;
        Ok(e)
    }

    /// One emission between startup and shutdown: admitted in order
    /// (refused out of order only when `enforce`), run, and its pair
    /// settled with the verdict.
    pub(super) async fn admitted(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, post_model, enforce)?;
        let e = self.run(point, members).await;
        // The emission's own context carries the members the ledger pairs
        // by (the ids, the governed call), so they are not copied first.
        let forgotten =
            self.order()
                .settled(point, e.context().members(), e.proceeds(), e.target());
        self.forgot(forgotten);
        Ok(e)
    }

    /// The host's own deny for an emission it built but must not settle
    /// clean (a stream's unevaluated residue, §12.1): admitted in order,
    /// recorded, never dispatched.
    pub(super) async fn self_denied(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        error: HostError,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, PostModel::Closing, true)?;
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, members);
        Ok(pipeline::self_deny(&self.host, settings, ctx, error))
    }

    /// A context the host could not build from what it was given: denied
    /// `host_error:context_invalid` before dispatch (§6.3).
    pub(super) async fn refused(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
        error: &InvalidContext,
    ) -> Result<Emission, Error> {
        let _running = self.running(point).await?;
        self.admit(point, &members, PostModel::Closing, true)?;
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, members);
        Ok(pipeline::refuse(&self.host, settings, ctx, error))
    }

    /// Holds the lifecycle open for one emission between startup and
    /// shutdown (shutdown waits for it).
    async fn running(
        &self,
        point: InterceptionPoint,
    ) -> Result<RwLockReadGuard<'_, Lifecycle>, Error> {
        if matches!(
            point,
            InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown
        ) {
            return Err(Error::LifecyclePoint {
                session: self.id.clone(),
                point,
            });
        }
        let state = self.lifecycle.read().await;
        match *state {
            Lifecycle::Running => Ok(state),
            Lifecycle::Fresh => Err(Error::NotStarted(self.id.clone())),
            Lifecycle::StartupDenied => Err(Error::StartupDenied(self.id.clone())),
            Lifecycle::Closed => Err(Error::Closed(self.id.clone())),
        }
    }

    fn admit(
        &self,
        point: InterceptionPoint,
        members: &Map<String, Value>,
        post_model: PostModel,
        enforce: bool,
    ) -> Result<(), Error> {
        let forgotten = self
            .order()
            .admit(point, members, post_model, enforce)
            .map_err(|reason| Error::OutOfOrder {
                session: self.id.clone(),
                point,
                reason,
            })?;
        self.forgot(forgotten);
        Ok(())
    }

    /// Reports an open call the ledger forgot past its bound: counted,
    /// and logged the 1st, 2nd, 4th, ... time, so that a caller that never
    /// emits its posts is seen without a line per emission.
    fn forgot(&self, forgotten: Option<Forgotten>) {
        let Some(f) = forgotten else { return };
        if let Some(m) = &self.host.metrics {
            m.open_call_forgotten(f.point);
        }
        if f.total.is_power_of_two() {
            tracing::warn!(
                session = %self.id,
                point = %f.point,
                forgotten = f.total,
                bound = MAX_OPEN_CALLS,
                "session holds more open calls than the bound: the oldest is forgotten, and its post will be refused out of order"
            );
        }
    }

    /// The session's §3.1 ledger.
    pub(super) fn order(&self) -> MutexGuard<'_, Order> {
        // The ledger holds no invariant a panic could break half-way.
        self.order.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Builds the context (sequence assigned here, atomically) and runs it.
    /// If the caller drops the future before the record is delivered, the
    /// [`Unsettled`] guard delivers a cancellation record for the taken
    /// sequence, so a cancelled emission leaves no gap (§12.2 item 3).
    async fn run(&self, point: InterceptionPoint, conditional: Map<String, Value>) -> Emission {
        let settings = self.overrides.at(&self.host, point);
        let ctx = self.context(point, conditional);
        let guard = Unsettled::arm(&self.host, &self.base, settings, &ctx);
        let emission = pipeline::run(&self.host, settings, ctx).await;
        // The record was delivered in the same poll that returned.
        guard.settled();
        emission
    }

    /// The context of the next emission at `point`, its sequence taken.
    pub(super) fn context(
        &self,
        point: InterceptionPoint,
        conditional: Map<String, Value>,
    ) -> AgentContext {
        let sequence = self.next_sequence.fetch_add(1, Ordering::SeqCst);
        self.base
            .assemble(&self.host.agent, point, sequence, conditional)
    }
}
