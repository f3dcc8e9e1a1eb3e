//! `wire_approval`: protobuf bytes of the approval stream's messages (§9)
//! → the domain, and a decoded resolution through §9 validation.
//!
//! Input: a selector byte (0 `ApprovalRequest`, 1 `ApprovalResolution`,
//! modulo 2) and the encoded message. Properties: decoding never panics;
//! a decoded request offers a liftable deny and a context for its point,
//! and survives its own encoding; a resolution is never refused, survives
//! its own encoding, and §9 validation lifts only with a valid permitting
//! verdict and otherwise leaves a deny standing.

use hookwire::approval::{Resolved, StreamRequest, StreamResolution, validate_resolution};
use hookwire::{Decision, pb};
use prost::Message;

/// Selector of a `pb::ApprovalRequest` input.
pub const REQUEST: u8 = 0;
/// Selector of a `pb::ApprovalResolution` input.
pub const RESOLUTION: u8 = 1;

/// Frames a message as one input of this target.
pub fn input(selector: u8, message: &impl Message) -> Vec<u8> {
    let mut out = vec![selector];
    out.extend(message.encode_to_vec());
    out
}

/// One fuzz input.
pub fn run(data: &[u8]) {
    let Some((selector, bytes)) = crate::split_selector(data) else {
        return;
    };
    if selector % 2 == REQUEST {
        request(bytes);
    } else {
        resolution(bytes);
    }
}

fn request(bytes: &[u8]) {
    let Ok(wire) = pb::ApprovalRequest::decode(bytes) else {
        return;
    };
    let Ok(r) = StreamRequest::try_from(wire) else {
        return;
    };
    assert!(
        r.request.verdict.is_liftable(),
        "only a liftable deny is offered"
    );
    assert_eq!(r.request.context.point(), r.request.interception_point);
    r.request
        .context
        .validate()
        .expect("the offered context passes §4");
    let again = StreamRequest::try_from(pb::ApprovalRequest::from(&r))
        .expect("a re-encoded request decodes");
    assert_eq!(again, r, "decode(encode(r)) == r");
}

fn resolution(bytes: &[u8]) {
    let Ok(wire) = pb::ApprovalResolution::decode(bytes) else {
        return;
    };
    let r = StreamResolution::from(wire);
    let again = StreamResolution::from(pb::ApprovalResolution::from(&r));
    assert_eq!(again, r, "decode(encode(r)) == r");

    // §9 against the identity the resolution echoes and against another.
    let echoed = r.resolution.context_identity.clone();
    for identity in [echoed.as_deref(), Some("jcs-sha256:other")] {
        match validate_resolution(identity, &r.resolution) {
            Resolved::Lifted(v) => {
                v.validate().expect("a lifted verdict passes §5");
                assert!(
                    matches!(v.decision, Decision::Allow | Decision::Transform),
                    "only a permitting verdict lifts"
                );
            }
            Resolved::Stands(v) => {
                assert_eq!(v.decision, Decision::Deny, "what stands is a deny");
            }
        }
    }
}
