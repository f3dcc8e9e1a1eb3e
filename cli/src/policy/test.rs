//! `hookwire policy test`: runs the Rego unit tests and the Cedar test
//! cases, one line each.

use std::path::Path;

use hookwire_policy::{PolicyOptions, PolicySet, TestStatus};

use crate::error::CliError;

/// Runs the `test_*` rules and `*.cedartest.json` cases of `dir` and fails
/// when one does not pass.
pub(super) fn test(dir: &Path, options: PolicyOptions) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let outcomes = set.run_tests();
    let mut failed = 0;
    for outcome in &outcomes {
        let (word, detail) = match &outcome.status {
            TestStatus::Passed => ("PASS", String::new()),
            TestStatus::Failed => ("FAIL", String::new()),
            TestStatus::Mismatch(why) => ("FAIL", format!("\n    {why}")),
            TestStatus::Error(e) => ("ERROR", format!("\n    {}", e.replace('\n', "\n    "))),
        };
        if outcome.status != TestStatus::Passed {
            failed += 1;
        }
        println!(
            "{word:<5} {}.{} ({}, {:.1?}){detail}",
            outcome.test.package, outcome.test.name, outcome.test.file, outcome.duration
        );
    }
    println!("\n{} passed, {failed} failed", outcomes.len() - failed);
    if outcomes.is_empty() {
        return Err(CliError::PolicyTests(
            "no test_ rules or Cedar test cases found".into(),
        ));
    }
    if failed > 0 {
        return Err(CliError::PolicyTests(format!(
            "{failed} of {} tests failed",
            outcomes.len()
        )));
    }
    Ok(())
}
