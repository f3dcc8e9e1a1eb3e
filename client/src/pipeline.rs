//! The emission pipeline: the I/O half of one emission (§6–§10), from a
//! built context to the [`Emission`] a session hands back.
//!
//! Order of work, each step failing closed with a record:
//! 1. the §4 envelope and §12.3 bounds (`host_error:context_invalid`, no
//!    interceptor runs, null identities);
//! 2. the input identity (§10.1–§10.2);
//! 3. composition, driven step by step by the pure [`Composer`]: one
//!    dispatch at a time in sequential profiles, every interceptor at once
//!    on one snapshot in parallel profiles, approval consultations;
//! 4. the enforced identity, recomputed only when a transform was applied
//!    (a context that left the JSON domain through a transform is denied);
//! 5. the response extensions released to the emission's consumers: only
//!    under enforcement, from bindings whose own verdict permitted, when
//!    the action runs (module `effect`; the grant was checked at dispatch);
//! 6. the payload-free record, delivered to every sink.

use std::panic::AssertUnwindSafe;

use futures::future::join_all;
use hookwire::wire::{PointRequest, context_to_request};
use hookwire::{
    AgentContext, Composition, HostError, InterceptionRecord, InvalidContext, Mode, ResolvedBy,
    Verdict, VerdictSummary, payload_free,
};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::binding::{Binding, Dispatched};
use crate::compose::{Combined, Composer, Plan, Step};
use crate::effect::Answers;
use crate::emission::Emission;
use crate::host_state::HostState;
use crate::trace;

/// The mode and composition one emission runs under: the host's, or a
/// session's or point's override (§7.2 and §8 let both vary).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) composition: Composition,
}

/// Runs one emission to completion inside its `hookwire.emission` span,
/// which closes once the record is delivered. Never fails and never
/// panics: every failure is a `host_error:*` deny.
pub(crate) async fn run(host: &HostState, settings: Settings, ctx: AgentContext) -> Emission {
    let span = trace::emission_span(&ctx, settings.mode, host.trace_payloads);
    // Boxed: the emission's state machine (composition, dispatch, the
    // transport's call) is kilobytes, and every future wrapping it
    // (session, span, timeout) would otherwise copy it when moved.
    let emission = Box::pin(counted(host, settings, ctx))
        .instrument(span.clone())
        .await;
    trace::record_emission(&span, &emission.verdict);
    trace::record_facts(&span, &emission.record);
    emission
}

/// [`run`] with the metrics, without the span.
async fn counted(host: &HostState, settings: Settings, ctx: AgentContext) -> Emission {
    let Some(metrics) = &host.metrics else {
        return emit(host, settings, ctx).await;
    };
    let flight = metrics.emission_started();
    let emission = emit(host, settings, ctx).await;
    flight.finished(
        emission.record.interception_point,
        settings.mode,
        &emission.verdict,
    );
    emission
}

