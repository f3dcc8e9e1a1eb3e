//! The `regex.*` built-ins with their compiled patterns kept warm.
//!
//! regorus caches each compiled pattern but hands every call a clone of
//! it, and a clone of a `regex::Regex` starts with an empty match cache:
//! each call builds the lazy DFA's states again, page by freshly zeroed
//! page (profiled in docs/performance.md). These wrappers keep the
//! compiled patterns themselves, per evaluation thread (the evaluation
//! workers are a fixed set), so the states one call builds serve the
//! next.
//!
//! They compute exactly what regorus' built-ins compute, compiled with
//! the same options, except that, as the caps of `guard` do, they refuse a
//! call that would build more than `MAX_GENERATED_ELEMENTS` matches or
//! pieces (counted before they are built); a call they do not take on this
//! path (an argument of another type, a non-integer count, a pattern that
//! does not compile) is handed to regorus' own built-in, so every error
//! and every undefined result stays its own. They are installed as the caps of `guard` are,
//! on the VM program and on the interpreter alike.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use anyhow::Result;
use regex::{Regex, RegexBuilder};
use regorus::Value;
use regorus::unstable::{BuiltinFcn, Expr, Ref, Span};

use super::builtin::{MAX_GENERATED_ELEMENTS, original, too_many};
use crate::patterns::REGEX_SIZE_LIMIT;

/// The most compiled patterns one thread keeps; past it the thread starts
/// over (a pattern built from input could otherwise grow it without end).
pub(crate) const MAX_WARM_PATTERNS: usize = 128;

/// The built-ins wrapped.
pub(crate) const WARM: [(&str, BuiltinFcn); 5] = [
    ("regex.match", (is_match, 2)),
    ("regex.find_n", (find_n, 3)),
    ("regex.find_all_string_submatch_n", (submatches_n, 3)),
    ("regex.replace", (replace_all, 3)),
    ("regex.split", (split, 2)),
];

thread_local! {
    /// This thread's compiled patterns, by pattern text.
    static COMPILED: RefCell<HashMap<String, Rc<Regex>>> = RefCell::new(HashMap::new());
}

/// The compiled `pattern`, from this thread's patterns or compiled now as
/// regorus compiles it; `None` when it does not compile (regorus' own
/// built-in then reports it).
fn compiled(pattern: &str) -> Option<Rc<Regex>> {
    COMPILED.with(|patterns| {
        if let Some(re) = patterns.borrow().get(pattern) {
            return Some(Rc::clone(re));
        }
        let re = Rc::new(
            RegexBuilder::new(pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .ok()?,
        );
        let mut patterns = patterns.borrow_mut();
        if patterns.len() >= MAX_WARM_PATTERNS {
            patterns.clear();
        }
        patterns.insert(pattern.to_owned(), Rc::clone(&re));
        Some(re)
    })
}

fn text(value: &Value) -> Option<&str> {
    value.as_string().ok().map(|s| s.as_ref())
}

/// A `_n` built-in's count as regorus reads it: negative or beyond 64 bits
/// is "all"; `None` when it is not an integer number.
fn count(value: &Value) -> Option<usize> {
    let n = value.as_number().ok()?;
    if !n.is_integer() {
        return None;
    }
    Some(match n.as_i64() {
        Some(n) if n < 0 => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => usize::MAX,
    })
}

/// Regorus' check of its memory budget, as its built-ins run it per
/// element they add.
fn within_budget() -> Result<()> {
    regorus::utils::limits::check_memory_limit_if_needed().map_err(anyhow::Error::new)
}

/// At most `n` of `items` as an array of strings; refused (the caps of
/// `guard`) when that would be more than [`MAX_GENERATED_ELEMENTS`]
/// elements, counted without building them.
fn strings<'a>(name: &str, items: impl Iterator<Item = &'a str>, n: usize) -> Result<Value> {
    let cap = MAX_GENERATED_ELEMENTS as usize;
    let mut items = items.take(n);
    let mut built = Vec::new();
    for s in items.by_ref().take(cap) {
        within_budget()?;
        built.push(Value::String(s.into()));
    }
    let more = items.count();
    if more > 0 {
        return Err(too_many(name, (cap + more) as f64));
    }
    Ok(Value::from(built))
}

fn is_match(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "regex.match";
    if let [pattern, value] = args
        && let (Some(pattern), Some(value)) = (text(pattern), text(value))
        && let Some(re) = compiled(pattern)
    {
        return Ok(Value::Bool(re.is_match(value)));
    }
    original(NAME, span, params, args, strict)
}

fn find_n(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "regex.find_n";
    if let [pattern, value, n] = args
        && let (Some(pattern), Some(value), Some(n)) = (text(pattern), text(value), count(n))
        && let Some(re) = compiled(pattern)
    {
        return strings(NAME, re.find_iter(value).map(|m| m.as_str()), n);
    }
    original(NAME, span, params, args, strict)
}

fn submatches_n(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "regex.find_all_string_submatch_n";
    if let [pattern, value, n] = args
        && let (Some(pattern), Some(value), Some(n)) = (text(pattern), text(value), count(n))
        && let Some(re) = compiled(pattern)
    {
        let cap = MAX_GENERATED_ELEMENTS as usize;
        let mut all = re.captures_iter(value).take(n);
        let mut matches = Vec::new();
        for captures in all.by_ref().take(cap) {
            let groups = captures.iter().map(|g| g.map_or("", |g| g.as_str()));
            matches.push(strings(NAME, groups, usize::MAX)?);
            within_budget()?;
        }
        let more = all.count();
        if more > 0 {
            return Err(too_many(NAME, (cap + more) as f64));
        }
        return Ok(Value::from(matches));
    }
    original(NAME, span, params, args, strict)
}

fn replace_all(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "regex.replace";
    if let [value, pattern, replacement] = args
        && let (Some(value), Some(pattern), Some(replacement)) =
            (text(value), text(pattern), text(replacement))
        && let Some(re) = compiled(pattern)
    {
        return Ok(Value::String(re.replace_all(value, replacement).into()));
    }
    original(NAME, span, params, args, strict)
}

fn split(span: &Span, params: &[Ref<Expr>], args: &[Value], strict: bool) -> Result<Value> {
    const NAME: &str = "regex.split";
    if let [pattern, value] = args
        && let (Some(pattern), Some(value)) = (text(pattern), text(value))
        && let Some(re) = compiled(pattern)
    {
        return strings(NAME, re.split(value), usize::MAX);
    }
    original(NAME, span, params, args, strict)
}

#[cfg(test)]
mod tests;
