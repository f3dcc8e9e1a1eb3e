//! Traces: the host's `tracing` spans and the W3C trace context it sends.
//!
//! One `hookwire.emission` span per emission (point, mode, session,
//! sequence, then decision and, for a deny, reason, and the record's facts
//! beyond §10.3 as `hookwire.extensions`), one `hookwire.dispatch` span per
//! call to a binding (name, endpoint, outcome), its child. Spans carry no
//! payload unless the host was built with
//! [`HostBuilder::trace_payloads`](crate::HostBuilder::trace_payloads).
//!
//! Trace context is OpenTelemetry's, read from the spans through
//! `tracing-opentelemetry`: when the process has installed an
//! OpenTelemetry layer, each remote call carries `traceparent` (and
//! `tracestate`) as gRPC metadata and each approval request carries them
//! in its `trace_context` map; without one, nothing is sent. A context
//! whose `trace` member (§4.5) names a W3C trace and span makes that span
//! the emission span's remote parent, so the host continues the agent's
//! trace. The header and the ids are written and read by
//! [`hookwire::trace_context`]; this module only adapts them to
//! OpenTelemetry's span context.

use std::collections::HashMap;

use hookwire::trace_context::{
    SAMPLED, TRACEPARENT, TRACESTATE, TraceParent, parse_parent_id, parse_trace_id,
};
use hookwire::{AgentContext, HostError, InterceptionRecord, Verdict};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use serde_json::Value;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one emission under `mode`. Its OpenTelemetry parent is the
/// context's `trace`, when that names a valid W3C trace and span. The mode
/// is an attribute so that a deny in `evaluate_only`, which blocked
/// nothing, never reads as enforcement (§8).
pub(crate) fn emission_span(ctx: &AgentContext, mode: hookwire::Mode, payloads: bool) -> Span {
    let span = tracing::info_span!(
        "hookwire.emission",
        hookwire.point = ctx.point().as_str(),
        hookwire.mode = mode.as_str(),
        hookwire.session_id = ctx.session_id(),
        // As i64: OpenTelemetry has no unsigned integers.
        hookwire.sequence = ctx.get("sequence").and_then(serde_json::Value::as_i64),
        hookwire.decision = Empty,
        hookwire.reason = Empty,
        hookwire.extensions = Empty,
        hookwire.context = Empty,
        otel.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if payloads {
        span.record("hookwire.context", ctx.to_json().to_string());
    }
    if let Some(parent) = continued_trace(ctx) {
        // Fails only without an OpenTelemetry layer: nothing to continue.
        let _ = span.set_parent(parent);
    }
    span
}

/// Records the emission's combined verdict on its span: the decision, and
/// the reason of a deny.
pub(crate) fn record_emission(span: &Span, verdict: &Verdict) {
    span.record("hookwire.decision", verdict.decision.as_str());
    if verdict.decision == hookwire::Decision::Deny {
        span.record("hookwire.reason", verdict.reason.as_deref().unwrap_or(""));
    }
}

/// Records the facts of the emission's record that §10.3 has no member
/// for (its `extensions`: which members a binding was not shown, refused
/// mutations, ...) on its span, as one JSON text, whatever facts there
/// are; nothing when there are none. Payload-free, as the record is.
pub(crate) fn record_facts(span: &Span, record: &InterceptionRecord) {
    if !record.extensions.is_empty() {
        let facts = Value::Object(record.extensions.clone()).to_string();
        span.record("hookwire.extensions", facts);
    }
}

/// The span of one call to a binding; `endpoint` is `None` in-process.
pub(crate) fn dispatch_span(binding: &str, endpoint: Option<&str>) -> Span {
    tracing::info_span!(
        "hookwire.dispatch",
        otel.kind = if endpoint.is_some() {
            "client"
        } else {
            "internal"
        },
        hookwire.binding = binding,
        hookwire.endpoint = endpoint.unwrap_or("in-process"),
        hookwire.outcome = Empty,
        otel.status_code = Empty,
    )
}

/// Records how a call went, from the verdict that took its slot: a
/// reserved deny is the host's own, so it names the failure exactly.
pub(crate) fn record_dispatch(span: &Span, verdict: &Verdict) {
    let outcome = dispatch_outcome(verdict);
    span.record("hookwire.outcome", outcome);
    if outcome != "ok" {
        span.record("otel.status_code", "ERROR");
    }
}

/// `ok`, `timeout`, `invalid_verdict` or `failed`.
fn dispatch_outcome(verdict: &Verdict) -> &'static str {
    match verdict.host_error_reason() {
        None => "ok",
        Some(HostError::InterceptorTimeout) => "timeout",
        Some(HostError::VerdictInvalid) => "invalid_verdict",
        Some(_) => "failed",
    }
}

