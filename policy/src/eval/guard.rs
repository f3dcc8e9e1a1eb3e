//! Caps on what one built-in call may build.
//!
//! The wall-clock bound is checked between evaluation steps, but a single
//! built-in call runs to its end: `numbers.range(1, 30000000)` builds a
//! 30-million-element array (seconds, most of a gigabyte) before the
//! engine looks at the clock again. The built-ins whose output size is set
//! by an argument rather than by the size of their inputs are therefore
//! wrapped: the wrapper computes the size the call would build from its
//! arguments and refuses it, as an evaluation error, beyond
//! [`MAX_GENERATED_ELEMENTS`] elements or [`MAX_GENERATED_BYTES`] bytes;
//! within the caps it calls regorus' own built-in unchanged.
//!
//! The same wrappers serve both evaluators: on a VM program they replace
//! the program's resolved built-in entries ([`guard_program`]); on the
//! interpreter they are registered as extensions of the same names, which
//! regorus consults before its built-ins ([`guard_engine`]). The wrappers
//! reach regorus' own built-ins through its `unstable` table, so its tests
//! here pin the names and arities they rely on (a regorus upgrade that
//! moves them fails them).

use std::sync::OnceLock;

use anyhow::{Result, bail};
use regorus::rvm::program::Program;
use regorus::unstable::{BuiltinFcn, Expr, Ref, Source, Span};
use regorus::{Engine, Value};

use super::builtin::{
    MAX_ASSEMBLED_BYTES, MAX_GENERATED_BYTES, MAX_GENERATED_ELEMENTS, original, refuse, too_long,
    too_long_assembled, too_many,
};
use super::warm_patterns::WARM;

/// The built-ins wrapped, with the check each one runs first.
const GUARDED: [(&str, BuiltinFcn); 12] = [
    ("numbers.range", (range, 2)),
    ("numbers.range_step", (range_step, 3)),
    ("net.cidr_expand", (cidr_expand, 1)),
    ("replace", (replace, 3)),
    ("strings.replace_n", (replace_n, 2)),
    ("sprintf", (sprintf, 2)),
    ("split", (split, 2)),
    ("indexof_n", (indexof_n, 2)),
    ("concat", (concat, 2)),
    ("json.marshal", (json_marshal, 1)),
    ("json.marshal_with_options", (json_marshal_with_options, 2)),
    ("yaml.marshal", (yaml_marshal, 1)),
];

/// Every wrapped built-in: the capped ones, and the `regex.*` ones that
/// keep their patterns warm (`warm_patterns`).
fn wrapped() -> impl Iterator<Item = &'static (&'static str, BuiltinFcn)> {
    GUARDED.iter().chain(WARM.iter())
}

/// Replaces the guarded built-ins a compiled program calls by their
/// wrappers.
pub(crate) fn guard_program(program: &mut Program) {
    for (i, info) in program.builtin_info_table.iter().enumerate() {
        if let Some((_, wrapper)) = wrapped().find(|(name, _)| *name == info.name)
            && let Some(slot) = program.resolved_builtins.get_mut(i)
        {
            *slot = *wrapper;
        }
    }
}

/// Registers the wrappers as extensions of the interpreter `engine`
/// (extensions shadow built-ins of the same name).
pub(crate) fn guard_engine(engine: &mut Engine) -> Result<()> {
    for &(name, (wrapper, nargs)) in wrapped() {
        engine.add_extension(
            name.to_owned(),
            nargs,
            Box::new(move |args: Vec<Value>| {
                let (span, params) = placeholders()?;
                wrapper(span, &params[..args.len().min(params.len())], &args, false)
            }),
        )?;
    }
    Ok(())
}

/// The span and parameter expressions an extension hands to a built-in
/// (they only locate error messages), built once.
fn placeholders() -> Result<(&'static Span, &'static [Ref<Expr>])> {
    static PLACEHOLDERS: OnceLock<Option<(Span, Vec<Ref<Expr>>)>> = OnceLock::new();
    let made = PLACEHOLDERS.get_or_init(|| {
        let source = Source::from_contents("<builtin>".into(), String::new()).ok()?;
        let span = Span {
            source,
            line: 1,
            col: 1,
            start: 0,
            end: 0,
        };
        let params = (0..3)
            .map(|_| {
                Ref::new(Expr::Null {
                    span: span.clone(),
                    value: Value::Null,
                    eidx: 0,
                })
            })
            .collect();
        Some((span, params))
    });
    match made {
        Some((span, params)) => Ok((span, params)),
        None => bail!("cannot prepare the arguments of a guarded built-in"),
    }
}

/// `split(s, delimiter)`: one element per piece (per character with an
/// empty delimiter), so a long string split finely builds an element per
/// byte. A string shorter than the cap cannot make more pieces than it.
fn split(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "split";
    if let [s, delimiter] = args
        && let (Some(s), Some(delimiter)) = (text(s), text(delimiter))
        && s.len() >= MAX_GENERATED_ELEMENTS as usize
    {
        let pieces = if delimiter.is_empty() {
            s.chars().count()
        } else {
            s.split(delimiter).count()
        };
        if pieces > MAX_GENERATED_ELEMENTS as usize {
            return Err(too_many(NAME, pieces as f64));
        }
    }
    original(NAME, span, params, args, strict)
}

