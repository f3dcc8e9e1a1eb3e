use super::*;
use serde_json::json;

#[test]
fn rfc8785_numbers_keys_and_escapes() {
    let v: Value = serde_json::from_str(
        r#"{"b":[1.0,1e21,0.000001,1e-7,-0.0,123.456],"a":"\u0007é\"","\u20ac":1,"\ud83d\ude00":2}"#,
    )
    .unwrap();
    assert_eq!(
        to_canonical_string(&v).unwrap(),
        "{\"a\":\"\\u0007é\\\"\",\"b\":[1,1e+21,0.000001,1e-7,0,123.456],\"€\":1,\"😀\":2}"
    );
}

#[test]
fn unsafe_integers_are_refused_with_their_location() {
    let v = json!({"a": [0, 9_007_199_254_740_992u64]});
    assert_eq!(
        to_canonical_string(&v),
        Err(CanonicalError::UnsafeInteger("$.a[1]".into()))
    );
    let ok = json!({"a": -9_007_199_254_740_991i64});
    assert!(to_canonical_string(&ok).is_ok());
}

#[test]
fn depth_is_bounded() {
    let mut v = json!(1);
    for _ in 0..DEFAULT_MAX_DEPTH {
        v = json!([v]);
    }
    assert!(to_canonical_string(&v).is_ok());
    v = json!([v]);
    assert_eq!(
        to_canonical_string(&v),
        Err(CanonicalError::TooDeep(DEFAULT_MAX_DEPTH))
    );
}

/// A plain canonicalizer to hold the fast one to: every object sorted
/// by UTF-16, strings escaped char by char, the path built eagerly.
fn reference(
    v: &Value,
    max_depth: usize,
    depth: usize,
    path: &str,
) -> Result<String, CanonicalError> {
    Ok(match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u > MAX_SAFE_INTEGER {
                    return Err(CanonicalError::UnsafeInteger(path.into()));
                }
                u.to_string()
            } else if let Some(i) = n.as_i64() {
                if i.unsigned_abs() > MAX_SAFE_INTEGER {
                    return Err(CanonicalError::UnsafeInteger(path.into()));
                }
                i.to_string()
            } else {
                ryu_js::Buffer::new()
                    .format_finite(n.as_f64().unwrap())
                    .to_owned()
            }
        }
        Value::String(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\u{08}' => out.push_str("\\b"),
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\u{0c}' => out.push_str("\\f"),
                    '\r' => out.push_str("\\r"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        Value::Array(items) => {
            if depth >= max_depth {
                return Err(CanonicalError::TooDeep(max_depth));
            }
            let parts: Result<Vec<_>, _> = items
                .iter()
                .enumerate()
                .map(|(i, x)| reference(x, max_depth, depth + 1, &format!("{path}[{i}]")))
                .collect();
            format!("[{}]", parts?.join(","))
        }
        Value::Object(m) => {
            if depth >= max_depth {
                return Err(CanonicalError::TooDeep(max_depth));
            }
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            let mut parts = Vec::new();
            for k in keys {
                let key = reference(&Value::String(k.clone()), max_depth, depth, path)?;
                let val = reference(&m[k], max_depth, depth + 1, &format!("{path}.{k}"))?;
                parts.push(format!("{key}:{val}"));
            }
            format!("{{{}}}", parts.join(","))
        }
    })
}

pub(crate) mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Keys and strings mixing ASCII, control characters, quotes and
    /// the characters where UTF-8 and UTF-16 orders part (U+E000 and
    /// above, and beyond the BMP).
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                'a',
                'b',
                'z',
                'A',
                '0',
                '_',
                '"',
                '\\',
                '\u{0}',
                '\u{8}',
                '\n',
                '\u{1f}',
                '\u{7f}',
                'é',
                '\u{7ff}',
                '\u{d7ff}',
                '\u{e000}',
                '\u{ff61}',
                '\u{ffff}',
                '\u{10000}',
                '\u{1f600}',
            ]),
            0..5,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    fn number() -> impl Strategy<Value = Value> {
        const SAFE: i64 = MAX_SAFE_INTEGER as i64;
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-SAFE - 2..-SAFE + 2).prop_map(Value::from),
            (SAFE - 2..SAFE + 2).prop_map(Value::from),
            (-1000i64..1000).prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
        ]
    }

    pub(crate) fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number(),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn matches_the_reference(v in json(), max_depth in 0usize..7) {
            let mut out = String::new();
            let fast = Canonicalizer::with_max_depth(max_depth)
                .write(View::Whole(&v), &mut out)
                .map(|()| out);
            prop_assert_eq!(fast, reference(&v, max_depth, 0, "$"));
        }

        #[test]
        fn repeating_a_value_changes_nothing(
            v in json(),
            extra in 0usize..3,
            max_depth in 0usize..8,
        ) {
            // The value at two depths, as the target is in the preimage.
            let mut wrapped = json!({"args": v.clone()});
            for _ in 0..extra {
                wrapped = json!({"nest": wrapped});
            }
            let entries = [("a", View::Whole(&v)), ("b", View::Whole(&wrapped))];
            let view = View::Object(&entries);
            let inner = {
                let mut w = &wrapped;
                while let Some(next) = w.get("nest") {
                    w = next;
                }
                &w["args"]
            };
            let c = Canonicalizer::with_max_depth(max_depth);
            let (mut plain, mut repeating) = (String::new(), String::new());
            let expected = c.write(view, &mut plain).map(|()| plain);
            // Same bytes and errors whichever occurrence is the repeated one.
            let got = c.write_repeating(view, &v, &mut repeating).map(|()| repeating);
            prop_assert_eq!(&got, &expected);
            let mut again = String::new();
            let got = c.write_repeating(view, inner, &mut again).map(|()| again);
            prop_assert_eq!(&got, &expected);
        }

        #[test]
        fn string_lengths_match_serde_json(s in text()) {
            prop_assert_eq!(
                json_string_len(&s),
                serde_json::to_string(&s).unwrap().len()
            );
        }
    }
}

#[test]
fn repeating_keeps_the_depth_bound_at_the_deeper_occurrence() {
    // {"a": v, "b": {"x": v}} with v two levels deep: fits with 4
    // levels, not with 3, however v is written.
    let v = json!([[1]]);
    let wrapped = json!({"x": v.clone()});
    let entries = [("a", View::Whole(&v)), ("b", View::Whole(&wrapped))];
    for (max, ok) in [(4, true), (3, false)] {
        let c = Canonicalizer::with_max_depth(max);
        let mut out = String::new();
        let r = c.write_repeating(View::Object(&entries), &v, &mut out);
        assert_eq!(r.is_ok(), ok, "max {max}");
        if ok {
            assert_eq!(out, r#"{"a":[[1]],"b":{"x":[[1]]}}"#);
        } else {
            assert_eq!(r, Err(CanonicalError::TooDeep(max)));
        }
    }
}

#[test]
fn sha256_identity_is_lowercase_hex() {
    assert_eq!(
        sha256_identity(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
