//! Strategies for JSON values: exact, with floats and big integers where
//! the wire carries them.

use super::*;

pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,8}",
        prop::collection::vec(any::<char>(), 0..10).prop_map(String::from_iter),
        prop::sample::select(vec![
            "",
            "😀 émoji ∑ 中文",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "\"quoted\" \\back\\slash /",
            "line\nbreak\ttab\r",
            "\u{2028}\u{2029}\u{feff}",
            "18446744073709551616",
            "1e400",
        ])
        .prop_map(str::to_owned),
    ]
}

pub(super) fn float() -> impl Strategy<Value = f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO,
        prop::sample::select(vec![
            1.0,
            -1.0,
            0.5,
            1.5,
            1e300,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            9_007_199_254_740_993.0,
        ]),
    ]
}

/// A JSON leaf. `safe` keeps integers within ±(2^53−1), the canonical
/// (RFC 8785) domain that size caps are measured in.
pub(super) fn leaf(safe: bool) -> BoxedStrategy<Value> {
    const SAFE: i64 = 9_007_199_254_740_991;
    let ints = if safe {
        prop_oneof![
            (-SAFE..=SAFE).prop_map(Value::from),
            prop::sample::select(vec![0, -1, 1, SAFE, -SAFE]).prop_map(Value::from),
        ]
        .boxed()
    } else {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop::sample::select(vec![
                json!(i64::MIN),
                json!(i64::MAX),
                json!(u64::MAX),
                json!(0),
                json!(-1),
            ]),
        ]
        .boxed()
    };
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        ints,
        float().prop_map(Value::from),
        text().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, nested a few levels.
pub(super) fn json_value_with(safe: bool) -> BoxedStrategy<Value> {
    leaf(safe)
        .prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

pub(super) fn json_value() -> BoxedStrategy<Value> {
    json_value_with(false)
}

pub(super) fn json_object_with(safe: bool) -> BoxedStrategy<Map<String, Value>> {
    prop::collection::btree_map(text(), json_value_with(safe), 0..4)
        .prop_map(|m| m.into_iter().collect())
        .boxed()
}

pub(super) fn json_object() -> BoxedStrategy<Map<String, Value>> {
    json_object_with(false)
}