/// [`run`] without the metrics.
async fn emit(host: &HostState, settings: Settings, mut ctx: AgentContext) -> Emission {
    let point = ctx.point();
    let chain = host.chain(point);
    if let Err(e) = ctx.validate().and_then(|()| ctx.check_limits(&host.limits)) {
        return reject(host, settings, ctx, chain.len(), &e);
    }
    // The last remote binding that sees the whole context takes the
    // encoded request instead of a copy; a restricted one encodes its own.
    let last_remote = chain
        .iter()
        .rposition(|b| b.is_remote() && b.sees_whole(&ctx));
    let needs_wire = chain.iter().any(|b| b.is_remote());
    let mut wire = WireCache::default();
    if needs_wire && let Err(e) = wire.encode(0, &ctx) {
        return reject(host, settings, ctx, chain.len(), &e);
    }
    let input_identity = match host.identity.compute(&ctx, &host.limits) {
        Ok(id) => id,
        Err(e) => return reject(host, settings, ctx, chain.len(), &e),
    };

    let plan = Plan {
        composition: settings.composition,
        mode: settings.mode,
        point,
        interceptors: chain.len(),
        resolver: host.approval.is_some(),
        limits: host.limits,
    };
    let mut composer = Composer::new(plan);
    let mut answers = Answers::default();
    let mut trust = TrustFacts::default();
    let mut step = composer.start();
    let combined = loop {
        step = match step {
            Step::Dispatch(i) => {
                let binding = &chain[i];
                let last = last_remote == Some(i);
                let generation = composer.context_generation();
                let (view, request) = prepare(binding, &ctx, &mut wire, generation, last);
                trust.sent(binding, view.as_ref());
                let seen = view.as_ref().map_or(&ctx, |(v, _)| v);
                // Boxed for the same reason as the emission in `run`.
                let mut d = Box::pin(binding.dispatch(seen, request)).await;
                trust.answered(binding, &d);
                let extensions = std::mem::take(&mut d.extensions);
                let permits = d.verdict.is_permit();
                answers.answered(&binding.name, permits, d.asked, d.refused, extensions);
                composer.on_verdict(i, d.verdict, &mut ctx)
            }
            Step::DispatchAll => {
                let generation = composer.context_generation();
                let (views, requests): (Vec<_>, Vec<_>) = chain
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let last = last_remote == Some(i);
                        prepare(b, &ctx, &mut wire, generation, last)
                    })
                    .unzip();
                for (b, view) in chain.iter().zip(&views) {
                    trust.sent(b, view.as_ref());
                }
                let calls = chain
                    .iter()
                    .zip(&views)
                    .zip(requests)
                    .map(|((b, view), r)| {
                        let seen = view.as_ref().map_or(&ctx, |(v, _)| v);
                        b.dispatch(seen, r)
                    });
                let results = join_all(calls).await;
                let mut verdicts = Vec::with_capacity(results.len());
                for (b, d) in chain.iter().zip(results) {
                    trust.answered(b, &d);
                    let permits = d.verdict.is_permit();
                    answers.answered(&b.name, permits, d.asked, d.refused, d.extensions);
                    verdicts.push(d.verdict);
                }
                composer.on_verdicts(verdicts, &mut ctx)
            }
            Step::Consult { verdict, .. } => {
                let resolved = match &host.approval {
                    Some(seam) => {
                        let asked = std::time::Instant::now();
                        let (resolved, approver) = seam
                            .consult(&host.identity, &host.limits, point, verdict, &ctx)
                            .await;
                        trust.approver = approver;
                        if let Some(m) = &host.metrics {
                            m.approval_resolved(&resolved, asked.elapsed());
                        }
                        resolved
                    }
                    None => hookwire::approval::Resolved::Stands(verdict),
                };
                composer.on_resolution(resolved, &mut ctx)
            }
            Step::Done(c) => break c,
        };
    };

    let Combined {
        mut verdict,
        mut decided_by,
        summaries,
        fold_truncated,
        resolved_by,
        transformed,
    } = combined;
    let enforced_identity = if transformed {
        // §10.2: a transform may push the context out of the envelope or
        // the JSON domain; such a context is never enforced.
        match ctx
            .validate()
            .and_then(|()| host.identity.compute(&ctx, &host.limits))
        {
            Ok(id) => id,
            Err(e) => {
                verdict =
                    Verdict::host_error(HostError::ContextInvalid).with_message(e.to_string());
                decided_by = None;
                None
            }
        }
    } else {
        input_identity.clone()
    };
    let verdicts = summaries
        .into_iter()
        .map(|s| VerdictSummary {
            name: chain.get(s.index).map(|b| b.name.clone()),
            ..s
        })
        .collect();
    let attribution = Attribution {
        decided_by,
        verdicts,
        fold_truncated,
        resolved_by,
    };
    let identities = (input_identity, enforced_identity);
    let settled = answers.settle(settings.mode, verdict.is_permit());
    trust.effects = settled.facts;
    finish(
        host,
        settings,
        ctx,
        verdict,
        identities,
        attribution,
        chain.len(),
        (settled.released, trust.into_record_extensions()),
    )
}

