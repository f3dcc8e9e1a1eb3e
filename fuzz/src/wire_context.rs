//! `wire_context`: protobuf bytes of one of the eight point requests →
//! [`context_from_request`].
//!
//! Input: a selector byte (the point, modulo 8, in §3 order) and the
//! encoded request message. Properties, from `hookwire::wire`'s docs:
//! decoding never panics; a decoded context passes the §4 envelope check,
//! encodes again, and decodes to the same context; its spec JSON form
//! loads back to the same context.

use hookwire::wire::{PointRequest, context_from_request, context_to_request};
use hookwire::{AgentContext, ContextLimits, InterceptionPoint, pb};
use prost::Message;

/// The eight points in selector order.
pub const POINTS: [InterceptionPoint; 8] = [
    InterceptionPoint::AgentStartup,
    InterceptionPoint::Input,
    InterceptionPoint::PreModelCall,
    InterceptionPoint::PostModelCall,
    InterceptionPoint::PreToolCall,
    InterceptionPoint::PostToolCall,
    InterceptionPoint::Output,
    InterceptionPoint::AgentShutdown,
];

/// The selector byte of a point.
pub fn selector(point: InterceptionPoint) -> u8 {
    POINTS.iter().position(|p| *p == point).unwrap_or(0) as u8
}

/// Decodes `bytes` as the request message of the selected point.
pub fn decode_request(selector: u8, bytes: &[u8]) -> Option<PointRequest> {
    let point = POINTS[usize::from(selector) % POINTS.len()];
    let request = match point {
        InterceptionPoint::AgentStartup => {
            PointRequest::AgentStartup(pb::AgentStartupRequest::decode(bytes).ok()?)
        }
        InterceptionPoint::Input => PointRequest::Input(pb::InputRequest::decode(bytes).ok()?),
        InterceptionPoint::PreModelCall => {
            PointRequest::PreModelCall(pb::PreModelCallRequest::decode(bytes).ok()?)
        }
        InterceptionPoint::PostModelCall => {
            PointRequest::PostModelCall(pb::PostModelCallRequest::decode(bytes).ok()?)
        }
        InterceptionPoint::PreToolCall => {
            PointRequest::PreToolCall(pb::PreToolCallRequest::decode(bytes).ok()?)
        }
        InterceptionPoint::PostToolCall => {
            PointRequest::PostToolCall(pb::PostToolCallRequest::decode(bytes).ok()?)
        }
        InterceptionPoint::Output => PointRequest::Output(pb::OutputRequest::decode(bytes).ok()?),
        InterceptionPoint::AgentShutdown => {
            PointRequest::AgentShutdown(pb::AgentShutdownRequest::decode(bytes).ok()?)
        }
    };
    Some(request)
}

/// Encodes a request message as the bytes [`decode_request`] reads.
pub fn encode_request(request: &PointRequest) -> Vec<u8> {
    let mut out = vec![selector(request.point())];
    match request {
        PointRequest::AgentStartup(m) => m.encode(&mut out),
        PointRequest::Input(m) => m.encode(&mut out),
        PointRequest::PreModelCall(m) => m.encode(&mut out),
        PointRequest::PostModelCall(m) => m.encode(&mut out),
        PointRequest::PreToolCall(m) => m.encode(&mut out),
        PointRequest::PostToolCall(m) => m.encode(&mut out),
        PointRequest::Output(m) => m.encode(&mut out),
        PointRequest::AgentShutdown(m) => m.encode(&mut out),
    }
    .expect("a Vec grows as needed");
    out
}

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Some((selector, bytes)) = crate::split_selector(data) else {
        return;
    };
    let Some(request) = decode_request(selector, bytes) else {
        return;
    };
    let point = request.point();
    let Ok(ctx) = context_from_request(request) else {
        return;
    };
    assert_eq!(ctx.point(), point, "the request kind names the point");
    ctx.validate().expect("a decoded context passes §4");

    let encoded = context_to_request(&ctx).expect("a decoded context encodes");
    let again = context_from_request(encoded).expect("a re-encoded context decodes");
    assert_eq!(again, ctx, "decode(encode(c)) == c");

    let from_json = AgentContext::from_json(ctx.to_json()).expect("the spec JSON form loads");
    assert_eq!(from_json, ctx, "the spec JSON form is the same context");

    // The identity may refuse (an integer beyond 2^53 has no canonical
    // form); it must not panic.
    let limits = ContextLimits::default();
    if ctx.check_limits(&limits).is_ok() {
        let _ = ctx.jcs_sha256_identity(&limits);
    }
}
