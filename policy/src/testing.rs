//! The Rego unit test runner (`hookwire policy test`), and which lines of
//! each module the tests evaluated (`--coverage`).
//!
//! Every test rule (`test_*`) runs on its own clone of the prepared engine,
//! without input, bounded like a decision. With coverage, regorus records
//! the lines each test evaluated and the reports are merged: a line is
//! covered when any test evaluated it, and uncovered when regorus counts
//! it as evaluable and no test reached it. The generated module of the
//! decision contract is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use regorus::{Engine, Value as RegoValue};
use serde::Serialize;

use crate::error::Error;
use crate::eval;
use crate::report::{TestOutcome, TestRule, TestStatus};
use crate::set::PolicySet;

/// The merged coverage of one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCoverage {
    /// The module's file, relative to the policy directory.
    pub path: String,
    /// Lines some test evaluated.
    pub covered: BTreeSet<u32>,
    /// Evaluable lines no test evaluated.
    pub uncovered: BTreeSet<u32>,
}

impl FileCoverage {
    /// Covered lines as a share of the evaluable ones, in percent (100
    /// when nothing in the file is evaluable).
    pub fn percent(&self) -> f64 {
        let total = self.covered.len() + self.uncovered.len();
        if total == 0 {
            100.0
        } else {
            self.covered.len() as f64 * 100.0 / total as f64
        }
    }
}

/// The merged coverage of a test run, by file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// One entry per module, by path.
    pub files: Vec<FileCoverage>,
}

impl Coverage {
    /// Covered lines over all files, in percent.
    pub fn percent(&self) -> f64 {
        let covered: usize = self.files.iter().map(|f| f.covered.len()).sum();
        let total: usize = self
            .files
            .iter()
            .map(|f| f.covered.len() + f.uncovered.len())
            .sum();
        if total == 0 {
            100.0
        } else {
            covered as f64 * 100.0 / total as f64
        }
    }
}

impl PolicySet {
    /// Runs every test: each Rego test rule on a fresh engine (no input),
    /// bounded, then each Cedar case through the whole set.
    pub fn run_tests(&self) -> Vec<TestOutcome> {
        self.rego_tests()
            .map(|test| self.run_test(test, &mut self.template().clone()))
            .chain(self.cedar_outcomes())
            .collect()
    }

    /// The Rego test rules (Cedar cases are listed among the tests too,
    /// without a rule path).
    fn rego_tests(&self) -> impl Iterator<Item = &TestRule> {
        self.tests()
            .iter()
            .filter(|test| !test.rule_path.is_empty())
    }

    /// Each Cedar case run through the whole set.
    fn cedar_outcomes(&self) -> impl Iterator<Item = TestOutcome> + '_ {
        self.cedar()
            .cases()
            .iter()
            .map(|case| crate::cedar::run_case(case, |ctx| self.decide(ctx)))
    }

    /// Runs one test rule on `engine`, bounded.
    fn run_test(&self, test: &TestRule, engine: &mut Engine) -> TestOutcome {
        let started = Instant::now();
        let status = match engine.eval_rule(test.rule_path.clone()) {
            Ok(_) if started.elapsed() > self.options().eval_limit => TestStatus::Error(
                Error::Bounded {
                    limit: self.options().eval_limit,
                }
                .to_string(),
            ),
            Ok(RegoValue::Undefined | RegoValue::Bool(false)) => TestStatus::Failed,
            Ok(_) => TestStatus::Passed,
            Err(e) => TestStatus::Error(
                eval::evaluation_error(&e, self.options().eval_limit, started, Error::Evaluation)
                    .to_string(),
            ),
        };
        TestOutcome {
            test: test.clone(),
            status,
            duration: started.elapsed(),
        }
    }

    /// Runs every test as [`PolicySet::run_tests`] does, with the Rego
    /// modules' coverage gathered.
    pub fn run_tests_with_coverage(&self) -> Result<(Vec<TestOutcome>, Coverage), Error> {
        let mut covered: BTreeMap<String, (BTreeSet<u32>, BTreeSet<u32>)> = BTreeMap::new();
        let mut outcomes = Vec::with_capacity(self.tests().len());
        for test in self.rego_tests() {
            let mut engine = self.template().clone();
            engine.set_enable_coverage(true);
            outcomes.push(self.run_test(test, &mut engine));
            let report = engine
                .get_coverage_report()
                .map_err(|e| Error::Evaluation(format!("coverage report: {e:#}")))?;
            for file in report.files {
                if file.path.starts_with('<') {
                    continue;
                }
                let entry = covered.entry(file.path).or_default();
                entry.0.extend(file.covered);
                entry.1.extend(file.not_covered);
            }
        }
        let files = covered
            .into_iter()
            .map(|(path, (covered, seen))| FileCoverage {
                path,
                uncovered: seen.difference(&covered).copied().collect(),
                covered,
            })
            .collect();
        outcomes.extend(self.cedar_outcomes());
        Ok((outcomes, Coverage { files }))
    }
}
