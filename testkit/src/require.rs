//! What a test needs from the machine (a tool on the PATH, root, a kernel
//! feature) and what happens without it: under CI (`CI=true`, as `.ci/run`
//! sets it) the test fails, so a machine missing a tool can never pass the
//! suite; elsewhere the test is skipped, loudly, on the terminal (past
//! the test harness's output capture), so a local run says what it did
//! not test.

use std::io::Write;

/// Whether the tests run under CI (`CI=true`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether `tool` is an executable file in a directory of the PATH.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// Whether the test may go on: `true` when `available`. Otherwise, under
/// CI it panics naming `what` is missing and `why` the test needs it;
/// elsewhere it prints a loud `SKIP` line and returns `false` (the test
/// then returns).
pub fn require(available: bool, what: &str, why: &str) -> bool {
    if available {
        return true;
    }
    assert!(
        !under_ci(),
        "{what} is missing and CI=true: this test cannot be skipped under CI ({why})"
    );
    let line = format!("\n*** SKIP: {what} is missing: {why} (under CI=true this fails) ***\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// [`require`] for the tool `name` on the PATH.
pub fn require_tool(name: &str, why: &str) -> bool {
    require(on_path(name), &format!("`{name}` on the PATH"), why)
}
