//! docs/declarations.md: its complete example loads with the real loader
//! (`hookwire check`), with the approval resolver it selects registered by
//! `--approval-endpoint`, and is refused without it, as the page says.

use std::process::{Command, Output};

/// The first JSON block after the page's "A complete document" heading.
fn example() -> serde_json::Value {
    let page = include_str!("../../docs/declarations.md");
    let after = page
        .split("## A complete document")
        .nth(1)
        .expect("the example's section");
    let block = after
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a json block");
    serde_json::from_str(block).expect("the example is JSON")
}

fn check(path: &std::path::Path, approval: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookwire"));
    cmd.arg("check")
        .arg(path)
        .args(["--timeout-ms", "200"])
        .env("POLICY_TOKEN", "example-token");
    if let Some(url) = approval {
        cmd.args(["--approval-endpoint", url]);
    }
    cmd.output().expect("run hookwire check")
}

#[test]
fn the_reference_pages_complete_example_loads() {
    let doc = example();
    let path = std::env::temp_dir().join(format!(
        "hookwire-cli-declarations-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, doc.to_string()).unwrap();

    // Nothing listens at the example's endpoints here: the document loads,
    // and the probes are findings.
    let out = check(&path, Some("http://127.0.0.1:9"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("agent-hooks-declaration/1.0 loads (id billing-agent-prod"),
        "{stdout}\n{stderr}"
    );
    assert!(
        // The composition's members in either order: the map keeps the
        // document's order when serde_json's `preserve_order` is on.
        [
            "mode enforce, composition {\"on_approval\":\"stop\",\"profile\":\"sequential/first_deny\"}, identity provider jcs-sha256, approval resolver approval-stream, posture continue",
            "mode enforce, composition {\"profile\":\"sequential/first_deny\",\"on_approval\":\"stop\"}, identity provider jcs-sha256, approval resolver approval-stream, posture continue",
        ]
        .iter()
        .any(|line| stdout.contains(line)),
        "{stdout}"
    );
    assert!(
        stdout.contains("0. policy (hookwire.grpc) timeout 500 ms, at input, pre_tool_call, post_tool_call, output"),
        "{stdout}"
    );
    assert!(!stderr.contains("refused"), "{stderr}");
    assert!(!stdout.contains("example-token"), "{stdout}");

    // Without --approval-endpoint the name is not registered.
    let out = check(&path, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("no approval resolver named \"approval-stream\" is registered"),
        "{stderr}"
    );
    std::fs::remove_file(&path).unwrap();
}
