//! What a policy set is evaluated under and what it reports about itself:
//! the evaluation options, the packages that decide, and the Rego unit
//! tests with their outcomes. Plain values the set, the service and the
//! `hookwire policy` command share.

use std::time::Duration;

use hookwire::InterceptionPoint;

/// How a policy set is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyOptions {
    /// Wall-clock bound of one evaluation (one decision, or one test rule).
    /// A policy running longer is cut off with [`Error::Bounded`](crate::Error::Bounded).
    pub eval_limit: Duration,
    /// Decide with each point's rule compiled to a regorus VM program
    /// (the default: several times cheaper per decision); `false` runs
    /// every decision on the tree-walking interpreter, as the Rego tests do.
    pub compiled: bool,
}

impl PolicyOptions {
    /// The default bound: 100 ms, well under a host's usual per-interceptor
    /// timeout, so that a runaway policy is reported as an error by the
    /// service rather than as a timeout by the host.
    pub const DEFAULT_EVAL_LIMIT: Duration = Duration::from_millis(100);
}

impl Default for PolicyOptions {
    fn default() -> Self {
        Self {
            eval_limit: Self::DEFAULT_EVAL_LIMIT,
            compiled: true,
        }
    }
}

/// A package that decides: its name and the points it decides at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionPackage {
    /// Dotted name, e.g. `hookwire.destructive_commands`.
    pub name: String,
    /// Where it decides, from its `points` rule.
    pub points: Vec<InterceptionPoint>,
    /// The contract rules it declares (`deny`, `transform`, ...).
    pub rules: Vec<&'static str>,
}

/// A test found in the set: a Rego rule named `test_*`, or a case of a
/// `*.cedartest.json` file (package and file: that file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRule {
    /// Dotted package name.
    pub package: String,
    /// The rule's name.
    pub name: String,
    /// The module that declares it, relative to the policy directory.
    pub file: String,
    pub(crate) rule_path: String,
}

/// How one test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestStatus {
    /// Defined and not `false`.
    Passed,
    /// Undefined or `false`.
    Failed,
    /// The evaluation failed (runtime error or bound).
    Error(String),
    /// A Cedar test case's verdict differs from what it expects: expected
    /// and got.
    Mismatch(String),
}

/// One test and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// The test.
    pub test: TestRule,
    /// What happened.
    pub status: TestStatus,
    /// How long it took.
    pub duration: Duration,
}
