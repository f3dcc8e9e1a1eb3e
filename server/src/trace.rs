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

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tonic::metadata::MetadataMap;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one interceptor RPC, child of the caller's span when the
/// call carries W3C trace context.
pub(crate) fn handler_span(metadata: &MetadataMap, method: &str) -> Span {
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
        let parent = TraceContextPropagator::new().extract(&MetadataExtractor(metadata));
        // Fails only without an OpenTelemetry layer: nothing to link.
        let _ = span.set_parent(parent);
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
        let parent = TraceContextPropagator::new().extract(trace_context);
        // Fails only without an OpenTelemetry layer: nothing to link.
        let _ = span.set_parent(parent);
    }
}

struct MetadataExtractor<'a>(&'a MetadataMap);

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
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn traceparent_metadata_is_read() {
        let mut metadata = MetadataMap::new();
        metadata.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        let cx = TraceContextPropagator::new().extract(&MetadataExtractor(&metadata));
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        let none = TraceContextPropagator::new().extract(&MetadataExtractor(&MetadataMap::new()));
        assert!(!none.span().span_context().is_valid());
    }
}