/// A restricted binding's copy of the context and the members withheld
/// from it.
type View = (AgentContext, Vec<String>);

/// Namespaced response metadata (§5.5) by interceptor name: what was
/// released to the emission's consumers.
type ResponseExtensions = Vec<(String, Map<String, Value>)>;

/// What one binding is sent: its restricted view of the context with the
/// members withheld from it (`None`: the whole context), and for a remote
/// binding the encoded request (shared through the cache only when it
/// sees the whole context).
fn prepare(
    binding: &Binding,
    ctx: &AgentContext,
    wire: &mut WireCache,
    generation: u64,
    last: bool,
) -> (Option<View>, Option<Result<Box<PointRequest>, HostError>>) {
    match binding.view(ctx) {
        Some(view) => {
            let request = binding.is_remote().then(|| {
                context_to_request(&view.0)
                    .map(Box::new)
                    .map_err(|_| HostError::ContextInvalid)
            });
            (Some(view), request)
        }
        None => {
            let request = binding
                .is_remote()
                .then(|| wire.request(generation, ctx, last));
            (None, request)
        }
    }
}

/// The trust boundaries' facts for the record, payload-free: which
/// members each restricted binding was not shown, and which bindings
/// answered with a transform or an effect outside their mutation grant.
/// They go under the record's `extensions.hookwire` as `visibility`
/// (`{binding: [member, ...]}`) and `mutation_refused` (`[binding, ...]`),
/// each only when not empty; what became of each binding's effect asks as
/// `effects` (`{binding: {kinds, fate}}`, module `effect`), when one asked;
/// and the approver the approval service authenticated, as `approval:
/// {approver}`, when the seam was consulted.
#[derive(Default)]
struct TrustFacts {
    withheld: Map<String, Value>,
    outside_grant: Vec<Value>,
    effects: Map<String, Value>,
    approver: Option<String>,
}

impl TrustFacts {
    fn sent(&mut self, binding: &Binding, view: Option<&View>) {
        if let Some((_, withheld)) = view
            && !withheld.is_empty()
        {
            let names = withheld.iter().map(|m| Value::from(m.as_str())).collect();
            self.withheld
                .insert(binding.name.clone(), Value::Array(names));
        }
    }

    fn answered(&mut self, binding: &Binding, d: &Dispatched) {
        if d.outside_grant {
            self.outside_grant.push(binding.name.as_str().into());
        }
    }

    fn into_record_extensions(self) -> Map<String, Value> {
        let mut hookwire = Map::new();
        if !self.withheld.is_empty() {
            hookwire.insert("visibility".into(), Value::Object(self.withheld));
        }
        if !self.outside_grant.is_empty() {
            hookwire.insert("mutation_refused".into(), Value::Array(self.outside_grant));
        }
        if !self.effects.is_empty() {
            hookwire.insert("effects".into(), Value::Object(self.effects));
        }
        if let Some(approver) = self.approver {
            let mut approval = Map::new();
            approval.insert("approver".into(), Value::String(approver));
            hookwire.insert("approval".into(), Value::Object(approval));
        }
        let mut extensions = Map::new();
        if !hookwire.is_empty() {
            extensions.insert("hookwire".into(), Value::Object(hookwire));
        }
        extensions
    }
}

/// The §6.3 / §10.2 rejection before dispatch: deny `context_invalid`,
/// null identities, no verdicts, a value-free message.
fn reject(
    host: &HostState,
    settings: Settings,
    ctx: AgentContext,
    registered: usize,
    error: &InvalidContext,
) -> Emission {
    let verdict = Verdict::host_error(HostError::ContextInvalid).with_message(error.to_string());
    let attribution = Attribution::default();
    finish(
        host,
        settings,
        ctx,
        verdict,
        (None, None),
        attribution,
        registered,
        (Vec::new(), Map::new()),
    )
}