/// `indexof_n(s, sub)`: one element per position where `sub` starts
/// (overlapping), at most one per character.
fn indexof_n(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "indexof_n";
    if let [s, sub] = args
        && let (Some(s), Some(sub)) = (text(s), text(sub))
        && s.len() > MAX_GENERATED_ELEMENTS as usize
    {
        let found = s
            .char_indices()
            .filter(|(i, _)| s[*i..].starts_with(sub))
            .count();
        if found > MAX_GENERATED_ELEMENTS as usize {
            return Err(too_many(NAME, found as f64));
        }
    }
    original(NAME, span, params, args, strict)
}

/// `concat(delimiter, strings)`: the strings joined, each copied once
/// (one long string referenced many times is copied as many times).
fn concat(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "concat";
    if let [delimiter, strings] = args
        && let Some(delimiter) = text(delimiter)
    {
        let parts: Box<dyn Iterator<Item = &Value>> = match strings {
            Value::Array(a) => Box::new(a.iter()),
            Value::Set(s) => Box::new(s.iter()),
            _ => Box::new(std::iter::empty()),
        };
        let mut bytes = 0.0;
        for (i, part) in parts.enumerate() {
            bytes += text(part).map_or(0, str::len) as f64;
            if i > 0 {
                bytes += delimiter.len() as f64;
            }
            if bytes > MAX_ASSEMBLED_BYTES as f64 {
                return Err(too_long_assembled(NAME));
            }
        }
    }
    original(NAME, span, params, args, strict)
}

/// At least how many bytes serializing `value` writes (its strings and
/// keys, two bytes per collection, one per other scalar), counted until
/// past `cap`: every reference to a shared value is written again.
fn serialized_at_least(value: &Value, cap: f64) -> f64 {
    let mut bytes = 0.0;
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        if bytes > cap {
            break;
        }
        match v {
            Value::String(s) => bytes += s.len() as f64 + 2.0,
            Value::Array(a) => {
                bytes += 2.0;
                pending.extend(a.iter());
            }
            Value::Set(s) => {
                bytes += 2.0;
                pending.extend(s.iter());
            }
            Value::Object(o) => {
                bytes += 2.0;
                for (k, v) in o.iter() {
                    pending.push(k);
                    pending.push(v);
                }
            }
            _ => bytes += 1.0,
        }
    }
    bytes
}

/// Refuses serializing `value` past [`MAX_ASSEMBLED_BYTES`].
fn serialized_within(name: &str, value: &Value) -> Result<()> {
    let cap = MAX_ASSEMBLED_BYTES as f64;
    let bytes = serialized_at_least(value, cap);
    if bytes > cap {
        return Err(too_long_assembled(name));
    }
    Ok(())
}

fn json_marshal(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "json.marshal";
    if let [value] = args {
        serialized_within(NAME, value)?;
    }
    original(NAME, span, params, args, strict)
}

fn json_marshal_with_options(
    span: &Span,
    params: &[Ref<Expr>],
    args: &[Value],
    strict: bool,
) -> Result<Value> {
    const NAME: &str = "json.marshal_with_options";
    if let [value, _] = args {
        serialized_within(NAME, value)?;
    }
    original(NAME, span, params, args, strict)
}

fn yaml_marshal(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "yaml.marshal";
    if let [value] = args {
        serialized_within(NAME, value)?;
    }
    original(NAME, span, params, args, strict)
}

fn number(value: &Value) -> Option<f64> {
    value.as_number().ok().and_then(|n| n.as_f64())
}

fn text(value: &Value) -> Option<&str> {
    value.as_string().ok().map(|s| s.as_ref())
}

fn range(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "numbers.range";
    if let [a, b] = args
        && let (Some(a), Some(b)) = (number(a), number(b))
    {
        let count = (b - a).abs() + 1.0;
        if count > MAX_GENERATED_ELEMENTS as f64 {
            return Err(too_many(NAME, count));
        }
    }
    original(NAME, span, params, args, strict)
}

fn range_step(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "numbers.range_step";
    if let [a, b, step] = args
        && let (Some(a), Some(b), Some(step)) = (number(a), number(b), number(step))
    {
        // regorus loops forever on a zero step when not strict.
        if step <= 0.0 || step.fract() != 0.0 {
            return Err(refuse(
                format!("{NAME}: the step must be a positive integer, not {step}"),
                f64::INFINITY,
                MAX_GENERATED_ELEMENTS,
            ));
        }
        let count = ((b - a).abs() / step).floor() + 1.0;
        if count > MAX_GENERATED_ELEMENTS as f64 {
            return Err(too_many(NAME, count));
        }
    }
    original(NAME, span, params, args, strict)
}

