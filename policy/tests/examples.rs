//! The library of ready policies in `examples/policies/`: it loads, every
//! Rego unit test in it passes, and it decides the demo's emissions the
//! way the built-in demo services do.

use std::path::PathBuf;

use hookwire::AgentContext;
use hookwire_policy::{PolicyOptions, PolicySet, TestStatus};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/policies")
}

#[test]
fn every_example_policy_test_passes() {
    // The tests' outcomes, not the bound: generous for a loaded debug build.
    let generous = PolicyOptions {
        eval_limit: std::time::Duration::from_secs(10),
        ..PolicyOptions::default()
    };
    let set = PolicySet::load(&examples_dir(), generous).expect("examples load");
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
        "agent_files_network",
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

#[test]
fn the_library_runs_compiled_and_decides_as_the_interpreter_does() {
    // What is compared is the verdict, not the bound: a loaded debug
    // build may take longer than the default 100 ms.
    let generous = PolicyOptions {
        eval_limit: std::time::Duration::from_secs(10),
        ..PolicyOptions::default()
    };
    let compiled = PolicySet::load(&examples_dir(), generous).expect("loads");
    let interpreted = PolicySet::load(
        &examples_dir(),
        PolicyOptions {
            compiled: false,
            ..generous
        },
    )
    .expect("loads");
    assert_eq!(compiled.compiled_points(), compiled.points());
    assert!(interpreted.compiled_points().is_empty());
    let contexts = std::fs::read_dir(examples_dir().join("contexts")).expect("contexts");
    let mut seen = 0;
    for entry in contexts {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
        // `hookwire policy eval --point` supplies a missing point; these
        // files name it first in their file name (`input_pii.json`).
        if value.get("interception_point").is_none() {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let point = stem.split('_').next().unwrap_or(stem);
            value["interception_point"] = point.into();
        }
        let ctx = AgentContext::from_json(value).expect("a context");
        let a = compiled.decide(&ctx).expect("decides");
        let b = interpreted.decide(&ctx).expect("decides");
        assert_eq!(a, b, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 3, "{seen} contexts");
}
