//! Regorus' own built-ins, for the wrappers of `guard` and
//! `warm_patterns` to call after their own work.

use anyhow::{Result, anyhow};
use regorus::Value;
use regorus::unstable::{BUILTINS, Expr, Ref, Span};

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
