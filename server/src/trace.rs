//! Traces on the service side: the W3C trace context a host sends is
//! extracted, so a service's spans join the host's trace.
//!
//! Each interceptor RPC runs in a `hookwire.handle` span whose
//! OpenTelemetry parent is the host's `hookwire.dispatch` span, read from
//! the call's `traceparent` / `tracestate` metadata. [`join_trace`] does
//! the same for trace context a message carries (the approval service's
//! `hookwire.approval.request` spans). Spans carry no payload. Without an
//! OpenTelemetry layer in the process the spans are plain `tracing` spans
//! and nothing is linked.
//!
//! The headers are read by [`hookwire::trace_context`]; this module only
//! turns what they name into OpenTelemetry's remote span context.

use std::collections::HashMap;
use std::str::FromStr;

use hookwire::trace_context::{SAMPLED, TRACEPARENT, TRACESTATE, TraceParent};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tonic::metadata::MetadataMap;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one interceptor RPC, child of the caller's span when the
/// call carries W3C trace context: in its metadata
/// ([`MetadataExtractor`]) or, on the `Multiplex` stream, in the
/// emission's `trace_context` map.
pub(crate) fn handler_span(carrier: &dyn Extractor, method: &str) -> Span {
    let span = tracing::info_span!(
        "hookwire.handle",
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = "hookwire.v1.Interceptor",
        rpc.method = method,
        hookwire.point = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        // Fails only without an OpenTelemetry layer: nothing to link.
        let _ = span.set_parent(remote_parent(carrier));
    }
    span
}

/// Marks a handler span failed when the RPC answered an error status.
pub(crate) fn record_handled(span: &Span, ok: bool) {
    if !ok {
        span.record("otel.status_code", "ERROR");
    }
}

/// Makes `span` a child of the remote span that the W3C trace context in
/// `trace_context` (`traceparent`, `tracestate`) names, so that a
/// service's span joins the caller's trace. For context that travels in a
/// message rather than in call metadata: the approval service's `Resolve`
/// stream carries every request of a host, each with its own context. A
/// no-op without context, for a disabled span, or without an
/// OpenTelemetry layer in the process.
pub fn join_trace(span: &Span, trace_context: &HashMap<String, String>) {
    if !span.is_disabled() && !trace_context.is_empty() {
        let _ = span.set_parent(remote_parent(trace_context));
    }
}

/// The OpenTelemetry parent of a span of ours: the current context with
/// the host's span as its remote span when `carrier` holds a valid
/// `traceparent` (and its `tracestate`, when that is valid too), else the
/// current context as it is.
fn remote_parent(carrier: &dyn Extractor) -> opentelemetry::Context {
    let current = opentelemetry::Context::current();
    let Some(parent) = carrier.get(TRACEPARENT).and_then(TraceParent::parse) else {
        return current;
    };
    let state = carrier
        .get(TRACESTATE)
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.parent_id),
        // The sampled bit is the only flag this version knows.
        TraceFlags::new(parent.flags & SAMPLED),
        true,
        state,
    );
    current.with_remote_span_context(remote)
}

/// A call's gRPC metadata as where its trace context is read from.
pub(crate) struct MetadataExtractor<'a>(pub(crate) &'a MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| match k {
                tonic::metadata::KeyRef::Ascii(k) => Some(k.as_str()),
                tonic::metadata::KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_metadata_is_read() {
        let mut metadata = MetadataMap::new();
        metadata.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        let cx = remote_parent(&MetadataExtractor(&metadata));
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        let none = remote_parent(&MetadataExtractor(&MetadataMap::new()));
        assert!(!none.span().span_context().is_valid());
    }
}