/// How the combined verdict was reached, as the record tells it (§10.3).
#[derive(Default)]
struct Attribution {
    decided_by: Option<usize>,
    verdicts: Vec<VerdictSummary>,
    fold_truncated: Option<bool>,
    resolved_by: Option<ResolvedBy>,
}

/// Builds the payload-free record of an emission, hands it to every sink,
/// and returns the emission.
// Each argument is one part of the record; bundling them would only move
// the list into a struct literal at every call.
#[allow(clippy::too_many_arguments)]
fn finish(
    host: &HostState,
    settings: Settings,
    ctx: AgentContext,
    verdict: Verdict,
    (input_identity, enforced_identity): (Option<String>, Option<String>),
    attribution: Attribution,
    registered: usize,
    (extensions, record_extensions): (ResponseExtensions, Map<String, Value>),
) -> Emission {
    let record = InterceptionRecord {
        interception_point: ctx.point(),
        mode: settings.mode,
        verdict: payload_free(&verdict),
        input_identity,
        enforced_identity,
        identity_provider: host.identity.name().map(str::to_owned),
        session_id: ctx.session_id().to_owned(),
        sequence: sequence_of(&ctx),
        timestamp: ctx.timestamp().map(str::to_owned),
        trace: trace_of(&ctx),
        decided_by: attribution.decided_by,
        composition: settings.composition,
        verdicts: attribution.verdicts,
        fold_truncated: attribution.fold_truncated,
        resolved_by: attribution.resolved_by,
        interceptors_registered: registered,
        declaration: host.declaration.clone(),
        extensions: record_extensions,
    };
    deliver(host, &record);
    Emission {
        context: ctx,
        verdict,
        record,
        extensions,
    }
}

/// A context the host could not build (e.g. a model response whose JSON
/// text does not decode exactly): denied `host_error:context_invalid`
/// before any interceptor runs, with null identities (§6.3, §10.2).
pub(crate) fn refuse(
    host: &HostState,
    settings: Settings,
    ctx: AgentContext,
    error: &InvalidContext,
) -> Emission {
    let registered = host.chain(ctx.point()).len();
    reject(host, settings, ctx, registered, error)
}

/// The host's own deny for a context it could build but must not settle
/// clean (`host_error:streaming_unsupported` over a stream's unevaluated
/// residue, §12.1): no interceptor runs, `decided_by` is null, the input
/// identity is computed as for any emission.
pub(crate) fn self_deny(
    host: &HostState,
    settings: Settings,
    ctx: AgentContext,
    error: HostError,
) -> Emission {
    let registered = host.chain(ctx.point()).len();
    if let Err(e) = ctx.validate().and_then(|()| ctx.check_limits(&host.limits)) {
        return reject(host, settings, ctx, registered, &e);
    }
    let identity = match host.identity.compute(&ctx, &host.limits) {
        Ok(id) => id,
        Err(e) => return reject(host, settings, ctx, registered, &e),
    };
    finish(
        host,
        settings,
        ctx,
        Verdict::host_error(error),
        (identity.clone(), identity),
        Attribution::default(),
        registered,
        (Vec::new(), Map::new()),
    )
}

/// The record of an emission its caller cancelled (dropped its future)
/// after the session had taken its sequence number: a deny
/// `host_error:interceptor_failed` with `extensions.hookwire.cancelled:
/// true`, null identities (the emission never settled a context), so that
/// §12.2's total order has no gap without a record. `ctx` carries the core
/// members only.
///
/// The reason: §11 reserves `interceptor_timeout` for an interceptor that
/// exceeded the host's timeout, which did not happen; no reserved reason
/// names a caller's cancellation, and the reference Python emitter records
/// it as `interceptor_failed` (message `CancelledError`), so hookwire does
/// the same and says why in the message and the `cancelled` fact.
pub(crate) fn cancelled(host: &HostState, settings: Settings, ctx: AgentContext) {
    let registered = host.chain(ctx.point()).len();
    let mut record_extensions = Map::new();
    record_extensions.insert("hookwire".into(), serde_json::json!({"cancelled": true}));
    let verdict = Verdict::host_error(HostError::InterceptorFailed)
        .with_message("emission cancelled by its caller before its verdict");
    let _ = finish(
        host,
        settings,
        ctx,
        verdict,
        (None, None),
        Attribution::default(),
        registered,
        (Vec::new(), record_extensions),
    );
}

