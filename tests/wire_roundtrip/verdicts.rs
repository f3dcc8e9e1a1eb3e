//! Every verdict, through the wire and back unchanged.

use super::*;

fn label() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z:_]{0,12}", text()]
}

fn reason() -> impl Strategy<Value = Option<String>> {
    prop::option::of(label().prop_filter("not reserved", |r| !r.starts_with("host_error:")))
}

fn warning() -> impl Strategy<Value = Warning> {
    (prop::option::of(label()), prop::option::of(text()))
        .prop_map(|(reason, message)| Warning { reason, message })
}

/// A valid verdict of any decision.
fn verdict() -> BoxedStrategy<Verdict> {
    verdict_with(false)
}

/// A valid verdict whose JSON is, with `safe`, within the canonical
/// integer domain a whole response is measured in (§5.5 bounds).
fn verdict_with(safe: bool) -> BoxedStrategy<Verdict> {
    (
        prop::sample::select(vec![Decision::Allow, Decision::Deny, Decision::Transform]),
        reason(),
        prop::option::of(text()),
        prop::collection::vec(warning(), 0..3),
        prop::option::of(json_object_with(safe)),
        (
            "\\$target(\\.[a-z]{1,5}|\\[[0-9]\\])*",
            json_value_with(safe),
        ),
        prop::option::of(json_object_with(true)),
        prop::collection::vec(label(), 0..3),
    )
        .prop_map(
            |(decision, reason, message, warnings, approval, (path, value), evidence, labels)| {
                Verdict {
                    decision,
                    reason,
                    message,
                    warnings,
                    approval: approval.filter(|_| decision == Decision::Deny),
                    transform: (decision == Decision::Transform)
                        .then_some(Transform { path, value }),
                    evidence,
                    result_labels: labels,
                }
            },
        )
        .boxed()
}

fn through_verdict_bytes(v: &Verdict) -> pb::Verdict {
    let bytes = pb::Verdict::from(v).encode_to_vec();
    pb::Verdict::decode(bytes.as_slice()).expect("prost round trip")
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn verdicts_round_trip(v in verdict()) {
        prop_assert!(v.validate().is_ok());
        prop_assert_eq!(Verdict::try_from(through_verdict_bytes(&v)), Ok(v));
    }

    #[test]
    fn responses_round_trip(
        v in verdict_with(true),
        ext in prop::collection::btree_map("[a-z][a-z0-9_]{0,8}", json_value_with(true), 0..3),
    ) {
        let resp = InterceptorResponse {
            verdict: v,
            extensions: ext.into_iter().collect(),
        };
        let bytes = pb::InterceptorResponse::from(&resp).encode_to_vec();
        let wire = pb::InterceptorResponse::decode(bytes.as_slice()).expect("prost round trip");
        prop_assert_eq!(InterceptorResponse::try_from(wire), Ok(resp));
    }

    /// Invalid verdicts travel faithfully: the receiver sees them and
    /// refuses them, it never receives a "repaired" verdict.
    #[test]
    fn invalid_verdicts_are_carried_and_refused(v in verdict(), which in 0..4u8) {
        let mut bad = v;
        let expected = match which {
            0 => {
                bad.reason = Some(format!("host_error:{}", bad.reason.clone().unwrap_or_default()));
                InvalidVerdict::ReservedReason
            }
            1 => {
                bad.reason = None;
                bad.decision = Decision::Transform;
                bad.approval = None;
                bad.transform = None;
                InvalidVerdict::Transform
            }
            2 => {
                bad.reason = None;
                bad.decision = Decision::Allow;
                bad.transform = None;
                bad.approval = Some(Map::new());
                InvalidVerdict::Approval
            }
            _ => {
                bad.reason = None;
                bad.approval = None;
                bad.decision = Decision::Deny;
                bad.transform = Some(Transform { path: "$target".into(), value: Value::Null });
                InvalidVerdict::Transform
            }
        };
        let wire = through_verdict_bytes(&bad);
        prop_assert_eq!(wire.decision, pb::Decision::from(bad.decision) as i32);
        prop_assert_eq!(wire.transform.is_some(), bad.transform.is_some());
        prop_assert_eq!(wire.approval.is_some(), bad.approval.is_some());
        prop_assert_eq!(Verdict::try_from(wire), Err(expected));
    }
}
