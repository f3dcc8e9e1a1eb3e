//! What keeps one evaluation bounded, beyond regorus' own wall-clock timer
//! (which is only consulted between evaluation steps):
//!
//! - `guard`: caps on what one built-in call may build, so that a single
//!   call can neither run for seconds nor allocate gigabytes before the
//!   timer is looked at;
//! - `warm_patterns`: the `regex.*` built-ins keeping their compiled
//!   patterns (and the match caches those build) across calls;
//! - `pool`: the evaluation workers, so that the caller's answer arrives at
//!   the bound even while an evaluation is still inside a built-in, with a
//!   fixed number of workers and a bounded queue;
//! - [`compile_point`]: each point's VM program, with the guarded
//!   built-ins, and the load-time refusal of a module calling a built-in
//!   regorus does not have.

use std::sync::Arc;
use std::time::{Duration, Instant};

use regorus::Engine;
use regorus::languages::rego::compiler::{Compiler, CompilerError};
use regorus::rvm::program::Program;

use crate::error::Error;

mod builtin;
mod guard;
mod pool;
mod warm_patterns;

pub(crate) use builtin::take_refusal;
pub use builtin::{MAX_ASSEMBLED_BYTES, MAX_GENERATED_BYTES, MAX_GENERATED_ELEMENTS};
pub(crate) use guard::guard_engine;
use guard::guard_program;
pub(crate) use pool::Pool;
pub use pool::{BoundStatus, MAX_WORKERS, QUEUE_CAPACITY};

/// Compiles the decision rule `rule` of a prepared `engine` to a VM
/// program with the guarded built-ins (`Ok(None)` when the VM compiler
/// does not support a construct it uses: the interpreter evaluates it).
/// A call to a function that no module defines and regorus does not have
/// is refused here, at load, so that it can never be a decision's error
/// (or, on a branch not taken, go unnoticed until one day it is taken).
pub(crate) fn compile_point(engine: &Engine, rule: &str) -> Result<Option<Arc<Program>>, Error> {
    let policy = match engine.clone().compile_with_entrypoint(&rule.into()) {
        Ok(policy) => policy,
        Err(e) => {
            tracing::info!(rule, error = %format!("{e:#}"), "decision rule evaluated by the interpreter");
            return Ok(None);
        }
    };
    match Compiler::compile_from_policy(&policy, &[rule]) {
        Ok(mut program) => {
            let Some(unique) = Arc::get_mut(&mut program) else {
                return Ok(None);
            };
            guard_program(unique);
            Ok(Some(program))
        }
        Err(e) => match &e.error {
            CompilerError::UnknownFunction { name } => Err(Error::Compile(format!(
                "{}calls `{name}`, which is neither defined by a module nor a built-in of hookwire's Rego engine (regorus {}); see \"Limits and divergences from OPA\" in docs/policies.md",
                e.span
                    .as_ref()
                    .map(|s| format!("{}:{}: ", s.source.file(), s.line))
                    .unwrap_or_default(),
                REGORUS_VERSION,
            ))),
            _ => {
                tracing::info!(rule, error = %e, "decision rule evaluated by the interpreter");
                Ok(None)
            }
        },
    }
}

/// The regorus release whose built-ins docs/policies.md lists.
pub const REGORUS_VERSION: &str = "0.14.1";

/// [`engine_error`] for an evaluation that started at `started`: one that
/// failed at or past its bound is [`Error::Bounded`] whatever regorus
/// reports (the interpreter hands its timer's error up as text).
pub(crate) fn evaluation_error(
    error: &anyhow::Error,
    limit: Duration,
    started: Instant,
    wrap: fn(String) -> Error,
) -> Error {
    match engine_error(error, limit, wrap) {
        Error::Limit(refusal) => Error::Limit(refusal),
        _ if started.elapsed() >= limit => Error::Bounded { limit },
        other => other,
    }
}

/// A regorus error, classified: a guarded built-in's refusal is
/// [`Error::Limit`], a time-limit error [`Error::Bounded`], anything else
/// `wrap(message)`.
pub(crate) fn engine_error(
    error: &anyhow::Error,
    limit: Duration,
    wrap: fn(String) -> Error,
) -> Error {
    let timed_out = error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<regorus::LimitError>(),
            Some(regorus::LimitError::TimeLimitExceeded { .. })
        )
    });
    if let Some(refusal) = take_refusal() {
        Error::Limit(refusal)
    } else if timed_out {
        Error::Bounded { limit }
    } else {
        wrap(format!("{error:#}"))
    }
}
