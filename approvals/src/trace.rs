//! The span of each approval request a host sends, parented on the trace
//! context the request message carries (the `Resolve` stream is shared by
//! every request of a host, so that context travels in the message, not
//! in the call's metadata). Spans carry no payload.

use std::collections::HashMap;

use tracing::Span;

/// The span of one approval request received on a host's stream, child of
/// the host's emission span when the request carries trace context.
pub(crate) fn approval_span(
    trace_context: &HashMap<String, String>,
    request_id: &str,
    peer: &str,
) -> Span {
    let span = tracing::info_span!(
        "hookwire.approval.request",
        otel.kind = "server",
        hookwire.request_id = request_id,
        hookwire.host = peer,
    );
    hookwire_server::join_trace(&span, trace_context);
    span
}