/// Writes the trace context of `span` into gRPC metadata.
pub(crate) fn inject_metadata(span: &Span, metadata: &mut MetadataMap) {
    for (key, value) in trace_headers(span) {
        if let Ok(value) = AsciiMetadataValue::try_from(value) {
            metadata.insert(AsciiMetadataKey::from_static(key), value);
        }
    }
}

/// The trace context of `span` as a map (`traceparent`, `tracestate`);
/// empty when it has none.
pub(crate) fn context_map(span: &Span) -> HashMap<String, String> {
    trace_headers(span)
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

/// The W3C trace context of `span`: its `traceparent` and, when it has
/// entries, its `tracestate`; nothing when the span has no valid
/// OpenTelemetry context (no OpenTelemetry layer in the process).
fn trace_headers(span: &Span) -> impl Iterator<Item = (&'static str, String)> {
    let cx = span.context();
    let span = cx.span();
    let sc = span.span_context();
    let parent = sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        parent_id: sc.span_id().to_bytes(),
        // The sampled bit is the only flag this version sends.
        flags: sc.trace_flags().to_u8() & SAMPLED,
    });
    let state = parent
        .is_some()
        .then(|| sc.trace_state().header())
        .filter(|state| !state.is_empty());
    let parent = parent.map(|p| (TRACEPARENT, p.to_string()));
    parent
        .into_iter()
        .chain(state.map(|state| (TRACESTATE, state)))
}

/// The remote span a context's `trace` member names (§4.5): `trace_id` as
/// 32 and `span_id` as 16 lowercase hex digits, not all zero; `flags`
/// (W3C trace flags, default sampled) when present.
fn continued_trace(ctx: &AgentContext) -> Option<opentelemetry::Context> {
    let trace = ctx.get("trace")?.as_object()?;
    let trace_id = parse_trace_id(trace.get("trace_id")?.as_str()?)?;
    let span_id = parse_parent_id(trace.get("span_id")?.as_str()?)?;
    let flags = trace
        .get("flags")
        .and_then(Value::as_u64)
        .and_then(|f| u8::try_from(f).ok())
        .map_or(TraceFlags::SAMPLED, TraceFlags::new);
    let remote = SpanContext::new(
        TraceId::from_bytes(trace_id),
        SpanId::from_bytes(span_id),
        flags,
        true,
        TraceState::default(),
    );
    remote
        .is_valid()
        .then(|| opentelemetry::Context::new().with_remote_span_context(remote))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(trace: Value) -> AgentContext {
        AgentContext::from_json(json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "input",
            "timestamp": "2026-06-19T14:03:11.123Z",
            "sequence": 1,
            "agent": {"id": "a", "framework": "hookwire"},
            "session": {"id": "s"},
            "input": {"content": "hi", "role": "user"},
            "trace": trace,
        }))
        .unwrap()
    }

    #[test]
    fn a_w3c_trace_member_is_continued_and_anything_else_is_not() {
        let good = ctx(
            json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7"}),
        );
        let cx = continued_trace(&good).expect("continued");
        let sc = cx.span().span_context().clone();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_remote() && sc.is_sampled());
        let unsampled = ctx(
            json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "flags": 0}),
        );
        let sc = continued_trace(&unsampled).unwrap();
        assert!(!sc.span().span_context().is_sampled());
        for bad in [
            json!({"trace_id": "ab", "span_id": "00f067aa0ba902b7"}),
            json!({"trace_id": "4BF92F3577B34DA6A3CE929D0E0E4736", "span_id": "00f067aa0ba902b7"}),
            json!({"trace_id": "00000000000000000000000000000000", "span_id": "00f067aa0ba902b7"}),
            json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0000000000000000"}),
            json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}),
        ] {
            assert!(continued_trace(&ctx(bad.clone())).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_outcome_of_a_call_is_read_from_the_reserved_reason_only() {
        assert_eq!(dispatch_outcome(&Verdict::allow()), "ok");
        assert_eq!(dispatch_outcome(&Verdict::deny("policy")), "ok");
        let cases = [
            (HostError::InterceptorTimeout, "timeout"),
            (HostError::VerdictInvalid, "invalid_verdict"),
            (HostError::InterceptorFailed, "failed"),
            (HostError::ContextInvalid, "failed"),
        ];
        for (error, outcome) in cases {
            assert_eq!(dispatch_outcome(&Verdict::host_error(error)), outcome);
        }
    }

    #[test]
    fn without_an_opentelemetry_layer_nothing_is_injected() {
        let span = tracing::info_span!("s");
        let mut metadata = MetadataMap::new();
        inject_metadata(&span, &mut metadata);
        assert!(metadata.is_empty());
        assert!(context_map(&span).is_empty());
    }
}
