//! The command's exit statuses, the same for every subcommand (the table
//! in docs/operating.md): scripts and CI tell a session a policy stopped
//! from one the host failed closed on, and both from a command that could
//! not run.
//!
//! | status | meaning |
//! | --- | --- |
//! | 0 | done; every emission the command ran was decided by its chain |
//! | 1 | the command could not run or found problems (`check`'s findings) |
//! | 2 | the command line was refused (unknown flag, missing value) |
//! | 3 | `emit`: an emission was denied by a verdict of the chain |
//! | 4 | `demo`, `emit`: the host failed closed (a `host_error:*` deny) |

use hookwire::{Decision, HOST_ERROR_PREFIX, InterceptionRecord};

/// Exit status: the command could not run, or `check` found problems.
pub(crate) const FAILURE: u8 = 1;
/// Exit status: an emission was denied by a verdict of the chain.
pub(crate) const DENIED: u8 = 3;
/// Exit status: the host failed closed on an emission.
pub(crate) const FAILED_CLOSED: u8 = 4;

/// Whether `record` is the host failing closed: a deny for one of the
/// reserved `host_error:*` reasons (an unreachable, slow or misbehaving
/// interceptor, no interceptor at a point, a forbidden transform, …).
pub(crate) fn failed_closed(record: &InterceptionRecord) -> bool {
    record.verdict.decision == Decision::Deny
        && record
            .verdict
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with(HOST_ERROR_PREFIX))
}

/// The first record among `records` on which the host failed closed, as
/// "point (reason)".
pub(crate) fn first_failed_closed(records: &[InterceptionRecord]) -> Option<String> {
    records.iter().find(|r| failed_closed(r)).map(|r| {
        format!(
            "{} ({})",
            r.interception_point.as_str(),
            r.verdict.reason.as_deref().unwrap_or("-")
        )
    })
}
