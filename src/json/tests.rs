//! The exact reader and writer over the texts they must refuse, keep and
//! place.

use super::*;
use serde_json::json;

#[test]
fn boundaries_of_the_64_bit_range() {
    assert_eq!(
        decode("18446744073709551615").unwrap(),
        json!(u64::MAX),
        "u64::MAX is exact"
    );
    assert_eq!(decode("-9223372036854775808").unwrap(), json!(i64::MIN));
    assert_eq!(
        decode("18446744073709551616"),
        Err(InvalidJson::IntegerOutOfRange(0))
    );
    assert_eq!(
        decode("-9223372036854775809"),
        Err(InvalidJson::IntegerOutOfRange(0))
    );
    assert_eq!(
        decode(r#"{"a":[1.5, "18446744073709551616", 99999999999999999999999]}"#),
        Err(InvalidJson::IntegerOutOfRange(35))
    );
    // The scan is skipped only when no float reaches 2^63: small floats
    // beside an out-of-range integer still see it refused, and floats
    // at the threshold written as floats are kept.
    assert_eq!(
        decode("[0.25, -9223372036854775809, 0.5]"),
        Err(InvalidJson::IntegerOutOfRange(7))
    );
    assert_eq!(
        decode("[0.25, 9223372036854775807, -9223372036854775808]").unwrap(),
        json!([0.25, i64::MAX, i64::MIN])
    );
    assert_eq!(
        decode("[9223372036854775808.0, -9.3e18]").unwrap(),
        json!([9_223_372_036_854_775_808.0_f64, -9.3e18])
    );
}

#[test]
fn floats_and_integers_stay_distinct() {
    let one = decode("1").unwrap();
    let one_f = decode("1.0").unwrap();
    assert!(one.is_u64());
    assert!(one_f.is_f64());
    assert_ne!(one, one_f);
    assert_eq!(decode("1.5").unwrap(), json!(1.5));
    assert_eq!(encode(&one_f), "1.0");
    assert_eq!(decode("1e2").unwrap().as_f64(), Some(100.0));
    assert_eq!(decode("-0").unwrap().as_f64(), Some(0.0));
    assert_eq!(decode("1e-400").unwrap().as_f64(), Some(0.0));
}

#[test]
fn non_finite_numbers_are_refused() {
    for text in ["1e400", "-1e400", "[1.7976931348623159e308]"] {
        assert!(
            matches!(decode(text), Err(InvalidJson::Syntax(_))),
            "{text} accepted"
        );
    }
}

#[test]
fn syntax_errors_do_not_echo_the_value() {
    let cases = [
        "",
        "   ",
        "{",
        "[1,]",
        "01",
        "NaN",
        "'secret'",
        "\"secret",
        "\"\\ud800 secret\"",
        "\"\\udc00\"",
        "\"a\u{0}b\"",
        "1 2",
        "{\"secret\":1,\"secret\":2}",
    ];
    for text in cases {
        match decode(text) {
            Err(InvalidJson::Syntax(msg)) => assert!(!msg.contains("secret"), "{msg}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn scan_skips_strings_and_escapes() {
    let text = r#"{"k\"18446744073709551616":"\\","n":[0.5,18446744073709551615,-0]}"#;
    assert_eq!(
        decode(text).unwrap(),
        json!({"k\"18446744073709551616": "\\", "n": [0.5, u64::MAX, -0.0]})
    );
    assert_eq!(out_of_range_integer(b"\"unterminated 1"), None);
    assert_eq!(out_of_range_integer(b"[1.0, 1e99999999999999999999]"), None);
    assert_eq!(
        out_of_range_integer(b"[0.1, -00000000000000000000001]"),
        None
    );
}

#[test]
fn nesting_is_bounded_without_overflowing_the_stack() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(decode(&deep), Err(InvalidJson::Syntax(_))));
}

#[test]
fn encode_is_compact_and_round_trips() {
    let v = json!({"b": [1, 1.0, -2, null, true], "a": "é😀\u{1}\"", "c": {}});
    let text = encode(&v);
    assert!(!text.contains(' '));
    assert_eq!(decode(&text).unwrap(), v);
    let Value::Object(m) = &v else { unreachable!() };
    assert_eq!(encode_object(m), text);
}

/// The pointer, line and column of a refused document, and its problem.
fn refused(text: &str) -> (String, usize, usize, String) {
    match read(text, 4) {
        Err(InvalidJson::Document {
            pointer,
            line,
            column,
            problem,
        }) => (pointer, line, column, problem),
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn read_reads_what_decode_reads_and_names_wide_integers_by_pointer() {
    let text = r#"{"a": [9007199254740991, -9007199254740992], "b": {"c~/": 1e300, "d": 18446744073709551616, "e": "1e999 99999999999999999999"}, "f": [-0, -0.0]}"#;
    let document = read(text, 4).unwrap();
    assert_eq!(document.wide_integers, ["/a/1", "/b/d"]);
    assert!(document.value["f"][0].is_u64() && document.value["f"][1].is_f64());
    assert_eq!(document.value["a"][0], json!(9_007_199_254_740_991_u64));
    assert_eq!(
        document.value["b"]["d"],
        json!(18_446_744_073_709_551_616.0_f64)
    );
    // Where decode takes a text, read takes it as the same value.
    let exact = r#"{"a": [1, -2, 3.5, 1e3, true, false, null, "x\u00e9\ud83d\ude00\n"], "b": {}}"#;
    let document = read(exact, 4).unwrap();
    assert_eq!(document.value, decode(exact).unwrap());
    assert!(document.wide_integers.is_empty());
}

#[test]
fn read_refuses_with_the_place_and_without_the_value() {
    let (pointer, line, column, problem) = refused(r#"{"a": {"secret": 1, "secret": 2}}"#);
    assert_eq!(pointer, "/a/secret");
    assert_eq!((line, column), (1, 28));
    assert!(problem.contains("duplicate"), "{problem}");
    // Columns count characters; lines start at 1.
    let (pointer, line, column, _) = refused("{\n  \"é\": [1,\n   ]}");
    // A trailing comma or a missing separator is the array's, not an
    // item's.
    assert_eq!((pointer.as_str(), line, column), ("/é", 3, 4));
    let (pointer, ..) = refused(r#"{"a": {"b~": [1 2]}}"#);
    assert_eq!(pointer, "/a/b~0");
    let (pointer, ..) = refused(r#"{"a": [1, {"b": x}]}"#);
    assert_eq!(pointer, "/a/1/b");
    let (pointer, _, _, problem) = refused(r#"{"a": [{"b": {"c": {}}}]}"#);
    assert_eq!(pointer, "/a/0/b/c");
    assert!(problem.contains("deeper than 4 levels"), "{problem}");
    assert!(read(r#"{"a": [{"b": {"c": 1}}]}"#, 4).is_ok());
    for text in [
        "",
        "{",
        "{} x",
        r#"{"a": 1e400}"#,
        r#"{"secret": "\ud800"}"#,
    ] {
        let (_, _, _, problem) = refused(text);
        assert!(!problem.contains("secret"), "{problem}");
        assert!(!problem.contains("at line"), "{problem}");
    }
    // An error on a byte inside a multi-byte character is placed on
    // that character.
    let (_, line, column, _) = refused("{\"\\\u{e9}\": 1}");
    assert_eq!((line, column), (1, 4));
}
