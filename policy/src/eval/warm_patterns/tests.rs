//! The wrappers against regorus' own built-ins: the same value for every
//! case, the same error where regorus errs, and the compiled pattern kept.

use super::*;
use regorus::unstable::{Source, Span};

fn span() -> Span {
    let source = Source::from_contents("<test>".into(), String::new()).expect("a source");
    Span {
        source,
        line: 1,
        col: 1,
        start: 0,
        end: 0,
    }
}

fn params(span: &Span) -> Vec<Ref<Expr>> {
    (0..3)
        .map(|_| {
            Ref::new(Expr::Null {
                span: span.clone(),
                value: Value::Null,
                eidx: 0,
            })
        })
        .collect()
}

fn s(text: &str) -> Value {
    Value::String(text.into())
}

fn n(value: f64) -> Value {
    Value::from(value)
}

/// Runs `name` through its wrapper and through regorus' own built-in and
/// checks both give the same value, or both an error.
fn same(name: &str, args: &[Value]) {
    let span = span();
    let params = params(&span);
    let (_, (wrapper, _)) = WARM
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a wrapped built-in");
    let ours = wrapper(&span, &params[..args.len()], args, false);
    let theirs = original(name, &span, &params[..args.len()], args, false);
    match (ours, theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}{args:?}"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("{name}{args:?}: ours {a:?}, regorus {b:?}"),
    }
}

#[test]
fn each_wrapper_computes_what_regorus_computes() {
    let text = "mail a@b.io or c.d@e.org, call +1 (555) 010-9999; card 4111 1111 1111 1111";
    let email = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}";
    for pattern in [
        email,
        r"\d+",
        r"(a)|(b)",
        "",
        "é+",
        r"\bcall\b",
        "no-match-here",
    ] {
        same("regex.match", &[s(pattern), s(text)]);
        same("regex.split", &[s(pattern), s(text)]);
        same("regex.replace", &[s(text), s(pattern), s("<$0>")]);
        same("regex.replace", &[s(text), s(pattern), s("${1}x")]);
        for count in [-1.0, 0.0, 1.0, 2.0, 100.0, 1e30] {
            same("regex.find_n", &[s(pattern), s(text), n(count)]);
            same(
                "regex.find_all_string_submatch_n",
                &[s(pattern), s(text), n(count)],
            );
        }
    }
    // Unicode text and classes.
    same(
        "regex.find_n",
        &[s(r"\p{L}+"), s("héllo wörld 🌍"), n(-1.0)],
    );
}

#[test]
fn what_the_wrappers_do_not_take_is_regorus_own_answer() {
    // An invalid pattern, a non-integer count, arguments of other types.
    same("regex.match", &[s("(unclosed"), s("x")]);
    same("regex.replace", &[s("x"), s("(unclosed"), s("y")]);
    same("regex.find_n", &[s("x"), s("xxx"), n(1.5)]);
    same("regex.find_n", &[n(1.0), s("xxx"), n(1.0)]);
    same("regex.split", &[s("x"), Value::Null]);
    same(
        "regex.find_all_string_submatch_n",
        &[s("(x)"), s("xx"), s("2")],
    );
    // A pattern over regorus' compiled-size bound.
    same("regex.match", &[s(r"\w{1000}\w{1000}\w{1000}"), s("x")]);
}

#[test]
fn a_pattern_is_compiled_once_per_thread_and_the_set_is_bounded() {
    let first = compiled(r"warm-\d+").expect("compiles");
    let again = compiled(r"warm-\d+").expect("compiles");
    assert!(Rc::ptr_eq(&first, &again), "the same compiled pattern");
    assert!(compiled("(unclosed").is_none());
    for i in 0..MAX_WARM_PATTERNS * 2 {
        compiled(&format!("p{i}")).expect("compiles");
        COMPILED.with(|p| assert!(p.borrow().len() <= MAX_WARM_PATTERNS));
    }
}