fn cidr_expand(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "net.cidr_expand";
    if let [cidr] = args
        && let Some(cidr) = text(cidr)
    {
        let (addr, prefix) = cidr.split_once('/').unwrap_or((cidr, ""));
        let bits: u32 = if addr.contains(':') { 128 } else { 32 };
        let prefix = if prefix.is_empty() {
            Some(bits)
        } else {
            prefix.parse::<u32>().ok()
        };
        if let Some(prefix) = prefix.filter(|p| *p <= bits) {
            let count = 2f64.powi((bits - prefix) as i32);
            if count > MAX_GENERATED_ELEMENTS as f64 {
                return Err(too_many(NAME, count));
            }
        }
    }
    original(NAME, span, params, args, strict)
}

/// The most a replacement may build: every match (at most one per byte,
/// or between bytes for an empty pattern) grown by the replacement.
fn replaced_len(s: &str, old: &str, new: &str) -> f64 {
    let matches = if old.is_empty() {
        s.len() as f64 + 1.0
    } else {
        (s.len() / old.len()) as f64
    };
    let growth = new.len() as f64 - old.len() as f64;
    s.len() as f64 + matches * growth.max(0.0)
}

fn replace(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "replace";
    if let [s, old, new] = args
        && let (Some(s), Some(old), Some(new)) = (text(s), text(old), text(new))
    {
        let bytes = replaced_len(s, old, new);
        if bytes > MAX_GENERATED_BYTES as f64 {
            return Err(too_long(NAME, bytes));
        }
    }
    original(NAME, span, params, args, strict)
}

fn replace_n(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "strings.replace_n";
    if let [patterns, s] = args
        && let (Ok(patterns), Some(s)) = (patterns.as_object(), text(s))
    {
        // Each pattern replaces in turn: bound the growth step by step.
        let mut bytes = s.len() as f64;
        for (old, new) in patterns.iter() {
            if let (Some(old), Some(new)) = (text(old), text(new)) {
                let matches = if old.is_empty() {
                    bytes + 1.0
                } else {
                    (bytes / old.len() as f64).floor()
                };
                bytes += matches * (new.len() as f64 - old.len() as f64).max(0.0);
                if bytes > MAX_GENERATED_BYTES as f64 {
                    return Err(too_long(NAME, bytes));
                }
            }
        }
    }
    original(NAME, span, params, args, strict)
}

/// `sprintf`'s widths and precisions (`%20d`, `%.5f`): regorus allocates
/// each one and accumulates its digits in a `u32`, so a long run of digits
/// overflows.
fn sprintf(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "sprintf";
    if let Some(format) = args.first().and_then(text) {
        let mut total = format.len() as f64;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                continue;
            }
            if chars.peek() == Some(&'.') {
                chars.next();
            }
            let mut digits = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                chars.next();
            }
            if digits.len() > 9 {
                return Err(too_long(NAME, f64::INFINITY));
            }
            total += digits.parse::<f64>().unwrap_or(0.0);
        }
        if total > MAX_GENERATED_BYTES as f64 {
            return Err(too_long(NAME, total));
        }
    }
    original(NAME, span, params, args, strict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use regorus::unstable::BUILTINS;

    #[test]
    fn every_wrapped_builtin_exists_with_its_arity() {
        for (name, (_, nargs)) in wrapped() {
            let (_, arity) = BUILTINS.get(name).expect(name);
            assert_eq!(arity, nargs, "{name}");
        }
    }

    #[test]
    fn replacement_growth_is_bounded_from_above() {
        assert_eq!(replaced_len("abc", "b", "xyz"), 3.0 + 3.0 * 2.0);
        assert_eq!(replaced_len("ab", "", "--"), 2.0 + 3.0 * 2.0);
        assert_eq!(replaced_len("aaaa", "aa", "a"), 4.0);
    }
}

#[cfg(test)]
mod divergences {
    use regorus::unstable::BUILTINS;

    /// OPA built-ins policy authors reach for that regorus (with this
    /// crate's features) does not have: docs/policies.md lists them, and a
    /// module calling one is refused at load.
    const MISSING: &[&str] = &[
        "http.send",
        "net.lookup_ip_addr",
        "io.jwt.decode",
        "io.jwt.decode_verify",
        "io.jwt.verify_rs256",
        "io.jwt.verify_hs256",
        "io.jwt.encode_sign",
        "crypto.sha256",
        "crypto.hmac.sha256",
        "crypto.x509.parse_certificates",
        "net.cidr_merge",
        "net.cidr_intersects",
        "net.cidr_contains_matches",
        "json.match_schema",
        "rego.parse_module",
        "rego.metadata.rule",
        "rego.metadata.chain",
        "strings.render_template",
        "providers.aws.sign_req",
        "graphql.is_valid",
        "net.cidr_overlap",
        "json.verify_schema",
        "re_match",
        "set_diff",
        "cast_string",
        "all",
        "any",
    ];

    #[test]
    fn the_documented_missing_builtins_are_missing() {
        for name in MISSING {
            assert!(
                !BUILTINS.contains_key(name),
                "{name} exists now: update docs/policies.md"
            );
        }
    }
}
