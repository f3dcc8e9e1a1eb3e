//! The state every session of a host shares: the agent's identity, the
//! mode, the composition, the identity provider, the approval seam, the
//! record sinks and the built chain of bindings (one chain per point).
//!
//! Built once by [`HostBuilder`](crate::HostBuilder) (or the declaration
//! loader), then read by sessions and the emission pipeline, which depend
//! on it and on nothing above it. The one change after building is
//! [`HostState::narrow_to_manifests`], which a `connect` runs before the
//! state is shared.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use hookwire::{Composition, ContextLimits, InterceptionPoint, Mode, RecordSink};
use serde_json::{Map, Value};

use crate::approval::ApprovalSeam;
use crate::binding::{Binding, Callee};
use crate::identity::IdentityProvider;
use crate::metrics::HostInstruments;
use crate::sink::RecordLog;

/// A host's configuration, built and checked.
pub(crate) struct HostState {
    pub(crate) agent: Map<String, Value>,
    pub(crate) mode: Mode,
    pub(crate) composition: Composition,
    pub(crate) identity: IdentityProvider,
    pub(crate) limits: ContextLimits,
    pub(crate) approval: Option<ApprovalSeam>,
    pub(crate) sinks: Vec<Arc<dyn RecordSink>>,
    pub(crate) bindings: Vec<Arc<Binding>>,
    /// The chain bound at each point, in registration order, indexed by
    /// the point's position in [`InterceptionPoint::ALL`].
    chains: [Vec<Arc<Binding>>; 8],
    /// The declaration contract version the host was built from (§7.7.8);
    /// `None` for a host configured in code.
    pub(crate) declaration: Option<String>,
    /// A declared host's in-memory record buffer.
    pub(crate) record_buffer: Option<RecordLog>,
    /// The host's metric handles, when metrics were registered.
    pub(crate) metrics: Option<HostInstruments>,
    /// Whether emission spans carry the context (default off).
    pub(crate) trace_payloads: bool,
}

/// Everything [`HostState::new`] needs; the chains are derived.
pub(crate) struct HostParts {
    pub(crate) agent: Map<String, Value>,
    pub(crate) mode: Mode,
    pub(crate) composition: Composition,
    pub(crate) identity: IdentityProvider,
    pub(crate) limits: ContextLimits,
    pub(crate) approval: Option<ApprovalSeam>,
    pub(crate) sinks: Vec<Arc<dyn RecordSink>>,
    pub(crate) bindings: Vec<Arc<Binding>>,
    pub(crate) declaration: Option<String>,
    pub(crate) record_buffer: Option<RecordLog>,
    pub(crate) metrics: Option<HostInstruments>,
    pub(crate) trace_payloads: bool,
}

/// A remote binding whose `Describe` call failed while narrowing.
#[derive(Debug)]
pub(crate) struct DescribeFailure {
    /// The binding's position in registration order.
    pub(crate) index: usize,
    /// The binding's name.
    pub(crate) name: String,
    /// What failed (never a metadata value).
    pub(crate) reason: String,
}

impl HostState {
    /// The state of `parts`, with each point's chain derived.
    pub(crate) fn new(parts: HostParts) -> Self {
        let chains = chains_of(&parts.bindings);
        Self {
            agent: parts.agent,
            mode: parts.mode,
            composition: parts.composition,
            identity: parts.identity,
            limits: parts.limits,
            approval: parts.approval,
            sinks: parts.sinks,
            bindings: parts.bindings,
            chains,
            declaration: parts.declaration,
            record_buffer: parts.record_buffer,
            metrics: parts.metrics,
            trace_payloads: parts.trace_payloads,
        }
    }

    /// The chain bound at `point`, in registration order.
    pub(crate) fn chain(&self, point: InterceptionPoint) -> &[Arc<Binding>] {
        &self.chains[point_index(point)]
    }

    /// Binds each remote binding that `select` picks (by registration
    /// index) at the points its service's `Describe` manifest declares,
    /// kept within `within` when given. A manifest that declares nothing
    /// there (an empty list means every point) leaves the binding where it
    /// was. Each remote is the one already built, asked once and never
    /// rebuilt. The first service that does not answer within `timeout`
    /// fails the whole narrowing.
    pub(crate) async fn narrow_to_manifests(
        &mut self,
        timeout: Duration,
        within: Option<&BTreeSet<InterceptionPoint>>,
        select: impl Fn(usize, &Binding) -> bool,
    ) -> Result<(), DescribeFailure> {
        // The chains hold the only other references to the bindings.
        self.chains = Default::default();
        let narrowed = self.narrow_bindings(timeout, within, select).await;
        self.chains = chains_of(&self.bindings);
        narrowed
    }

    async fn narrow_bindings(
        &mut self,
        timeout: Duration,
        within: Option<&BTreeSet<InterceptionPoint>>,
        select: impl Fn(usize, &Binding) -> bool,
    ) -> Result<(), DescribeFailure> {
        for (index, slot) in self.bindings.iter_mut().enumerate() {
            let points = {
                let binding: &Binding = slot;
                let Callee::Service(remote) = &binding.callee else {
                    continue;
                };
                if !select(index, binding) {
                    continue;
                }
                let failure = |reason| DescribeFailure {
                    index,
                    name: binding.name.clone(),
                    reason,
                };
                let manifest = remote.describe(timeout).await.map_err(failure)?.manifest;
                let points: BTreeSet<InterceptionPoint> = manifest
                    .points
                    .into_iter()
                    .filter(|p| within.is_none_or(|w| w.contains(p)))
                    .collect();
                if points.is_empty() {
                    continue;
                }
                points
            };
            let name = slot.name.clone();
            let Some(binding) = Arc::get_mut(slot) else {
                return Err(DescribeFailure {
                    index,
                    name,
                    reason: "the host was shared before it was connected".into(),
                });
            };
            binding.points = Some(points);
        }
        Ok(())
    }
}

/// The chain bound at each point, in registration order.
fn chains_of(bindings: &[Arc<Binding>]) -> [Vec<Arc<Binding>>; 8] {
    InterceptionPoint::ALL.map(|p| {
        bindings
            .iter()
            .filter(|b| b.is_bound_at(p))
            .cloned()
            .collect()
    })
}

fn point_index(point: InterceptionPoint) -> usize {
    InterceptionPoint::ALL
        .iter()
        .position(|p| *p == point)
        .unwrap_or_default()
}
