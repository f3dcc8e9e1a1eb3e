//! What the built-in wrappers of `guard` and `warm_patterns` share:
//! regorus' own built-ins, to call after their own work, the caps on what
//! one call may build, and how a wrapper refuses a call past them.

use std::cell::RefCell;

use anyhow::{Result, anyhow};
use regorus::unstable::{BUILTINS, Expr, Ref, Span};
use regorus::{LimitError, Value};

/// The most elements a generator built-in (`numbers.range`,
/// `numbers.range_step`, `net.cidr_expand`) may build in one call.
pub const MAX_GENERATED_ELEMENTS: u64 = 100_000;

/// The most bytes a string built-in (`replace`, `strings.replace_n`,
/// `sprintf`'s widths) may build in one call.
pub const MAX_GENERATED_BYTES: u64 = 4 * 1024 * 1024;

/// The most bytes a built-in may assemble in one call from values that
/// already exist (`concat`, `json.marshal`, `json.marshal_with_options`,
/// `yaml.marshal`): three times the largest context a host sends, so that
/// a decision may always serialize its whole input, while an array of many
/// references to one long string cannot become a string of terabytes.
pub const MAX_ASSEMBLED_BYTES: u64 = 16 * 1024 * 1024;

/// Calls regorus' own `name` after a passing check.
pub(super) fn original(
    name: &str,
    span: &Span,
    params: &[Ref<Expr>],
    args: &[Value],
    strict: bool,
) -> Result<Value> {
    let (fcn, _) = BUILTINS
        .get(name)
        .ok_or_else(|| anyhow!("the built-in {name} is not available"))?;
    fcn(span, params, args, strict)
}

thread_local! {
    /// Why the last guarded call on this thread was refused: the VM keeps
    /// only the error's kind, so the message travels beside it.
    static REFUSAL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Why a guarded call was refused during this thread's last evaluation
/// (cleared by the reading).
pub(crate) fn take_refusal() -> Option<String> {
    REFUSAL.with(|r| r.borrow_mut().take())
}

/// A refusal: a resource-limit error, which regorus propagates even where
/// it turns other built-in errors into undefined (so `not f(x)` cannot
/// flip to true), carrying `message`.
pub(super) fn refuse(message: String, usage: f64, limit: u64) -> anyhow::Error {
    REFUSAL.with(|r| *r.borrow_mut() = Some(message.clone()));
    let usage = if usage.is_finite() && usage < u64::MAX as f64 {
        usage as u64
    } else {
        u64::MAX
    };
    anyhow::Error::new(LimitError::MemoryLimitExceeded { usage, limit }).context(message)
}

pub(super) fn too_many(name: &str, count: f64) -> anyhow::Error {
    refuse(
        format!(
            "{name} would build {count:.0} elements; hookwire caps one call at {MAX_GENERATED_ELEMENTS} (see \"Limits and divergences from OPA\" in docs/policies.md)"
        ),
        count,
        MAX_GENERATED_ELEMENTS,
    )
}

pub(super) fn too_long(name: &str, bytes: f64) -> anyhow::Error {
    refuse(
        format!(
            "{name} would build a string of {bytes:.0} bytes; hookwire caps one call at {MAX_GENERATED_BYTES} bytes (see \"Limits and divergences from OPA\" in docs/policies.md)"
        ),
        bytes,
        MAX_GENERATED_BYTES,
    )
}

/// A refusal of a call that would assemble more than
/// [`MAX_ASSEMBLED_BYTES`] (counted only until past it).
pub(super) fn too_long_assembled(name: &str) -> anyhow::Error {
    refuse(
        format!(
            "{name} would build a string of more than {MAX_ASSEMBLED_BYTES} bytes; hookwire caps one call at {MAX_ASSEMBLED_BYTES} bytes (see \"Limits and divergences from OPA\" in docs/policies.md)"
        ),
        f64::INFINITY,
        MAX_ASSEMBLED_BYTES,
    )
}
