//! The soak in miniature, in the default suite: `hookwire-soak run
//! --smoke` (real replica processes killed and restarted every 500 ms)
//! must lose no record, skip no sequence number and leave no failure
//! unrecorded, and its line must have the documented shape.

use std::process::Command;

#[test]
fn a_smoke_soak_loses_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire-soak"))
        .args(["run", "--smoke"])
        .output()
        .expect("run hookwire-soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("soak: "))
        .unwrap_or_else(|| panic!("no soak line in {stdout}"));
    for expected in [
        "emissions=20000 ",
        "sessions=200 ",
        "replicas=3 ",
        " lost_records=0 ",
        " sequence_gaps=0 ",
        " unrecorded_failures=0 ",
    ] {
        assert!(line.contains(expected), "{expected:?} not in {line}");
    }
    let kills: u64 = field(line, "kills").parse().unwrap();
    assert!(kills >= 1, "{line}");
    let availability: f64 = field(line, "availability").parse().unwrap();
    assert!(availability > 0.9, "{line}");
}

#[test]
fn help_names_the_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire-soak"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("run") && text.contains("replica"), "{text}");
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}
