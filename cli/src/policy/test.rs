//! `hookwire policy test`: runs the Rego unit tests and the Cedar test
//! cases, one line each, and with `--coverage` the lines of each Rego
//! module they evaluated.

use std::collections::BTreeSet;
use std::path::Path;

use hookwire_policy::{Coverage, PolicyOptions, PolicySet, TestStatus};

use crate::error::CliError;

/// Runs the `test_*` rules and `*.cedartest.json` cases of `dir` and fails
/// when one does not pass; with
/// `coverage` (or a `coverage_json` file) also reports the Rego lines
/// evaluated.
pub(super) fn test(
    dir: &Path,
    coverage: bool,
    coverage_json: Option<&Path>,
    options: PolicyOptions,
) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let (outcomes, covered) = if coverage || coverage_json.is_some() {
        let (outcomes, covered) = set.run_tests_with_coverage()?;
        (outcomes, Some(covered))
    } else {
        (set.run_tests(), None)
    };
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
        outln!(
            "{word:<5} {}.{} ({}, {:.1?}){detail}",
            outcome.test.package,
            outcome.test.name,
            outcome.test.file,
            outcome.duration
        );
    }
    outln!("\n{} passed, {failed} failed", outcomes.len() - failed);
    if let Some(covered) = &covered {
        if coverage {
            print_coverage(covered);
        }
        if let Some(path) = coverage_json {
            let text = serde_json::to_string_pretty(covered).unwrap_or_default();
            std::fs::write(path, text + "\n").map_err(|e| {
                CliError::PolicyTests(format!("cannot write {}: {e}", path.display()))
            })?;
        }
    }
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

/// One line per file: its percentage, covered/evaluable lines, and the
/// uncovered lines as ranges.
fn print_coverage(covered: &Coverage) {
    outln!("\ncoverage: {:.1}% of evaluable lines", covered.percent());
    for file in &covered.files {
        let evaluable = file.covered.len() + file.uncovered.len();
        let mut line = format!(
            "{:>6.1}%  {} ({}/{evaluable} lines)",
            file.percent(),
            file.path,
            file.covered.len()
        );
        if !file.uncovered.is_empty() {
            line.push_str(&format!("  uncovered: {}", ranges(&file.uncovered)));
        }
        outln!("{line}");
    }
}

/// `3-5, 9` for {3, 4, 5, 9}.
fn ranges(lines: &BTreeSet<u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    for &n in lines {
        run = match run {
            Some((start, end)) if n == end + 1 => Some((start, n)),
            Some(done) => {
                out.push(range(done));
                Some((n, n))
            }
            None => Some((n, n)),
        };
    }
    out.extend(run.map(range));
    out.join(", ")
}

fn range((start, end): (u32, u32)) -> String {
    if start == end {
        start.to_string()
    } else {
        format!("{start}-{end}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncovered_lines_print_as_ranges() {
        let lines: BTreeSet<u32> = [3, 4, 5, 9, 11, 12].into_iter().collect();
        assert_eq!(ranges(&lines), "3-5, 9, 11-12");
        assert_eq!(ranges(&BTreeSet::new()), "");
    }
}