fn deliver(host: &HostState, record: &InterceptionRecord) {
    for sink in &host.sinks {
        // A faulty sink must not take the agent down with it.
        let delivered = std::panic::catch_unwind(AssertUnwindSafe(|| sink.record(record))).is_ok();
        if let Some(m) = &host.metrics {
            m.sink_called(delivered);
        }
    }
}

fn sequence_of(ctx: &AgentContext) -> i64 {
    ctx.get("sequence")
        .and_then(Value::as_u64)
        .and_then(|s| i64::try_from(s).ok())
        .unwrap_or(-1)
}

/// `{trace_id?, span_id?}` echoed from the context (§10.3).
fn trace_of(ctx: &AgentContext) -> Option<Map<String, Value>> {
    let trace = ctx.get("trace")?.as_object()?;
    let kept: Map<String, Value> = ["trace_id", "span_id"]
        .into_iter()
        .filter_map(|k| {
            trace
                .get(k)
                .filter(|v| v.is_string())
                .map(|v| (k.to_owned(), v.clone()))
        })
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// The context encoded for the wire, re-encoded only after a transform.
/// Boxed: the request is kilobytes, and it travels by value through the
/// binding, the balancer and the endpoint, each an async frame that would
/// otherwise copy it.
#[derive(Default)]
struct WireCache {
    cached: Option<(u64, Result<Box<PointRequest>, HostError>)>,
}

impl WireCache {
    fn encode(&mut self, generation: u64, ctx: &AgentContext) -> Result<(), InvalidContext> {
        let encoded = context_to_request(ctx);
        let result = encoded.as_ref().map(|_| ()).map_err(Clone::clone);
        self.cached = Some((
            generation,
            encoded.map(Box::new).map_err(|_| HostError::ContextInvalid),
        ));
        result
    }

    /// The request for the context at `generation`: a copy, or (`last`,
    /// for the last remote binding of the chain) the cached request itself;
    /// a later call re-encodes.
    fn request(
        &mut self,
        generation: u64,
        ctx: &AgentContext,
        last: bool,
    ) -> Result<Box<PointRequest>, HostError> {
        if self.cached.as_ref().is_none_or(|(g, _)| *g != generation) {
            let _ = self.encode(generation, ctx);
        }
        let request = if last {
            self.cached.take().map(|(_, r)| r)
        } else {
            self.cached.as_ref().map(|(_, r)| r.clone())
        };
        request.unwrap_or(Err(HostError::ContextInvalid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> AgentContext {
        AgentContext::from_json(json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "pre_tool_call",
            "timestamp": "2026-06-19T14:03:11.123Z",
            "sequence": 1,
            "agent": {"id": "a", "framework": "hookwire"},
            "session": {"id": "s"},
            "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": "ls"}},
        }))
        .unwrap()
    }

    #[test]
    fn the_last_remote_takes_the_request_and_a_later_call_re_encodes() {
        let ctx = ctx();
        let expected = Box::new(context_to_request(&ctx).unwrap());
        let mut wire = WireCache::default();
        wire.encode(0, &ctx).unwrap();
        assert_eq!(wire.request(0, &ctx, false), Ok(expected.clone()));
        assert!(wire.cached.is_some(), "a copy leaves the cache in place");
        assert_eq!(wire.request(0, &ctx, true), Ok(expected.clone()));
        assert!(wire.cached.is_none(), "the last remote takes it");
        assert_eq!(wire.request(0, &ctx, true), Ok(expected));
    }
}
